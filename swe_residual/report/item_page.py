"""One item's page beside ``report.html`` (``items/...html``): everything a person opens an
item for, on one page that links back to the report's matrix.

What the record says (outcome, termination, budget, errors, notes), the tests that did not pass
by name (and, for a Residual State, how each stood at the start), what the agent itself said
and did (its final message and its trajectory's steps, with a link to the trajectory JSON),
the final diff (and the state's inherited one) and what the verifier printed (its
``test-stdout.txt``, kept by the runner beside the record). Long texts are shown in part, with
a link to the whole file; every link is relative, so the report directory can be copied with
the run directories beside it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from swe_residual.environments.disk_usage import NOT_ENFORCED, format_size
from swe_residual.trial.record_model import DiskLimit, RunRecord
from swe_residual.trial.records import item_id
from swe_residual.dataset.values import Track
from swe_residual.report.matrix import CELLS, failing_tests
from swe_residual.report.paths import Item, diff_href, href, link, start_label
from swe_residual.report.style import CSS
from swe_residual.report.html_tables import e, heading, pct, wrap

__all__ = ["render_item_page"]

MAX_DIFF_CHARS = 200_000  # shown inline; the diffs/ file holds the whole diff
MAX_LOG_CHARS = 60_000  # the verifier log's tail shown inline; the file holds all of it
MAX_STEP_CHARS = 4_000  # of each step's output; the trajectory JSON holds all of it
MAX_STEPS = 500


def preformatted(text: str, limit: int, *, tail: bool = False, css: str = "wrap") -> str:
    shown = text
    cut = ""
    if len(text) > limit:
        shown = text[-limit:] if tail else text[:limit]
        cut = (f'<p class="note">{"last" if tail else "first"} {limit:,} of {len(text):,} characters shown; '
               "the file holds the rest.</p>")
    return f'{cut}<pre class="{css}">{e(shown)}</pre>'


def _read(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _facts(r: RunRecord) -> str:
    outcome = str(r.outcome)
    symbol, word = CELLS.get(outcome, ("?", outcome))
    wall = r.durations.wall_sec
    rows: list[tuple[str, str]] = [
        ("Outcome", f'<span class="cell o-{e(outcome)}">{symbol} {e(word)}</span> ({e(outcome)})'),
        ("Termination", e(r.termination)),
        ("Reward", e(r.reward if r.reward is not None else "-")),
        ("Agent", f"<code>{e(r.agent)}</code>"),
        ("Task", e(r.task)),
        ("Track", e(r.track)),
        ("Start", e(start_label(r.state, r.handoff))),
    ]
    if r.predecessor:
        rows.append(("Predecessor", e(r.predecessor)))
    rows += [
        ("Steps", e(r.steps if r.steps is not None else "-")),
        ("Wall s", pct(wall, 1) if wall is not None else "-"),
        ("Attempts", "<br>".join(e(f"{a.attempt}: {a.outcome}" + (f" ({a.error})" if a.error else ""))
                                 for a in r.attempts) or "-"),
        ("Run", e(r.run_id)),
    ]
    if r.disk_limit is not None:
        rows.append(("Disk", e(_disk(r.disk_limit))))
    if r.memory_limit is not None:
        killed = ", ".join(r.memory_limit.killed) or "unknown (the kernel's log could not be read)"
        rows.append(("Memory", e(f"limit {r.memory_limit.memory_mb} MiB reached (memory_limit); killed: {killed}")))
    if r.error:
        rows.append(("Error", f'<pre class="wrap">{e(r.error)}</pre>'))
    notes = r.verifier_notes
    if notes:
        rows.append(("Verifier notes", "<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>"))
    body = "".join(f'<tr><th class="l">{name}</th><td class="l">{value}</td></tr>' for name, value in rows)
    return f'<div class="scroll"><table class="facts"><tbody>{body}</tbody></table></div>'


def _disk(account: DiskLimit) -> str:
    """The task's storage_mb and what became of it, in one line."""
    if account.enforcement == NOT_ENFORCED:
        return f"limit {account.storage_mb} MiB, not enforced: {account.how}"
    peak = format_size(account.peak_bytes) if isinstance(account.peak_bytes, int) else "unknown"
    verdict = "passed: the agent was stopped (disk_limit)" if account.exceeded else "kept"
    return f"limit {account.storage_mb} MiB ({account.enforcement}), {verdict}; most written {peak}"


def _tests(r: RunRecord) -> str:
    tests = r.tests
    initial = r.initial_tests if r.state is not None else None
    if not isinstance(tests, Mapping):
        return '<p class="note">No valid verdict, so no test statuses (see the error and the verifier\'s log).</p>'
    failing = failing_tests(tests)
    initial = initial if isinstance(initial, Mapping) else {}
    fixed = [name for name, status in initial.items() if status != "passed" and tests.get(name) == "passed"]
    out = [f"<p><b>{len(failing)} of {len(tests)}</b> tests did not pass"
           + (f"; {len(fixed)} that failed at the start now pass" if fixed else "") + ".</p>"]
    shown = [name for name, _ in failing] + fixed
    if not shown:
        return out[0]
    header = '<tr><th class="l">Test</th><th class="l">At the end</th>' + (
        '<th class="l">At the start</th>' if initial else "") + "</tr>"
    rows = []
    for name in shown:
        end = str(tests.get(name))
        start = f'<td class="l">{e(initial.get(name, "-"))}</td>' if initial else ""
        css = "ok" if end == "passed" else "bad"
        rows.append(f'<tr><td class="l test">{wrap(name)}</td><td class="l {css}">{e(end)}</td>{start}</tr>')
    out.append(f'<div class="scroll"><table class="tests"><thead>{header}</thead><tbody>{"".join(rows)}</tbody>'
               "</table></div>")
    return "".join(out)


def trajectory_steps(trajectory: Path | None) -> str:
    text = _read(trajectory)
    if text is None:
        return ""
    try:
        steps = json.loads(text).get("steps") or []
    except (ValueError, AttributeError):
        return '<p class="note">The trajectory file is not readable JSON.</p>'
    if not steps:
        return '<p class="note">The trajectory records no step.</p>'
    out = [f"<p>{len(steps)} step(s); open one to see what it showed the agent.</p>"]
    for step in steps[:MAX_STEPS]:
        if not isinstance(step, Mapping):
            continue
        what = step.get("command") or step.get("path") or ""
        code = step.get("exit_code")
        summary = f"{step.get('index')}: {step.get('action')} {what}" + (f" (exit {code})" if code is not None else "")
        output = str(step.get("output") or "")
        out.append(f"<details><summary>{e(summary)}</summary>{preformatted(output, MAX_STEP_CHARS, tail=True)}</details>")
    if len(steps) > MAX_STEPS:
        out.append(f'<p class="note">{len(steps) - MAX_STEPS} more step(s) in the trajectory file.</p>')
    return "".join(out)


def _agent_output(item: Item, page_dir: Path) -> str:
    r = item.record
    trajectory = item.file("trajectory")
    out = []
    message = r.message
    out.append("<h3>Its final message</h3>")
    out.append(preformatted(str(message), MAX_LOG_CHARS) if message else '<p class="note">The agent left no message.</p>')
    out.append("<h3>Its trajectory</h3>")
    if trajectory is not None:
        out.append(f"<p>{link(trajectory, page_dir, 'trajectory JSON')} (every step, the full output of each)</p>")
        out.append(trajectory_steps(trajectory))
    elif r.trajectory:
        out.append(f'<p class="note">The trajectory file {e(r.trajectory)} is not there.</p>')
    else:
        out.append('<p class="note">No trajectory was recorded.</p>')
    return "".join(out) + _agent_files(item, page_dir)


def _agent_files(item: Item, page_dir: Path) -> str:
    """Links to what a Harbor agent recorded itself: its ATIF trajectory and the files of its
    logs directory (/logs/agent: Terminus-2's pane log and recording)."""
    r = item.record
    out = []
    atif = item.file("atif_trajectory")
    if atif is not None:
        out.append(f"<p>{link(atif, page_dir, 'ATIF trajectory')} (the agent's own, as Harbor writes it)</p>")
    elif r.atif_trajectory:
        out.append(f'<p class="note">The ATIF trajectory {e(r.atif_trajectory)} is not there.</p>')
    logs = item.source / r.agent_logs if r.agent_logs else None
    if logs is not None and logs.is_dir():
        files = sorted(path for path in logs.rglob("*") if path.is_file())
        links = "".join(f"<li>{link(path, page_dir, path.relative_to(logs).as_posix())}</li>" for path in files)
        out.append(f"<h3>Its logs (/logs/agent)</h3><ul>{links}</ul>")
    return "".join(out)


def _diff(item: Item, report_dir: Path, page_dir: Path) -> str:
    r = item.record
    patch = r.final_patch
    if patch is None:
        why = "a machine-track start has no repository to diff" if r.track == Track.MACHINE else "none was captured"
        out = [f'<p class="note">No final diff: {e(why)}.</p>']
    elif not patch:
        out = ['<p class="note">Empty: the final state is the base commit.</p>']
    else:
        out = [f"<p>{link(report_dir / diff_href(r), page_dir, 'final diff')} against the base commit "
               f"({len(str(patch).splitlines())} lines)</p>", preformatted(str(patch), MAX_DIFF_CHARS, css="code")]
    inherited = r.inherited_patch
    if inherited:
        out.append("<details><summary>The Residual State's inherited changes (what the agent started from)"
                   f"</summary>{preformatted(str(inherited), MAX_DIFF_CHARS, css='code')}</details>")
    return "".join(out)


def _verifier_log(item: Item, page_dir: Path) -> str:
    path = item.file("verifier_log")
    text = _read(path)
    if path is None or text is None:
        why = "it is not there" if item.record.verifier_log else "no verification ran, or the run predates it"
        return f'<p class="note">No verifier output kept ({e(why)}).</p>'
    return (f"<p>{link(path, page_dir, 'test-stdout.txt')}: what test.sh printed (stdout and stderr) for the "
            f"verdict</p>{preformatted(text, MAX_LOG_CHARS, tail=True)}")


def _artifacts(item: Item, page_dir: Path) -> str:
    kept = [(a, item.source / a) for a in item.record.artifacts]
    if not kept:
        return ""
    links = "".join(f"<li>{link(path, page_dir, a) if path.exists() else e(a) + ' (not there)'}</li>"
                    for a, path in kept)
    return heading(2, "artifacts", "Collected artifacts") + f"<ul>{links}</ul>"


SECTIONS = (("tests", "Tests that did not pass"), ("agent-output", "The agent's own output"),
            ("diff", "Final diff"), ("verifier-log", "The verifier's log"))


def render_item_page(item: Item, page: Path, report_dir: Path) -> str:
    """The page of ``item``, to be written at ``page`` (inside ``report_dir``)."""
    r = item.record
    page_dir = page.parent
    name = item_id(str(r.agent), str(r.task), r.state, r.handoff, r.rollout or None)
    back = os.path.relpath(report_dir / "report.html", page_dir)
    toc = " &middot; ".join(f'<a href="#{anchor}">{e(title)}</a>' for anchor, title in SECTIONS)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(name)}</title>",
        f"<style>{CSS}</style></head><body>",
        f'<p class="note"><a href="{href(Path(back).as_posix())}#matrix">&larr; back to the report</a></p>',
        f'<h1>{e(r.task)}: {e(start_label(r.state, r.handoff))}</h1>',
        f'<p class="note">agent <code>{e(r.agent)}</code></p>',
        f'<nav class="toc" id="contents">{toc}</nav>',
        _facts(r),
        heading(2, "tests", SECTIONS[0][1]),
        _tests(r),
        heading(2, "agent-output", SECTIONS[1][1]),
        _agent_output(item, page_dir),
        heading(2, "diff", SECTIONS[2][1]),
        _diff(item, report_dir, page_dir),
        heading(2, "verifier-log", SECTIONS[3][1]),
        _verifier_log(item, page_dir),
        _artifacts(item, page_dir),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"

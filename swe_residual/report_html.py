"""``report.html``: the paper's tables and figures in one self-contained page.

One HTML file that needs no network to view: inline CSS, no scripts, no fonts fetched, the
charts drawn by :mod:`swe_residual.report_charts` (matplotlib, optional) and inlined.

Every figure and every table cell holding a metric is read from the summary dict (what
``summary.json`` holds, computed once by :func:`swe_residual.summary.build_summary` with
``compare=True``); nothing here computes a metric, so the page and ``summary.json`` cannot
disagree. The run records are read only for the per-item table, where each item links to its
trajectory JSON and its final diff (written as ``diffs/...`` beside the report) with relative
links, so the report directory can be copied or archived as a whole.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from swe_residual.comparison import headline_line, ranking_table
from swe_residual.metrics.headline import Record
from swe_residual.records import agent_slug, read_records, record_key
from swe_residual.report_charts import chart_clean_vs_residual, chart_conditional, missing_dependency
from swe_residual.summary import DURATION_KEYS

__all__ = ["REPORT_NAME", "diff_href", "render_html", "write_report", "write_report_from_results"]

REPORT_NAME = "report.html"

CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 24px auto; max-width: 1200px; padding: 0 16px; color: #1b1f24; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
p.note { color: #57606a; font-size: 0.9rem; margin: 0.3rem 0 0.8rem; }
.headline { font-size: 1.05rem; background: #fff8c5; border: 1px solid #d4a72c; padding: 8px 12px;
            border-radius: 6px; display: inline-block; }
table { border-collapse: collapse; font-size: 0.88rem; margin: 0.4rem 0 0.8rem; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f6f8fa; font-weight: 600; white-space: normal; vertical-align: bottom; }
.scroll { overflow-x: auto; max-width: 100%; }
td.l, th.l { text-align: left; }
td.l:first-child { white-space: normal; overflow-wrap: anywhere; }  /* long agent specs wrap: tables fit */
tbody tr:nth-child(even) { background: #fbfcfd; }
.ok { color: #1a7f37; font-weight: 600; }
.bad { color: #cf222e; font-weight: 600; }
.infra { color: #9a6700; font-weight: 600; }
.up { color: #1a7f37; } .down { color: #cf222e; }
figure { margin: 0.5rem 0 1rem; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #57606a; font-size: 0.88rem; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.charts figure { flex: 1 1 520px; }
.items { max-height: none; }
code { font-size: 0.85rem; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _pct(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _href(path: str) -> str:
    # Quote each path character a browser would misread (space, '#', '?', '%'), then escape.
    return _e(quote(path, safe="/._-~:"))


def _scopes(summary: Mapping[str, Any]) -> list[str]:
    agents: Mapping[str, Any] = summary.get("agents", {})
    tracks = sorted({t for block in agents.values() for t in block.get("tracks", {})})
    return tracks + (["overall"] if len(tracks) > 1 else [])


def _metrics(agent_block: Mapping[str, Any], scope: str) -> Mapping[str, Any] | None:
    if scope == "overall":
        return agent_block.get("overall")
    return agent_block.get("tracks", {}).get(scope)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 1, raw: bool = False) -> str:
    """A table; the first ``left`` columns are left-aligned. Cells are escaped unless ``raw``
    (then the caller has escaped them)."""
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="{"l" if i < left else ""}">{_e(h)}</th>' for i, h in enumerate(header)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = [f'<td class="{"l" if i < left else ""}">{c if raw else _e(c)}</td>' for i, c in enumerate(row)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# --------------------------------------------------------------------------- sections


def _headline_table(summary: Mapping[str, Any]) -> str:
    """Table 3: per agent, Residual / Ref. Clean / Gap (and CondFail) for every scope."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    scopes = _scopes(summary)
    top = '<tr><th class="l" rowspan="2">Agent</th>' + "".join(
        f'<th colspan="4">{_e(s)}</th>' for s in scopes
    ) + "</tr>"
    sub = "<tr>" + "".join("<th>Residual</th><th>Ref. Clean</th><th>Gap</th><th>CondFail</th>" for _ in scopes)
    sub += "</tr>"
    rows = []
    for agent, block in agents.items():
        cells = [f'<td class="l">{_e(agent)}</td>']
        for scope in scopes:
            m = _metrics(block, scope) or {}
            title = f"{m.get('n_tasks', 0)} tasks, {m.get('n_states', 0)} states"
            cells += [
                f'<td title="{_e(title)}">{_pct(m.get("residual"))}</td>',
                f"<td>{_pct(m.get('clean'))}</td>",
                f"<td><b>{_pct(m.get('gap'))}</b></td>",
                f"<td>{_pct(m.get('cond_fail'))}</td>",
            ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><thead>{top}{sub}</thead><tbody>{"".join(rows)}</tbody></table></div>'


def _counts_table(summary: Mapping[str, Any]) -> str:
    rows = []
    for agent, block in summary.get("agents", {}).items():
        for scope in _scopes(summary):
            m = _metrics(block, scope) or {}
            rows.append([agent, scope, str(m.get("n_tasks", 0)), str(m.get("n_states", 0))])
    return _table(["Agent", "Track", "Tasks", "States"], rows, left=2)


def _acceptance_table(summary: Mapping[str, Any]) -> str:
    """Table 4, one row per track: never an ``overall`` row, which would pool the machine
    track into the repo track's figures (``overall.acceptance_bias`` is the repo track's)."""
    rows = []
    for agent, block in summary.get("agents", {}).items():
        for scope, m in (block.get("tracks") or {}).items():
            ab = m.get("acceptance_bias") or {}
            split = ab.get("split_by_kept") or {}
            rows.append([
                agent, scope, _pct(m.get("gap")), _pct(ab.get("same_failing")),
                _pct(ab.get("initially_failing_clean")), _pct(ab.get("initially_failing_residual")),
                _pct(ab.get("kept")), _pct(ab.get("left_out_clean")), _pct(ab.get("left_out_residual")),
                _pct(ab.get("left_out_opened")), _pct(ab.get("steps_ratio"), 2), _pct(ab.get("inspected")),
                f"{_pct(split.get('success_above'))} / {_pct(split.get('success_below'))}",
            ])  # fmt: skip
    header = [
        "Agent", "Track", "Gap", "Same failing", "Init. failing Clean", "Init. failing Residual", "Kept",
        "Left-out Clean", "Left-out Residual", "Opened", "Steps", "Inspected", "Success above / below median Kept",
    ]  # fmt: skip
    return _table(header, rows, left=2)


def _predecessor_table(summary: Mapping[str, Any]) -> str:
    rows = []
    for agent, block in summary.get("agents", {}).items():
        for scope in _scopes(summary):
            m = _metrics(block, scope) or {}
            for pred, g in (m.get("by_predecessor") or {}).items():
                rows.append([agent, scope, pred, _pct(g.get("residual")), _pct(g.get("clean")),
                             _pct(g.get("gap")), str(g.get("n_tasks", 0))])
    if not rows:
        return '<p class="note">No residual states.</p>'
    header = ["Agent", "Track", "Predecessor", "Residual", "Ref. Clean", "Gap", "Tasks"]
    return _table(header, rows, left=3)


def _comparison_section(block: Mapping[str, Any], scopes: Sequence[str]) -> str:
    out = []
    for scope in scopes:
        rows = []
        for r in ranking_table(block, scope):
            moved = r["moved"]
            arrow = "" if moved is None or moved == 0 else (
                f'<span class="up">&#9650; {moved}</span>' if moved > 0 else f'<span class="down">&#9660; {-moved}</span>'
            )
            rows.append([
                _e(r["agent"]),
                "-" if r["clean_rank"] is None else f"{r['clean_rank']} ({_pct(r['clean'])})",
                "-" if r["residual_rank"] is None else f"{r['residual_rank']} ({_pct(r['residual'])})",
                arrow,
            ])  # fmt: skip
        out.append(f"<h3>{_e(scope)}</h3>")
        out.append(_table(["Agent", "Clean rank (%)", "Residual rank (%)", "Moved"], rows, raw=True))
        found = block.get("reversals", {}).get(scope) or []
        if found:
            items = "".join(
                f"<li><b>{_e(r['clean_leader'])}</b> over <b>{_e(r['residual_leader'])}</b> on Clean "
                f"(+{r['clean_margin']:.1f}), <b>{_e(r['residual_leader'])}</b> over "
                f"<b>{_e(r['clean_leader'])}</b> on Residual (+{r['residual_margin']:.1f})</li>"
                for r in found
            )
            out.append(f"<p>Reversed pairs:</p><ul>{items}</ul>")
        else:
            out.append('<p class="note">No pair of agents reverses its order.</p>')
    states = block.get("states") or {}
    unsolved = states.get("unsolved") or []
    out.append(f"<h3>States no agent solved ({len(unsolved)} of {states.get('n_states', 0)})</h3>")
    if unsolved:
        rows = [[u["track"], u["task"], u["state"], str(u["agents"])] for u in unsolved]
        out.append(_table(["Track", "Task", "State", "Agents that ran it"], rows, left=3))
    return "".join(out)


def _infra_section(summary: Mapping[str, Any]) -> str:
    infra = summary.get("infra", {})
    out = [
        "<ul>",
        f"<li>items: {_e(infra.get('items', 0))}</li>",
        f"<li>retried (more than one attempt): {_e(infra.get('retried', 0))}</li>",
        f"<li>unresolved infrastructure errors (excluded from every metric, not failures): "
        f"{_e(infra.get('unresolved', 0))}</li>",
        "</ul>",
    ]
    excluded = infra.get("excluded") or []
    if excluded:
        rows = [[e.get("agent"), e.get("task"), e.get("state") or "(clean)", e.get("error") or ""] for e in excluded]
        out.append(_table(["Agent", "Task", "State", "Error"], rows, left=4))
    by_agent: Mapping[str, Any] = infra.get("by_agent") or {}
    if by_agent:
        rows = [
            [agent, str(d.get("items", 0)), str(d.get("attempts", 0)), *(_pct(d.get(k), 2) for k in DURATION_KEYS)]
            for agent, d in by_agent.items()
        ]
        out.append('<p class="note">Median seconds per item (setup = starting environment and state).</p>')
        out.append(_table(["Agent", "Items", "Attempts", "Setup", "Agent", "Verify", "Wall"], rows))
    return "".join(out)


# --------------------------------------------------------------------------- per-item table


def _slug(text: Any) -> str:
    return agent_slug(str(text))


def diff_href(record: Record) -> str:
    """Where an item's final diff is written, relative to the report:
    ``diffs/<agent>/<task>/<state or clean>.diff`` (names made file-safe)."""
    state = record.get("state")
    leaf = "clean" if state is None else f"residual-{_slug(state)}"
    return f"diffs/{_slug(record.get('agent'))}/{_slug(record.get('task'))}/{leaf}.diff"


def _latest(records: Sequence[Record], record_dirs: Sequence[Path] | None) -> list[tuple[Record, Path | None]]:
    """One (record, its results directory) per item key, the last one winning (as the summary)."""
    latest: dict[Any, tuple[Record, Path | None]] = {}
    for index, r in enumerate(records):
        latest[record_key(r)] = (r, record_dirs[index] if record_dirs is not None else None)
    return sorted(
        latest.values(),
        key=lambda p: (str(p[0].get("agent")), str(p[0].get("task")), p[0].get("state") is not None,
                       str(p[0].get("state"))),
    )


def _trajectory_cell(record: Record, source_dir: Path | None, run_dir: Path) -> str:
    path = record.get("trajectory")
    if not path:
        return "-"
    target = Path(path) if Path(path).is_absolute() else (source_dir or run_dir) / path
    if not target.is_file():
        return f'<span title="{_e(target)}">missing</span>'
    relative = os.path.relpath(target, run_dir)
    return f'<a href="{_href(Path(relative).as_posix())}">json</a>'


def _items_table(records: Sequence[Record], run_dir: Path, record_dirs: Sequence[Path] | None) -> str:
    rows = []
    for r, source_dir in _latest(records, record_dirs):
        outcome = str(r.get("outcome"))
        css = {"success": "ok", "failure": "bad"}.get(outcome, "infra")
        tests = r.get("tests")
        passed = "-" if not isinstance(tests, dict) else f"{sum(v == 'passed' for v in tests.values())}/{len(tests)}"
        start = "clean" if r.get("start") == "clean" else f"residual: {r.get('state')}"
        patch = r.get("final_patch")
        if patch is None:
            diff = "-"
        elif not patch:
            diff = "empty"
        else:
            diff = f'<a href="{_href(diff_href(r))}">diff</a> ({len(patch.splitlines())} lines)'
        wall = (r.get("durations") or {}).get("wall_sec")
        rows.append([
            _e(r.get("agent")), _e(r.get("task")), _e(r.get("track")), _e(start), _e(r.get("predecessor") or ""),
            f'<span class="{css}">{_e(outcome)}</span>', _e(r.get("termination")), passed,
            _e(r.get("steps") if r.get("steps") is not None else "-"),
            _pct(wall, 1) if isinstance(wall, (int, float)) else "-",
            _trajectory_cell(r, source_dir, run_dir), diff,
        ])  # fmt: skip
    header = ["Agent", "Task", "Track", "Start", "Predecessor", "Outcome", "Termination", "Tests passed",
              "Steps", "Wall s", "Trajectory", "Final diff"]
    return _table(header, rows, left=7, raw=True)


# --------------------------------------------------------------------------- the page


def render_html(
    summary: Mapping[str, Any],
    records: Sequence[Record],
    run_dir: Path,
    *,
    record_dirs: Sequence[Path] | None = None,
) -> str:
    """The whole page. ``run_dir`` is where the page will live (links are relative to it);
    ``record_dirs[i]``, when given, is the directory of the results file ``records[i]`` came
    from (its trajectory path is relative to that), else ``run_dir``."""
    run_dir = Path(run_dir)
    block: Mapping[str, Any] | None = summary.get("comparison")
    scopes = _scopes(summary)
    run_ids = sorted({str(r.get("run_id")) for r in records if r.get("run_id")})
    agents = list(summary.get("agents", {}))
    no_comparison = '<p class="note">The summary holds no comparison (build it with compare=True).</p>'

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>SWE-Residual report {_e(', '.join(run_ids))}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>SWE-Residual report</h1>",
        f'<p class="note">run(s): {_e(", ".join(run_ids) or "-")} &middot; {len(agents)} agent(s) &middot; '
        f"{_e(summary.get('infra', {}).get('items', 0))} items. Success in %, averaged over a task's "
        "states, then equally across tasks; Gap = Ref. Clean - Residual in points.</p>",
        f'<p class="headline">{_e(headline_line(block, single_scope=len(scopes) == 1))}</p>' if block else "",
        "<h2>Table 3: Residual Start vs. matched Clean Start</h2>",
        '<p class="note">Ref. Clean is the Clean Start success on the same tasks; CondFail is the share of '
        "Residual Starts failed on the tasks the agent solves from Clean Start.</p>",
        _headline_table(summary),
        _counts_table(summary),
        '<div class="charts">',
    ]
    missing = missing_dependency()
    if missing:
        parts.append(f'<p class="note" id="charts-missing">{_e(missing)}</p>')
    else:
        fig1 = chart_clean_vs_residual(summary, scopes)
        fig2 = chart_conditional(summary)
        if fig1:
            parts.append(
                f'<figure id="figure-1">{fig1}<figcaption>Figure 1 (right): Clean (circle) vs. Residual (diamond) '
                "success per agent; the line between them is the Gap.</figcaption></figure>"
            )
        if fig2:
            parts.append(
                f'<figure id="figure-2">{fig2}<figcaption>Figure 2: outcomes of Residual Starts on the tasks each '
                "agent solves from Clean Start (all tracks); the failed share is CondFail.</figcaption></figure>"
            )
        elif agents:
            parts.append('<p class="note">Figure 2: no agent solves any task from Clean Start.</p>')
    parts += [
        "</div>",
        "<h2>Ranking under Clean and Residual starts</h2>",
        '<p class="note">Ties share a rank. A reversed pair is ordered one way on Clean and the other way on '
        "Residual; margins in points.</p>",
        _comparison_section(block, scopes) if block else no_comparison,
        "<h2>Table 4: acceptance bias</h2>",
        '<p class="note">Normally submitted runs (declared done, valid verdict); task-level averages in %. '
        "Same failing and Kept over failed continuations; Steps = median over tasks of Residual/Clean steps.</p>",
        _acceptance_table(summary),
        "<h2>Table 8: by predecessor agent</h2>",
        '<p class="note">Each group: tasks with at least one state from the predecessor, only its states '
        "averaged, Clean Start matched on the same tasks.</p>",
        _predecessor_table(summary),
        "<h2>Infrastructure</h2>",
        _infra_section(summary),
        "<h2>Items</h2>",
        '<p class="note">One row per item (the last record of a key wins, as in the summary). Links open the '
        "normalized trajectory and the final diff against the base commit.</p>",
        '<div class="items">',
        _items_table(records, run_dir, record_dirs),
        "</div></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + f".tmp{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def write_report(
    directory: Path,
    summary: Mapping[str, Any],
    records: Sequence[Record],
    *,
    record_dirs: Sequence[Path] | None = None,
) -> Path:
    """Write ``diffs/...`` and ``report.html`` into ``directory``; return the report's path."""
    directory = Path(directory)
    for r, _ in _latest(records, record_dirs):
        if r.get("final_patch"):
            _write_atomic(directory / diff_href(r), str(r["final_patch"]))
    path = directory / REPORT_NAME
    _write_atomic(path, render_html(summary, records, directory, record_dirs=record_dirs))
    return path


def write_report_from_results(directory: Path, summary: Mapping[str, Any], results: Sequence[Path]) -> Path:
    """``write_report`` for results files or run directories (the ``report`` command): each
    record's trajectory is linked relative to the directory of the results file it came from."""
    records: list[Record] = []
    dirs: list[Path] = []
    for path in results:
        path = Path(path)
        source = path if path.is_dir() else path.parent
        loaded = read_records([path]).records
        records += loaded
        dirs += [source] * len(loaded)
    return write_report(directory, summary, records, record_dirs=dirs)

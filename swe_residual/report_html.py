"""``report.html``: the paper's tables and figures in one self-contained page.

One HTML file that needs no network to view: inline CSS, no scripts, no fonts fetched, the
charts drawn by :mod:`swe_residual.report_charts` (matplotlib, optional) and inlined, the
summary's tables by :mod:`swe_residual.report_tables`, each named by what it shows.

Every figure and every table cell holding a metric is read from the summary dict (what
``summary.json`` holds, computed once by :func:`swe_residual.summary.build_summary` with
``compare=True``); nothing here computes a metric, so the page and ``summary.json`` cannot
disagree. The run records are read only for the per-item table, where each item links to its
trajectory JSON and its final diff (written as ``diffs/...`` beside the report) with relative
links, so the report directory can be copied or archived as a whole.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from swe_residual.comparison import headline_line
from swe_residual.metrics.headline import Record
from swe_residual.oracle_check import oracle_lines
from swe_residual.records import agent_slug, read_records, record_key
from swe_residual.report_handoff import handoff_section
from swe_residual.summary_fidelity import fidelity_html
from swe_residual.report_charts import chart_clean_vs_residual, chart_conditional, missing_dependency
from swe_residual.run_status import status_html
from swe_residual.report_tables import (
    acceptance_table,
    comparison_section,
    counts_table,
    heading,
    headline_table,
    infra_section,
    predecessor_table,
    scopes,
    table,
)
from swe_residual.report_tables import e as _e, pct as _pct

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
h3 { font-size: 1.02rem; margin: 1.2rem 0 0.3rem; }
p.paper-ref { color: #57606a; font-size: 0.8rem; font-style: italic; margin: -0.15rem 0 0.4rem; }
h2 + p.paper-ref { margin-top: -0.1rem; }
figure { margin: 0.8rem 0 1.4rem; overflow-x: auto; }
/* Charts keep their natural size (SVG font sizes scale with the displayed width, so a shrunk
   chart would have unreadable text); they are drawn to fit the page, and a narrow window
   scrolls the figure, never the page. */
figure svg { display: block; max-width: none; }
figcaption { color: #57606a; font-size: 0.88rem; max-width: 900px; }
.items { max-height: none; }
code { font-size: 0.85rem; }
"""


def _href(path: str) -> str:
    # Quote each path character a browser would misread (space, '#', '?', '%'), then escape.
    return _e(quote(path, safe="/._-~:"))


# --------------------------------------------------------------------------- per-item table


def _slug(text: Any) -> str:
    return agent_slug(str(text))


def diff_href(record: Record) -> str:
    """Where an item's final diff is written, relative to the report:
    ``diffs/<agent>/<task>/<state or clean>.diff`` (names made file-safe)."""
    state = record.get("state")
    view = f"@{record['handoff']}" if record.get("handoff") else ""  # only a non-blind item has one
    leaf = "clean" if state is None else f"residual-{_slug(f'{state}{view}')}"
    return f"diffs/{_slug(record.get('agent'))}/{_slug(record.get('task'))}/{leaf}.diff"


def _latest(records: Sequence[Record], record_dirs: Sequence[Path] | None) -> list[tuple[Record, Path | None]]:
    """One (record, its results directory) per item key, the last one winning (as the summary)."""
    latest: dict[Any, tuple[Record, Path | None]] = {}
    for index, r in enumerate(records):
        latest[record_key(r)] = (r, record_dirs[index] if record_dirs is not None else None)
    return sorted(
        latest.values(),
        key=lambda p: (str(p[0].get("agent")), str(p[0].get("task")), p[0].get("state") is not None,
                       str(p[0].get("state")), str(p[0].get("handoff") or "")),
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
        start += f" @{r['handoff']}" if r.get("handoff") else ""
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
    return table(header, rows, left=7, raw=True)


def _figures(summary: Mapping[str, Any], all_scopes: Sequence[str], agents: Sequence[str]) -> list[str]:
    """Figures 1 and 2, each a block of its own (side by side they would be shrunk, and their
    text with them), or the one line saying why they are not drawn."""
    missing = missing_dependency()
    if missing:
        return [f'<p class="note" id="charts-missing">{_e(missing)}</p>']
    parts = []
    fig1 = chart_clean_vs_residual(summary, all_scopes)
    if fig1:
        parts.append(
            f'<figure id="figure-1">{fig1}<figcaption>Figure 1 (right): Ref. Clean (blue, upper bar) and '
            "Residual (orange, lower bar) success per agent, one row per agent and one panel per track; the "
            "difference between the two bars is the Gap.</figcaption></figure>"
        )
    fig2 = chart_conditional(summary)
    if fig2:
        parts.append(
            f'<figure id="figure-2">{fig2}<figcaption>Figure 2: outcomes of Residual Starts on the tasks each '
            "agent solves from Clean Start (all tracks); the failed share is CondFail.</figcaption></figure>"
        )
    elif agents:
        parts.append('<p class="note">Figure 2: no agent solves any task from Clean Start.</p>')
    return parts


# --------------------------------------------------------------------------- the page


def _oracle_section(summary: Mapping[str, Any]) -> list[str]:
    """The starts the reference solution did not solve (nothing when it solved them all)."""
    lines = oracle_lines(summary)
    if not lines:
        return []
    items = "".join(f"<li>{_e(line.strip())}</li>" for line in lines[1:])
    return [heading(2, "oracle", "Starts the reference solution did not solve"),
            f'<p class="note">{_e(lines[0])}</p>', f"<ul>{items}</ul>"]


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
    all_scopes = scopes(summary)
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
        status_html(summary),  # an interrupted run and the skipped items, when there are
        f'<p class="headline">{_e(headline_line(block, single_scope=len(all_scopes) == 1))}</p>' if block else "",
        heading(2, "success", "Success from Residual and matched Clean starts, per agent", paper="Table 3"),
        '<p class="note">Ref. Clean is the Clean Start success on the same tasks; CondFail is the share of '
        "Residual Starts failed on the tasks the agent solves from Clean Start.</p>",
        headline_table(summary),
        heading(3, "counts", "Tasks and states behind each figure"),
        counts_table(summary),
        *_figures(summary, all_scopes, agents),
        heading(2, "ranking", "Ranking under Clean and Residual starts"),
        '<p class="note">Ties share a rank. A reversed pair is ordered one way on Clean and the other way on '
        "Residual; margins in points.</p>",
        comparison_section(block, all_scopes) if block else no_comparison,
        heading(2, "acceptance-bias", "Acceptance bias: how each agent treats inherited work, per track",
                paper="Table 4 (Appendix D)"),
        '<p class="note">Normally submitted runs (declared done, valid verdict); task-level averages in %. '
        "Same failing and Kept over failed continuations; Steps = median over tasks of Residual/Clean steps.</p>",
        acceptance_table(summary),
        *handoff_section(summary),
        heading(2, "by-predecessor", "Success by predecessor agent (who left the Residual State)", paper="Table 8"),
        '<p class="note">Each group: tasks with at least one state from the predecessor, only its states '
        "averaged, Clean Start matched on the same tasks.</p>",
        predecessor_table(summary),
        *_oracle_section(summary),
        heading(2, "infrastructure", "Infrastructure: retries, exclusions and time per item"),
        infra_section(summary),
        *fidelity_html(summary),
        heading(2, "items", "Items: outcome, trajectory and final diff of every run"),
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

"""The summary's tables as HTML, for ``report.html`` (:mod:`swe_residual.report.html`).

Each table is read from the summary dict alone (what ``summary.json`` holds); nothing here
computes a metric. :func:`heading` names every table by what it shows; a table that is one of
the paper's says which in a small note under its heading, so a reader can put the page and
the paper side by side without the page being numbered like the paper.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from swe_residual.metrics.comparison import ranking_table
from swe_residual.summary.aggregate import DURATION_KEYS

__all__ = [
    "acceptance_table",
    "comparison_section",
    "counts_table",
    "e",
    "heading",
    "headline_table",
    "infra_section",
    "pct",
    "predecessor_table",
    "scopes",
    "table",
    "wrap",
]


def e(value: Any) -> str:
    """``value`` as escaped HTML text (None is empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def wrap(value: Any) -> str:
    """``value`` as escaped HTML text with a break opportunity (``<wbr>``) after each ``:``,
    ``/``, ``.`` and ``_``: a long agent spec or test id wraps at its own separators in a
    narrow column, never cut and never broken letter by letter."""
    return "<wbr>".join(e(piece) for piece in re.split(r"(?<=[:/._])", "" if value is None else str(value)))


def pct(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def scopes(summary: Mapping[str, Any]) -> list[str]:
    """The tracks (sorted), then ``overall`` only when it pools more than one track."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    tracks = sorted({t for block in agents.values() for t in block.get("tracks", {})})
    return tracks + (["overall"] if len(tracks) > 1 else [])


def _metrics(agent_block: Mapping[str, Any], scope: str) -> Mapping[str, Any] | None:
    if scope == "overall":
        return agent_block.get("overall")
    return agent_block.get("tracks", {}).get(scope)


def heading(level: int, anchor: str, title: str, *, paper: str | None = None) -> str:
    """A heading naming a table by what it shows; ``paper`` names the paper's table it
    corresponds to ("Table 3"), shown as a small note right under it."""
    out = f'<h{level} id="{e(anchor)}">{e(title)}</h{level}>'
    if paper:
        out += f'<p class="paper-ref">the paper\'s {e(paper)}</p>'
    return out


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 1, raw: bool = False) -> str:
    """A table; the first ``left`` columns are left-aligned. Cells are escaped unless ``raw``
    (then the caller has escaped them); the first column (an agent, as a rule) may wrap at
    its separators (:func:`wrap`)."""
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="{"l" if i < left else ""}">{e(h)}</th>' for i, h in enumerate(header)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = [f'<td class="{"l" if i < left else ""}">{c if raw else (wrap(c) if i == 0 else e(c))}</td>'
                 for i, c in enumerate(row)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def headline_table(summary: Mapping[str, Any]) -> str:
    """Per agent, Residual / Ref. Clean / Gap (and CondFail) for every scope (the paper's Table 3)."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    all_scopes = scopes(summary)
    top = '<tr><th class="l" rowspan="2">Agent</th>' + "".join(
        f'<th colspan="4">{e(s)}</th>' for s in all_scopes
    ) + "</tr>"
    sub = "<tr>" + "".join("<th>Residual</th><th>Ref. Clean</th><th>Gap</th><th>CondFail</th>" for _ in all_scopes)
    sub += "</tr>"
    rows = []
    for agent, block in agents.items():
        cells = [f'<td class="l">{wrap(agent)}</td>']
        for scope in all_scopes:
            m = _metrics(block, scope) or {}
            title = f"{m.get('n_tasks', 0)} tasks, {m.get('n_states', 0)} states"
            cells += [
                f'<td title="{e(title)}">{pct(m.get("residual"))}</td>',
                f"<td>{pct(m.get('clean'))}</td>",
                f"<td><b>{pct(m.get('gap'))}</b></td>",
                f"<td>{pct(m.get('cond_fail'))}</td>",
            ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><thead>{top}{sub}</thead><tbody>{"".join(rows)}</tbody></table></div>'


def counts_table(summary: Mapping[str, Any]) -> str:
    rows = []
    for agent, block in summary.get("agents", {}).items():
        for scope in scopes(summary):
            m = _metrics(block, scope) or {}
            rows.append([agent, scope, str(m.get("n_tasks", 0)), str(m.get("n_states", 0))])
    return table(["Agent", "Track", "Tasks", "States"], rows, left=2)


def acceptance_table(summary: Mapping[str, Any]) -> str:
    """One row per agent and track: never an ``overall`` row, which would pool the machine
    track into the repo track's figures (``overall.acceptance_bias`` is the repo track's)."""
    rows = []
    for agent, block in summary.get("agents", {}).items():
        for scope, m in (block.get("tracks") or {}).items():
            ab = m.get("acceptance_bias") or {}
            split = ab.get("split_by_kept") or {}
            rows.append([
                agent, scope, pct(m.get("gap")), pct(ab.get("same_failing")),
                pct(ab.get("initially_failing_clean")), pct(ab.get("initially_failing_residual")),
                pct(ab.get("kept")), pct(ab.get("left_out_clean")), pct(ab.get("left_out_residual")),
                pct(ab.get("left_out_opened")), pct(ab.get("steps_ratio"), 2), pct(ab.get("inspected")),
                f"{pct(split.get('success_above'))} / {pct(split.get('success_below'))}",
            ])  # fmt: skip
    header = [
        "Agent", "Track", "Gap", "Same failing", "Init. failing Clean", "Init. failing Residual", "Kept",
        "Left-out Clean", "Left-out Residual", "Opened", "Steps", "Inspected", "Success above / below median Kept",
    ]  # fmt: skip
    return table(header, rows, left=2)


def predecessor_table(summary: Mapping[str, Any]) -> str:
    rows = []
    for agent, block in summary.get("agents", {}).items():
        for scope in scopes(summary):
            m = _metrics(block, scope) or {}
            for pred, g in (m.get("by_predecessor") or {}).items():
                rows.append([agent, scope, pred, pct(g.get("residual")), pct(g.get("clean")),
                             pct(g.get("gap")), str(g.get("n_tasks", 0))])
    if not rows:
        return '<p class="note">No residual states.</p>'
    header = ["Agent", "Track", "Predecessor", "Residual", "Ref. Clean", "Gap", "Tasks"]
    return table(header, rows, left=3)


def comparison_section(block: Mapping[str, Any], all_scopes: Sequence[str]) -> str:
    """Per scope, each agent's rank under Clean and Residual and the reversed pairs; then the
    states no agent solved."""
    out = []
    for scope in all_scopes:
        rows = []
        for r in ranking_table(block, scope):
            moved = r["moved"]
            arrow = "" if moved is None or moved == 0 else (
                f'<span class="up">&#9650; {moved}</span>' if moved > 0 else f'<span class="down">&#9660; {-moved}</span>'
            )
            rows.append([
                wrap(r["agent"]),
                "-" if r["clean_rank"] is None else f"{r['clean_rank']} ({pct(r['clean'])})",
                "-" if r["residual_rank"] is None else f"{r['residual_rank']} ({pct(r['residual'])})",
                arrow,
            ])  # fmt: skip
        anchor = "ranks-" + re.sub(r"[^A-Za-z0-9_-]+", "-", scope)  # a track name is data: keep ids plain
        out.append(heading(3, anchor, f"Ranks from Clean and Residual starts: {scope}"))
        out.append(table(["Agent", "Clean rank (%)", "Residual rank (%)", "Moved"], rows, raw=True))
        found = block.get("reversals", {}).get(scope) or []
        if found:
            items = "".join(
                f"<li><b>{e(r['clean_leader'])}</b> over <b>{e(r['residual_leader'])}</b> on Clean "
                f"(+{r['clean_margin']:.1f}), <b>{e(r['residual_leader'])}</b> over "
                f"<b>{e(r['clean_leader'])}</b> on Residual (+{r['residual_margin']:.1f})</li>"
                for r in found
            )
            out.append(f"<p>Reversed pairs:</p><ul>{items}</ul>")
        else:
            out.append('<p class="note">No pair of agents reverses its order.</p>')
    states = block.get("states") or {}
    unsolved = states.get("unsolved") or []
    n_states = states.get("n_states", 0)
    if unsolved:
        out.append(heading(3, "unsolved-states", f"Residual States no agent solved ({len(unsolved)} of {n_states})"))
        rows = [[u["track"], u["task"], u["state"], str(u["agents"])] for u in unsolved]
        out.append(table(["Track", "Task", "State", "Agents that ran it"], rows, left=3))
    else:  # a heading over nothing reads as a page that failed to load: say it in one line
        said = f"none (each of the {e(n_states)} was solved by at least one agent)" if n_states else "none ran"
        out.append(f'<p class="note" id="unsolved-states">Residual States no agent solved: {said}.</p>')
    return "".join(out)


def infra_section(summary: Mapping[str, Any]) -> str:
    infra = summary.get("infra", {})
    out = [
        "<ul>",
        f"<li>items: {e(infra.get('items', 0))}</li>",
        f"<li>retried (more than one attempt): {e(infra.get('retried', 0))}</li>",
        f"<li>unresolved infrastructure errors (excluded from every metric, not failures): "
        f"{e(infra.get('unresolved', 0))}</li>",
        "</ul>",
    ]
    excluded = infra.get("excluded") or []
    if excluded:
        rows = [[x.get("agent"), x.get("task"),
                 (x.get("state") or "(clean)") + (f"@{x['handoff']}" if x.get("handoff") else ""), x.get("error") or ""]
                for x in excluded]
        out.append(heading(3, "excluded-items", "Items excluded by an unresolved infrastructure error"))
        out.append(table(["Agent", "Task", "State", "Error"], rows, left=4))
    by_agent: Mapping[str, Any] = infra.get("by_agent") or {}
    if by_agent:
        rows = [
            [agent, str(d.get("items", 0)), str(d.get("attempts", 0)), *(pct(d.get(k), 2) for k in DURATION_KEYS)]
            for agent, d in by_agent.items()
        ]
        out.append(heading(3, "durations", "Attempts and median seconds per item, per agent"))
        out.append('<p class="note">Setup = starting the environment and applying the state.</p>')
        out.append(table(["Agent", "Items", "Attempts", "Setup", "Agent", "Verify", "Wall"], rows))
    return "".join(out)

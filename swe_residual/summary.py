"""Aggregate run records into ``summary.json`` and render it (Markdown report, terminal lines).

``build_summary`` is computed from run records alone, so shard results merge by concatenation:
records are keyed by (agent, task, start, state) and the last record of a key wins, so merging
the same file twice gives the same summary. Nothing is rounded in the summary dict; only the
renderers round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from swe_residual.comparison import comparison, headline_line
from swe_residual.metrics.acceptance import acceptance_bias
from swe_residual.metrics.headline import Record, dedupe_records, headline, is_excluded

__all__ = ["SCHEMA", "build_summary", "infra_summary", "render_markdown", "render_terminal"]

SCHEMA = 1
TERMINAL_WIDTH = 100


def _last_error(record: Record) -> str | None:
    attempts = record.get("attempts") or []
    for attempt in reversed(attempts):
        if isinstance(attempt, Mapping) and attempt.get("error"):
            return str(attempt["error"])
    return None


def infra_summary(records: Sequence[Record]) -> dict[str, Any]:
    """``{retried, unresolved, items, excluded}`` over (deduplicated) records."""
    excluded = [
        {
            "agent": r.get("agent"),
            "task": r.get("task"),
            "state": r.get("state"),
            "error": _last_error(r),
        }
        for r in records
        if is_excluded(r)
    ]
    excluded.sort(
        key=lambda e: (str(e["agent"]), str(e["task"]), e["state"] is not None, str(e["state"]))
    )
    return {
        "retried": sum(1 for r in records if len(r.get("attempts") or []) > 1),
        "unresolved": len(excluded),
        "items": len(records),
        "excluded": excluded,
    }


def _block(records: Sequence[Record], *, pooled: bool) -> dict[str, Any]:
    block = headline(records, key_by_track=pooled)
    block["acceptance_bias"] = acceptance_bias(records)
    return block


def build_summary(records: Iterable[Mapping[str, Any]], *, compare: bool = False) -> dict[str, Any]:
    """The DESIGN section 5 summary:
    ``{"schema": 1, "agents": {AGENT: {"tracks": {TRACK: {...}}, "overall": {...}}}, "infra"}``.

    With ``compare`` it also holds ``"comparison"`` (rankings, reversals, states no agent
    solved; see :mod:`swe_residual.comparison`): opt-in so the section 5 layout stays exact.
    """
    recs = dedupe_records(records)
    by_agent: dict[str, list[Record]] = {}
    for r in recs:
        by_agent.setdefault(str(r.get("agent")), []).append(r)
    agents: dict[str, Any] = {}
    for agent in sorted(by_agent):
        agent_recs = by_agent[agent]
        by_track: dict[str, list[Record]] = {}
        for r in agent_recs:
            by_track.setdefault(str(r.get("track")), []).append(r)
        agents[agent] = {
            "tracks": {t: _block(by_track[t], pooled=False) for t in sorted(by_track)},
            "overall": _block(agent_recs, pooled=True),
        }
    summary = {"schema": SCHEMA, "agents": agents, "infra": infra_summary(recs)}
    if compare:
        summary["comparison"] = comparison(summary, recs)
    return summary


# --------------------------------------------------------------------------- rendering


def _pct(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _scopes(agent_block: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    scopes = list(agent_block.get("tracks", {}).items())
    if len(scopes) != 1:
        scopes.append(("overall", agent_block.get("overall", {})))
    return scopes


def render_markdown(summary: Mapping[str, Any]) -> str:
    """The paper's tables as Markdown: headline (Table 3 + CondFail), predecessor groups
    (Table 8), acceptance bias (Table 4), and the infrastructure figures."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    out: list[str] = ["# SWE-Residual summary", ""]

    out += ["## Residual Start vs. matched Clean Start", ""]
    out += ["Success rates in %, averaged over a task's states, then equally across tasks;"]
    out += ["Gap = Ref. Clean - Residual in points, computed before rounding.", ""]
    rows = []
    for agent, block in agents.items():
        for scope, m in _scopes(block):
            rows.append(
                [
                    agent,
                    scope,
                    _pct(m.get("residual")),
                    _pct(m.get("clean")),
                    _pct(m.get("gap")),
                    _pct(m.get("cond_fail")),
                    str(m.get("n_tasks", 0)),
                    str(m.get("n_states", 0)),
                ]
            )
    header = [
        "Agent", "Track", "Residual (%)", "Ref. Clean (%)", "Gap", "CondFail (%)", "n_tasks",
        "n_states",
    ]  # fmt: skip
    out += _table(header, rows) + [""]

    out += ["## By predecessor agent", ""]
    out += ["Each group: tasks with >= 1 state from the predecessor, only its states averaged,"]
    out += ["Clean Start matched on the same tasks.", ""]
    rows = []
    for agent, block in agents.items():
        for scope, m in _scopes(block):
            for pred, g in (m.get("by_predecessor") or {}).items():
                rows.append(
                    [
                        agent,
                        scope,
                        pred,
                        _pct(g.get("residual")),
                        _pct(g.get("clean")),
                        _pct(g.get("gap")),
                        str(g.get("n_tasks", 0)),
                    ]
                )
    header = ["Agent", "Track", "Predecessor", "Residual (%)", "Ref. Clean (%)", "Gap", "n_tasks"]
    out += (_table(header, rows) if rows else ["(no residual states)"]) + [""]

    out += ["## Acceptance bias", ""]
    out += ["Normally submitted runs; task-level averages in % (Gap in points);"]
    out += ["Steps = median over tasks of the mean Residual/Clean step ratio.", ""]
    rows = []
    for agent, block in agents.items():
        for scope, m in _scopes(block):
            ab = m.get("acceptance_bias") or {}
            split = ab.get("split_by_kept") or {}
            rows.append(
                [
                    agent,
                    scope,
                    _pct(m.get("gap")),
                    _pct(ab.get("same_failing")),
                    _pct(ab.get("initially_failing_clean")),
                    _pct(ab.get("initially_failing_residual")),
                    _pct(ab.get("kept")),
                    _pct(ab.get("left_out_clean")),
                    _pct(ab.get("left_out_residual")),
                    _pct(ab.get("left_out_opened")),
                    _pct(ab.get("steps_ratio"), 2),
                    _pct(ab.get("inspected")),
                    f"{_pct(split.get('success_above'))} / {_pct(split.get('success_below'))}",
                ]
            )
    header = [
        "Agent", "Track", "Gap", "Same failing", "Init. failing Clean", "Init. failing Residual",
        "Kept", "Left-out Clean", "Left-out Residual", "Opened", "Steps", "Inspected",
        "Success above / below median Kept",
    ]  # fmt: skip
    out += _table(header, rows) + [""]

    infra = summary.get("infra", {})
    out += ["## Infrastructure", ""]
    out += [
        f"- items: {infra.get('items', 0)}",
        f"- retried (more than one attempt): {infra.get('retried', 0)}",
        f"- unresolved infra errors (excluded, not failures): {infra.get('unresolved', 0)}",
    ]
    excluded = infra.get("excluded") or []
    if excluded:
        out += ["", "| Agent | Task | State | Error |", "|---|---|---|---|"]
        for e in excluded:
            error = str(e.get("error") or "").replace("|", "\\|").replace("\n", " ")
            state = e.get("state") if e.get("state") is not None else "(clean)"
            out.append(f"| {e.get('agent')} | {e.get('task')} | {state} | {error} |")
    return "\n".join(out) + "\n"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def render_terminal(summary: Mapping[str, Any]) -> list[str]:
    """Short terminal report: one headline table per track (and overall when there are several
    tracks), then the infrastructure figures and the excluded items. Lines <= 100 chars."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    tracks = sorted({t for block in agents.values() for t in block.get("tracks", {})})
    scopes = tracks + (["overall"] if len(tracks) > 1 else [])
    lines: list[str] = []
    head = f"{'agent':<32} {'residual':>9} {'clean':>7} {'gap':>7} {'condfail':>9} {'tasks':>6}"
    head += f" {'states':>7}"
    for scope in scopes:
        rows: list[tuple[float, str, Mapping[str, Any]]] = []
        for agent, block in agents.items():
            m = block.get("overall") if scope == "overall" else block.get("tracks", {}).get(scope)
            if m is None:
                continue
            res = m.get("residual")
            rows.append((-(res if res is not None else -1.0), agent, m))
        if not rows:
            continue
        lines.append(f"SWE-Residual [{scope}] (success %, gap in points)")
        lines.append(head)
        for _, agent, m in sorted(rows, key=lambda r: (r[0], r[1])):
            lines.append(
                f"{_clip(agent, 32):<32} {_pct(m.get('residual')):>9} {_pct(m.get('clean')):>7}"
                f" {_pct(m.get('gap')):>7} {_pct(m.get('cond_fail')):>9}"
                f" {m.get('n_tasks', 0):>6} {m.get('n_states', 0):>7}"
            )
        predecessors = sorted({p for _, _, m in rows for p in (m.get("by_predecessor") or {})})
        if predecessors:
            lines.append(f"{'by predecessor: residual/clean':<32} " + " ".join(f"{p[:17]:>17}" for p in predecessors))
            for _, agent, m in sorted(rows, key=lambda r: (r[0], r[1])):
                groups = m.get("by_predecessor") or {}
                cells = []
                for pred in predecessors:
                    g = groups.get(pred)
                    cells.append(f"{_pct(g.get('residual'))}/{_pct(g.get('clean'))}" if g else "-")
                lines.append(f"{_clip(agent, 32):<32} " + " ".join(f"{c:>17}" for c in cells))
    if summary.get("comparison"):  # the one comparison line that matters most
        lines.append(headline_line(summary["comparison"], single_scope=len(tracks) == 1, width=TERMINAL_WIDTH))
    infra = summary.get("infra", {})
    lines.append(
        f"infra: {infra.get('items', 0)} items, {infra.get('retried', 0)} retried, "
        f"{infra.get('unresolved', 0)} unresolved (excluded, not failures)"
    )
    for e in infra.get("excluded") or []:
        state = e.get("state") if e.get("state") is not None else "clean"
        error = str(e.get("error") or "").replace("\n", " ")
        lines.append(_clip(f"  excluded: {e.get('agent')} {e.get('task')} [{state}]: {error}", 100))
    return [_clip(line, TERMINAL_WIDTH) for line in lines]

"""Aggregate run records into ``summary.json`` and render it (Markdown report, terminal lines).

``build_summary`` is computed from run records alone, so shard results merge by concatenation:
records are keyed by :func:`swe_residual.trial.records.record_key` (agent, track, task, start, state)
and the last record of a key wins, so merging the same file twice gives the same summary.
Nothing is rounded in the summary dict; only the renderers round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tabulate import tabulate

from swe_residual.agents.identity import check_agent_configs
from swe_residual.metrics.comparison import comparison, headline_line
from swe_residual.metrics.acceptance import acceptance_bias
from swe_residual.handoff.metrics import primary_records
from swe_residual.metrics.headline import Record, RecordLike, headline, is_excluded, task_table
from swe_residual.summary.oracle import oracle_lines, oracle_markdown, oracle_summary
from swe_residual.trial.record_model import as_records
from swe_residual.trial.records import dedupe_records
from swe_residual.trial.values import Termination, Track
from swe_residual.run.status import skipped_markdown, skipped_terminal, status_markdown
from swe_residual.summary.fidelity import fidelity_markdown, fidelity_summary, fidelity_terminal
from swe_residual.handoff.summary import handoff_markdown, handoff_summary, handoff_terminal

__all__ = [
    "ACCEPTANCE_TRACK", "DURATION_KEYS", "SCHEMA", "build_summary", "in_agent_order", "infra_summary",
    "plain_headlines", "render_markdown", "render_terminal",
]  # fmt: skip

SCHEMA = 1
#: The track whose acceptance-bias figures ``overall`` carries. Table 4 is computed on DeepSWE
#: (the repo track) alone: "The analysis in Section 5.4 is limited to DeepSWE" (Appendix D), and
#: Kept / Left-out / Same failing mean something else on a machine state, so the machine track
#: is reported on its own and never pooled into an overall acceptance-bias figure.
ACCEPTANCE_TRACK = Track.REPO
TERMINAL_WIDTH = 100
#: the phases whose median seconds per item ``infra.by_agent`` holds
DURATION_KEYS = ("setup_sec", "agent_sec", "verify_sec", "wall_sec")


def _last_error(record: Record) -> str | None:
    for attempt in reversed(record.attempts):
        if attempt.error:
            return str(attempt.error)
    return None


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _durations(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Per agent: items, attempts, and the median seconds of each phase over its items."""
    by_agent: dict[str, list[Record]] = {}
    for r in records:
        by_agent.setdefault(str(r.agent), []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for agent in sorted(by_agent):
        recs = by_agent[agent]
        row: dict[str, Any] = {
            "items": len(recs),
            "attempts": sum(len(r.attempts) for r in recs),
        }
        for phase in DURATION_KEYS:
            values = []
            for r in recs:
                seconds = getattr(r.durations, phase)
                if seconds is not None:
                    values.append(float(seconds))
            row[phase] = _median(values)
        out[agent] = row
    return out


def infra_summary(records: Sequence[RecordLike]) -> dict[str, Any]:
    """``{retried, unresolved, items, excluded, by_agent}`` over (deduplicated) records;
    ``by_agent[AGENT]`` holds ``items``, ``attempts`` and the median ``setup_sec``,
    ``agent_sec``, ``verify_sec`` and ``wall_sec`` of its items (null without data)."""
    records = as_records(records)
    excluded = [
        {
            "agent": r.agent,
            "task": r.task,
            "state": r.state,
            "error": _last_error(r),
            **({"handoff": r.handoff} if r.handoff else {}),  # only a non-blind item has one
        }
        for r in records
        if is_excluded(r)
    ]
    order = lambda e: (str(e["agent"]), str(e["task"]), e["state"] is not None, str(e["state"]))  # noqa: E731
    excluded.sort(key=order)
    # No valid verdict on the agent's final state, one on the clean state: counted as failures
    # (never excluded), and listed so that a person sees which items they are.
    verifier_failed = sorted(
        ({"agent": r.agent, "task": r.task, "state": r.state, **({"handoff": r.handoff} if r.handoff else {})}
         for r in records if r.termination == Termination.VERIFIER_FAILED),
        key=order,
    )
    return {
        "retried": sum(1 for r in records if len(r.attempts) > 1),
        "unresolved": len(excluded),
        "items": len(records),
        "excluded": excluded,
        "verifier_failed": verifier_failed,
        "by_agent": _durations(records),
    }


def _block(records: Sequence[Record], *, pooled: bool) -> dict[str, Any]:
    block = headline(records, key_by_track=pooled)
    # The tasks and states behind CondFail (C_A: tasks solved from the Clean Start), which
    # Figure 2 of the report shows next to its bars.
    solved = [t for t in task_table(records, key_by_track=pooled).values() if t.clean == 1]
    block["cond_fail_tasks"] = len(solved)
    block["cond_fail_states"] = sum(len(t.states) for t in solved)
    if pooled:
        # overall: the repo track's Table 4 figures (null without repo runs), never a pool
        repo = [r for r in records if r.track == ACCEPTANCE_TRACK]
        block["acceptance_bias"] = acceptance_bias(repo) if repo else None
    else:
        block["acceptance_bias"] = acceptance_bias(records)
    return block


def build_summary(records: Iterable[RecordLike], *, compare: bool = False,
                  sources: Sequence[str] | None = None) -> dict[str, Any]:
    """The DESIGN section 5 summary:
    ``{"schema": 1, "agents": {AGENT: {"tracks": {TRACK: {...}}, "overall": {...}}}, "infra"}``.

    With ``compare`` it also holds ``"comparison"`` (rankings, reversals, states no agent
    solved; see :mod:`swe_residual.metrics.comparison`): opt-in so the section 5 layout stays exact.
    Raises `AgentConfigConflict` when one agent name carries two configurations (`sources`,
    parallel to `records`, name where each record came from in the error).
    """
    records = as_records(records)
    check_agent_configs(records, sources)
    recs = dedupe_records(records)
    # With several handoff views the headline tables show one (blind, when it ran): a state run
    # under two views would count twice. Every view is under "by_handoff", present only then.
    shown = primary_records(recs)
    by_agent: dict[str, list[Record]] = {}
    for r in shown:
        by_agent.setdefault(str(r.agent), []).append(r)
    agents: dict[str, Any] = {}
    for agent in sorted(by_agent):
        agent_recs = by_agent[agent]
        by_track: dict[str, list[Record]] = {}
        for r in agent_recs:
            by_track.setdefault(str(r.track), []).append(r)
        agents[agent] = {
            "tracks": {t: _block(by_track[t], pooled=False) for t in sorted(by_track)},
            "overall": _block(agent_recs, pooled=True),
        }
    summary = {"schema": SCHEMA, "agents": agents, "infra": infra_summary(recs)}
    if compare:
        summary["comparison"] = comparison(summary, shown)
    views = handoff_summary(recs)
    if views is not None:
        summary["by_handoff"] = views
    oracle = oracle_summary(shown)
    if oracle is not None:
        summary["oracle"] = oracle
    fidelity = fidelity_summary(recs)
    if fidelity is not None:  # under infra, only with machine-track states: section 5's keys stay as they are
        summary["infra"]["fidelity"] = fidelity
    return summary


def _ordered(mapping: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    first = [agent for agent in dict.fromkeys(order) if agent in mapping]
    return {agent: mapping[agent] for agent in [*first, *(a for a in mapping if a not in first)]}


def in_agent_order(summary: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """`summary` with its per-agent parts in `order` (a run's: the command line's), any other
    agent after them: every table drawn from it then lists the agents the same way. The JSON
    file's keys stay sorted; only the renderers see the difference."""
    out = dict(summary)
    out["agents"] = _ordered(summary.get("agents", {}), order)
    if summary.get("by_handoff"):
        out["by_handoff"] = _ordered(summary["by_handoff"], order)
    infra = summary.get("infra")
    if isinstance(infra, Mapping) and isinstance(infra.get("by_agent"), Mapping):
        out["infra"] = {**infra, "by_agent": _ordered(infra["by_agent"], order)}
    return out


# --------------------------------------------------------------------------- rendering


def _pct(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _md_cell(value: Any) -> Any:
    # A "|" or a newline inside a cell would break the Markdown table.
    return value.replace("|", "\\|").replace("\n", " ") if isinstance(value, str) else value


def _markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], *, text_columns: int, floatfmt: str | Sequence[str] = ".1f"
) -> list[str]:
    """A Markdown (pipe) table: the first ``text_columns`` columns are text, left-aligned; the
    others right-aligned, numbers with one decimal (or ``floatfmt`` per column), ``-`` where a
    figure is missing."""
    if not rows:
        return []
    table = tabulate(
        [[_md_cell(c) for c in row] for row in rows],
        headers=list(header),
        tablefmt="pipe",
        floatfmt=floatfmt,
        missingval="-",
        colalign=["left"] * text_columns + ["right"] * (len(header) - text_columns),
        disable_numparse=list(range(text_columns)),  # an agent named "1" stays text
    )
    return table.splitlines()


def _scopes(agent_block: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    scopes = list(agent_block.get("tracks", {}).items())
    if len(scopes) != 1:
        scopes.append(("overall", agent_block.get("overall", {})))
    return scopes


def _plain_number(value: float) -> str:
    """A figure in plain words: whole when it is (nearly) whole, else one decimal."""
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def plain_headline(agent: str, figures: Mapping[str, Any]) -> str:
    """One agent's overall figures in words, for a reader who has not read the paper:
    "noop: 0% from a clean start, 0% from inherited work, 0 points lost"."""
    clean, residual, gap = figures.get("clean"), figures.get("residual"), figures.get("gap")
    if clean is None and residual is None:
        return f"{agent}: no scored task"
    parts = [f"{_plain_number(clean)}% from a clean start" if clean is not None else "no clean start scored",
             f"{_plain_number(residual)}% from inherited work" if residual is not None else "no inherited work scored"]
    if gap is not None:
        parts.append(f"{_plain_number(gap)} points lost" if gap >= 0 else f"{_plain_number(-gap)} points gained")
    return f"{agent}: " + ", ".join(parts)


def plain_headlines(summary: Mapping[str, Any]) -> list[str]:
    """One line per agent (in the summary's agent order), from its overall figures."""
    return [plain_headline(agent, block.get("overall") or {}) for agent, block in summary.get("agents", {}).items()]


#: What the terminal's columns mean (and the `a/b` cells of the by-predecessor table).
TERMINAL_LEGEND = (
    "legend: residual = % solved from a Residual State (work a predecessor left, claimed done);",
    "  clean = % solved from a clean start on the same tasks; gap = clean - residual (points lost);",
    "  condfail = % of Residual States failed on the tasks the agent solves from a clean start;",
    "  a/b under 'by predecessor' = residual/clean on the tasks of that predecessor's states",
)


def render_markdown(summary: Mapping[str, Any]) -> str:
    """The paper's tables as Markdown: headline (Table 3 + CondFail), predecessor groups
    (Table 8), acceptance bias (Table 4), and the infrastructure figures."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    out: list[str] = ["# SWE-Residual summary", ""] + status_markdown(summary)
    if agents:
        out += ["In short (overall):", ""] + [f"- {_md_cell(line)}" for line in plain_headlines(summary)] + [""]

    out += ["## Residual Start vs. matched Clean Start", ""]
    out += ["Success rates in %, averaged over a task's states, then equally across tasks;"]
    out += ["Gap = Ref. Clean - Residual in points, computed before rounding. Residual: success from"]
    out += ["a Residual State (work a predecessor left and claimed done); Ref. Clean: success from a clean"]
    out += ["start on the same tasks; CondFail: the share of Residual States failed on the tasks the agent"]
    out += ["solves from a clean start.", ""]
    rows = [
        [agent, scope, m.get("residual"), m.get("clean"), m.get("gap"), m.get("cond_fail"),
         m.get("n_tasks", 0), m.get("n_states", 0)]
        for agent, block in agents.items()
        for scope, m in _scopes(block)
    ]  # fmt: skip
    header = [
        "Agent", "Track", "Residual (%)", "Ref. Clean (%)", "Gap", "CondFail (%)", "n_tasks",
        "n_states",
    ]  # fmt: skip
    out += (_markdown_table(header, rows, text_columns=2) or ["(no agents)"]) + [""]

    out += ["## By predecessor agent", ""]
    out += ["Each group: tasks with >= 1 state from the predecessor, only its states averaged,"]
    out += ["Clean Start matched on the same tasks.", ""]
    rows = [
        [agent, scope, pred, g.get("residual"), g.get("clean"), g.get("gap"), g.get("n_tasks", 0)]
        for agent, block in agents.items()
        for scope, m in _scopes(block)
        for pred, g in (m.get("by_predecessor") or {}).items()
    ]
    header = ["Agent", "Track", "Predecessor", "Residual (%)", "Ref. Clean (%)", "Gap", "n_tasks"]
    out += (_markdown_table(header, rows, text_columns=3) or ["(no residual states)"]) + [""]

    out += ["## Acceptance bias", ""]
    out += ["Normally submitted runs; task-level averages in % (Gap in points);"]
    out += ["Steps = median over tasks of the mean Residual/Clean step ratio; one row per track, never"]
    out += ["pooled (Table 4 is the repo track's; the machine track is shown apart).", ""]
    rows = []
    for agent, block in agents.items():
        for scope, m in (block.get("tracks") or {}).items():
            ab = m.get("acceptance_bias") or {}
            split = ab.get("split_by_kept") or {}
            rows.append([
                agent, scope, m.get("gap"), ab.get("same_failing"), ab.get("initially_failing_clean"),
                ab.get("initially_failing_residual"), ab.get("kept"), ab.get("left_out_clean"),
                ab.get("left_out_residual"), ab.get("left_out_opened"),
                ab.get("steps_ratio"), ab.get("inspected"),
                f"{_pct(split.get('success_above'))} / {_pct(split.get('success_below'))}",
            ])  # fmt: skip
    header = [
        "Agent", "Track", "Gap", "Same failing", "Init. failing Clean", "Init. failing Residual",
        "Kept", "Left-out Clean", "Left-out Residual", "Opened", "Steps", "Inspected",
        "Success above / below median Kept",
    ]  # fmt: skip
    steps_ratio = [".1f"] * len(header)
    steps_ratio[header.index("Steps")] = ".2f"  # a ratio, not a percentage
    out += (_markdown_table(header, rows, text_columns=2, floatfmt=steps_ratio) or ["(no agents)"]) + [""]

    out += handoff_markdown(summary)
    out += oracle_markdown(summary)

    infra = summary.get("infra", {})
    out += ["## Infrastructure", ""]
    out += [
        f"- items: {infra.get('items', 0)}",
        f"- retried (more than one attempt): {infra.get('retried', 0)}",
        f"- unresolved infra errors (excluded, not failures): {infra.get('unresolved', 0)}",
    ]
    rows = [
        [e.get("agent"), e.get("task"),
         "(clean)" if e.get("state") is None else f"{e['state']}" + (f"@{e['handoff']}" if e.get("handoff") else ""),
         str(e.get("error") or "")]
        for e in infra.get("excluded") or []
    ]  # fmt: skip
    if rows:
        out += [""] + _markdown_table(["Agent", "Task", "State", "Error"], rows, text_columns=4)
    failed = infra.get("verifier_failed") or []
    if failed:
        out += ["", f"- verifier failed on the agent's final state, works on the clean state (failures, counted): "
                    f"{len(failed)}", ""]
        out += _markdown_table(["Agent", "Task", "State"], [[e.get("agent"), e.get("task"), _state_label(e)]
                                                            for e in failed], text_columns=3)
    out += fidelity_markdown(summary)
    skipped = skipped_markdown(summary)
    if skipped:
        out += [""] + skipped[:-1]
    return "\n".join(out) + "\n"


def _state_label(entry: Mapping[str, Any]) -> str:
    state = "(clean)" if entry.get("state") is None else str(entry["state"])
    return state + (f"@{entry['handoff']}" if entry.get("handoff") else "")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _terminal_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Plain columns: the first (the agent) left-aligned, numbers right-aligned with one
    decimal, ``-`` where the figure is missing."""
    table = tabulate(
        rows, headers=list(header), tablefmt="plain", floatfmt=".1f", missingval="-",
        numalign="right", stralign="right", disable_numparse=[0],
        colalign=["left"] + ["right"] * (len(header) - 1),
    )  # fmt: skip
    return table.splitlines()


def render_terminal(summary: Mapping[str, Any]) -> list[str]:
    """Short terminal report: one line per agent in plain words, one headline table per track
    (and overall when there are several tracks), a legend, then the infrastructure figures and
    the excluded items. Agents in the summary's order. Lines <= 100 chars."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    tracks = sorted({t for block in agents.values() for t in block.get("tracks", {})})
    scopes = tracks + (["overall"] if len(tracks) > 1 else [])
    lines: list[str] = plain_headlines(summary)
    for scope in scopes:
        found: list[tuple[str, Mapping[str, Any]]] = []
        for agent, block in agents.items():
            m = block.get("overall") if scope == "overall" else block.get("tracks", {}).get(scope)
            if m is not None:
                found.append((agent, m))
        if not found:
            continue
        # In the summary's agent order (the command line's, in a run), the same in every table.
        lines.append(f"SWE-Residual [{scope}] (success %, gap in points)")
        rows = [
            [_clip(agent, 32), m.get("residual"), m.get("clean"), m.get("gap"), m.get("cond_fail"),
             m.get("n_tasks", 0), m.get("n_states", 0)]
            for agent, m in found
        ]  # fmt: skip
        lines += _terminal_table(["agent", "residual", "clean", "gap", "condfail", "tasks", "states"], rows)
        predecessors = sorted({p for _, m in found for p in (m.get("by_predecessor") or {})})
        if predecessors:
            rows = []
            for agent, m in found:
                groups = m.get("by_predecessor") or {}
                cells = [
                    f"{_pct(g.get('residual'))}/{_pct(g.get('clean'))}" if (g := groups.get(p)) else "-"
                    for p in predecessors
                ]
                rows.append([_clip(agent, 32), *cells])
            header = ["by predecessor: residual/clean", *(_clip(p, 17) for p in predecessors)]
            lines += _terminal_table(header, rows)
    lines += handoff_terminal(summary, _clip)
    if agents:  # the a/b line only under a by-predecessor table
        with_pairs = any(line.startswith("by predecessor") for line in lines)
        lines += TERMINAL_LEGEND if with_pairs else TERMINAL_LEGEND[:-1]
    if summary.get("comparison"):  # the one comparison line that matters most
        lines.append(headline_line(summary["comparison"], single_scope=len(tracks) == 1, width=TERMINAL_WIDTH))
    lines += oracle_lines(summary)
    lines += fidelity_terminal(summary, _clip)
    lines += skipped_terminal(summary)
    infra = summary.get("infra", {})
    lines.append(
        f"infra: {infra.get('items', 0)} items, {infra.get('retried', 0)} retried, "
        f"{infra.get('unresolved', 0)} unresolved (excluded, not failures)"
    )
    for e in infra.get("excluded") or []:
        state = e.get("state") if e.get("state") is not None else "clean"
        state = f"{state}@{e['handoff']}" if e.get("handoff") else state
        error = str(e.get("error") or "").replace("\n", " ")
        lines.append(f"  excluded: {e.get('agent')} {e.get('task')} [{state}]: {error}")
    failed = infra.get("verifier_failed") or []
    if failed:
        lines.append(f"verifier failed on the agent's final state (works on the clean state; failures): {len(failed)}")
    for e in failed:
        lines.append(f"  failed: {e.get('agent')} {e.get('task')} [{_state_label(e).strip('()')}]")
    return [_clip(line, TERMINAL_WIDTH) for line in lines]

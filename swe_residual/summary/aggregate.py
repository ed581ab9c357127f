"""Aggregate run records into ``summary.json`` and render it (Markdown report, terminal lines).

``build_summary`` is computed from run records alone, so shard results merge by concatenation:
records are keyed by :func:`swe_residual.trial.records.record_key` (agent, track, task, start, state)
and the last record of a key wins, so merging the same file twice gives the same summary.
Nothing is rounded in the summary dict; only the renderers round.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

from swe_residual.agents.identity import check_agent_configs
from swe_residual.handoff.metrics import primary_records
from swe_residual.handoff.summary import HANDOFF_SECTIONS, handoff_summary
from swe_residual.metrics.acceptance import acceptance_bias
from swe_residual.metrics.comparison import clip_left, comparison, headline_line
from swe_residual.metrics.headline import (
    Record,
    RecordLike,
    dropped_tasks,
    headline,
    is_excluded,
    pass_at_k_per_task,
    short_starts,
    task_table,
)  # fmt: skip
from swe_residual.metrics.intervals import (
    METHOD,
    T_METHOD,
    Uncertainty,
    gap_power,
    percent_bound,
    task_intervals,
)
from swe_residual.metrics.over_tasks import difference_interval, mean_interval
from swe_residual.metrics.rollout_noise import disagreement_intervals, variance_splits
from swe_residual.run.status import SKIPPED_SECTION, STATUS, partial_lines
from swe_residual.summary import meanings
from swe_residual.summary.fidelity import FIDELITY_SECTION, fidelity_summary
from swe_residual.summary.model import (
    AgentInfra,
    AgentSummary,
    Comparison,
    HandoffView,
    Infra,
    OracleSummary,
    ScopeMetrics,
    Summary,
    as_summary,
)  # fmt: skip
from swe_residual.summary.names import distinct_names
from swe_residual.summary.oracle import ORACLE_SECTION, oracle_summary
from swe_residual.summary.render import (
    TERMINAL_WIDTH,
    markdown_lines,
    markdown_section,
    markdown_table,
    md_cell,
    terminal_across,
    terminal_section,
    terminal_table,
)
from swe_residual.summary.tables import (
    ACCEPTANCE,
    ACCEPTANCE_NOTE,
    AGENT,
    CLEAN,
    COND_FAIL,
    CONTRADICTED,
    CONTRADICTED_LINE,
    DISAGREE,
    EXCLUDED,
    FAILED_ITEMS,
    FAILED_LINE,
    GAP,
    HEADLINE,
    LEFT_OUT,
    LEFT_OUT_SECTION,
    NOISE_SECTION,
    PAIRS,
    PAIRS_NOTE,
    PASS_AT_K_CLEAN,
    PASS_AT_K_RESIDUAL,
    POWER,
    POWER_SECTION,
    PREDECESSOR,
    PREDECESSOR_NAME,
    PREDECESSOR_NOTE,
    RESIDUAL,
    ROLLOUT_NOISE,
    PredecessorRow,
    Scopes,
)  # fmt: skip
from swe_residual.trial.record_model import as_records
from swe_residual.trial.records import dedupe_records
from swe_residual.trial.values import Termination, Track

__all__ = [
    "ACCEPTANCE_TRACK", "DURATION_KEYS", "SCHEMA", "build_summary", "in_agent_order", "infra_summary",
    "plain_headlines", "render_markdown", "render_terminal", "summarize",
]  # fmt: skip

SCHEMA = 1
#: The track whose acceptance-bias figures ``overall`` carries. Table 4 is computed on DeepSWE
#: (the repo track) alone: "The analysis in Section 5.4 is limited to DeepSWE" (Appendix D), and
#: Kept / Left-out / Same failing mean something else on a machine state, so the machine track
#: is reported on its own and never pooled into an overall acceptance-bias figure.
ACCEPTANCE_TRACK = Track.REPO
#: the phases whose median seconds per item ``infra.by_agent`` holds
DURATION_KEYS = ("setup_sec", "agent_sec", "verify_sec", "wall_sec")
assert DURATION_KEYS == tuple(f.name for f in fields(AgentInfra))[2:], "AgentInfra holds every phase"


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
    # A passing reward file its per-test reports contradicted: failures, listed with the reason.
    contradicted = sorted(
        ({"agent": r.agent, "task": r.task, "state": r.state, "reason": r.contradicted,
          **({"handoff": r.handoff} if r.handoff else {})}
         for r in records if r.contradicted and not is_excluded(r)),
        key=order,
    )
    return {
        "retried": sum(1 for r in records if len(r.attempts) > 1),
        "unresolved": len(excluded),
        "items": len(records),
        "excluded": excluded,
        "verifier_failed": verifier_failed,
        "by_agent": _durations(records),
        **({"contradicted": contradicted} if contradicted else {}),
    }


def _block(records: Sequence[Record], *, pooled: bool, uncertainty: Uncertainty) -> dict[str, Any]:
    block = headline(records, key_by_track=pooled)
    tasks = task_table(records, key_by_track=pooled)
    # The tasks and states behind CondFail (C_A: tasks solved from the Clean Start), which
    # Figure 2 of the report shows next to its bars. With rollouts, every task solved from Clean
    # Start at least once (it has a weight in CondFail).
    solved = [t for t in tasks.values() if t.clean > 0]
    block["cond_fail_tasks"] = len(solved)
    block["cond_fail_states"] = sum(len(t.states) for t in solved)
    if pooled:
        # overall: the repo track's Table 4 figures (null without repo runs), never a pool
        repo = [r for r in records if r.track == ACCEPTANCE_TRACK]
        block["acceptance_bias"] = acceptance_bias(repo) if repo else None
    else:
        block["acceptance_bias"] = acceptance_bias(records)
    block["intervals"] = task_intervals(tasks, uncertainty).to_json()
    block["power"] = gap_power(tasks, uncertainty.confidence)
    block["dropped"] = dropped_tasks(records, key_by_track=pooled)
    passes = block.get("pass_at_k")
    if passes is not None:  # with rollouts: pass@K's intervals, the starts it leaves out, the noise
        k = passes["k"]
        runs = list(tasks.values())
        per_task = pass_at_k_per_task(runs, k)
        conf = uncertainty.confidence
        estimates = {"residual": mean_interval([r for _, r in per_task], conf),
                     "clean": mean_interval([c for c, _ in per_task], conf),
                     "gap": difference_interval([c for c, _ in per_task], [r for _, r in per_task], conf)}
        passes["intervals"] = {f: percent_bound(e) for f, e in estimates.items()}
        block["short_starts"] = short_starts(runs, k)
        block["disagreement"]["intervals"] = {
            f: percent_bound(e) for f, e in disagreement_intervals(runs, conf).items()}
        block["rollout_variance"] = variance_splits(runs)
    return block


def summarize(records: Iterable[RecordLike], *, compare: bool = False,
              sources: Sequence[str] | None = None, uncertainty: Uncertainty | None = None) -> Summary:
    """The DESIGN section 5 summary as a typed :class:`~swe_residual.summary.model.Summary`
    (its ``to_json()`` is ``summary.json``): per agent ``tracks`` and ``overall``, and ``infra``.

    With ``compare`` it also holds ``comparison`` (rankings, reversals, states no agent
    solved; see :mod:`swe_residual.metrics.comparison`): opt-in so the section 5 layout stays exact.
    Raises `AgentConfigConflict` when one agent name carries two configurations (`sources`,
    parallel to `records`, name where each record came from in the error). `uncertainty`
    (default: 95%, 2000 resamples, seed 0) makes every figure's bootstrap interval and the
    paired comparisons (:mod:`swe_residual.metrics.intervals`); it is recorded in the summary.
    """
    uncertainty = uncertainty or Uncertainty()
    records = as_records(records)
    check_agent_configs(records, sources)
    recs = dedupe_records(records)
    # With several handoff views the headline tables show one (blind, when it ran): a state run
    # under two views would count twice. Every view is under "by_handoff", present only then.
    shown = primary_records(recs)
    by_agent: dict[str, list[Record]] = {}
    for r in shown:
        by_agent.setdefault(str(r.agent), []).append(r)
    agents: dict[str, AgentSummary] = {}
    for agent in sorted(by_agent):
        agent_recs = by_agent[agent]
        by_track: dict[str, list[Record]] = {}
        for r in agent_recs:
            by_track.setdefault(str(r.track), []).append(r)
        agents[agent] = AgentSummary(
            tracks={t: ScopeMetrics.from_json(_block(by_track[t], pooled=False, uncertainty=uncertainty))
                    for t in sorted(by_track)},
            overall=ScopeMetrics.from_json(_block(agent_recs, pooled=True, uncertainty=uncertainty)),
        )
    infra = infra_summary(recs)
    fidelity = fidelity_summary(recs)
    if fidelity is not None:  # under infra, only with machine-track states: section 5's keys stay as they are
        infra["fidelity"] = fidelity
    views = handoff_summary(recs)
    oracle = oracle_summary(shown)
    partial = Summary(schema=SCHEMA, agents=agents, uncertainty=uncertainty)
    return replace(
        partial,
        infra=Infra.from_json(infra),
        comparison=Comparison.from_json(comparison(partial.to_json(), shown, uncertainty)) if compare else None,
        by_handoff={a: {v: HandoffView.from_json(b) for v, b in blocks.items()} for a, blocks in views.items()}
        if views is not None else None,
        oracle=OracleSummary.from_json(oracle) if oracle is not None else None,
    )


def build_summary(records: Iterable[RecordLike], *, compare: bool = False,
                  sources: Sequence[str] | None = None, uncertainty: Uncertainty | None = None) -> dict[str, Any]:
    """:func:`summarize` as the dict ``summary.json`` holds:
    ``{"schema": 1, "agents": {AGENT: {"tracks": {TRACK: {...}}, "overall": {...}}}, "infra"}``."""
    return summarize(records, compare=compare, sources=sources, uncertainty=uncertainty).to_json()


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
    comparison = summary.get("comparison")
    if isinstance(comparison, Mapping) and isinstance(comparison.get("pairs"), Mapping):
        out["comparison"] = {**comparison, "pairs": {scope: _pairs_in_order(pairs, order)
                                                     for scope, pairs in comparison["pairs"].items()}}
    return out


def _pairs_in_order(pairs: Sequence[Mapping[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    """Each pair as `a - b` with `a` the agent given first (the computation orders them by name),
    the pairs in the agents' order: `oracle - noop` for `--agent=oracle --agent=noop`."""
    rank = {agent: index for index, agent in enumerate(order)}

    def position(agent: str) -> tuple[int, str]:
        return rank.get(agent, len(rank)), agent

    oriented = [_flipped(pair) if position(pair["b"]) < position(pair["a"]) else dict(pair) for pair in pairs]
    return sorted(oriented, key=lambda pair: (position(pair["a"]), position(pair["b"])))


def _flipped(pair: Mapping[str, Any]) -> dict[str, Any]:
    """b - a from a - b: every difference negated, every interval mirrored; p-values and verdicts
    (two-sided) are the same."""
    out = {**pair, "a": pair["b"], "b": pair["a"]}
    for figure in ("residual", "clean", "gap"):
        if pair.get(figure) is not None:
            out[figure] = -pair[figure]
        interval = pair.get(f"{figure}_interval")
        if interval is not None:
            out[f"{figure}_interval"] = [-interval[1], -interval[0]]
    return out


# --------------------------------------------------------------------------- rendering


def _plain_number(value: float) -> str:
    """A figure in plain words: whole when it is (nearly) whole, else one decimal."""
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def plain_headline(agent: str, figures: ScopeMetrics | Mapping[str, Any]) -> str:
    """One agent's overall figures in words, for a reader who has not read the paper:
    "noop: 0% from a clean start, 0% from inherited work, 0 points lost"."""
    if not isinstance(figures, ScopeMetrics):
        figures = ScopeMetrics.from_json(figures)
    clean, residual, gap = figures.clean, figures.residual, figures.gap
    if clean is None and residual is None:
        return f"{agent}: no scored task"
    parts = [f"{_plain_number(clean)}% from a clean start" if clean is not None else "no clean start scored",
             f"{_plain_number(residual)}% from inherited work" if residual is not None else "no inherited work scored"]
    if gap is not None:
        parts.append(f"{_plain_number(gap)} points lost" if gap >= 0 else f"{_plain_number(-gap)} points gained")
    return f"{agent}: " + ", ".join(parts)


def plain_headlines(summary: Summary | Mapping[str, Any]) -> list[str]:
    """One line per agent (in the summary's agent order), from its overall figures."""
    return [plain_headline(agent, block.overall or ScopeMetrics())
            for agent, block in as_summary(summary).agents.items()]


#: What the terminal's columns mean (and the `a/b` cells of the by-predecessor table).
TERMINAL_LEGEND = (
    f"legend: {RESIDUAL.terminal} = {RESIDUAL.note};",
    *(f"  {column.terminal} = {column.note};" for column in (CLEAN, GAP, COND_FAIL)),
    "  a/b under 'by predecessor' = residual/clean on the tasks of that predecessor's states",
)
#: summary.md's line breaks of the headline's paragraph and the pairs' (as it has always had them)
HEADLINE_NOTE_WIDTHS = (78, 88, 93, 94)
PAIRS_NOTE_WIDTHS = (90,)


def uncertainty_line(summary: Summary) -> str | None:
    """What the brackets are, e.g. ``[low, high]: 95% score/Newcombe/t intervals over tasks
    (score-over-tasks, docs/uncertainty.md)``: rates by the score interval, the Gap by
    Newcombe's, a pair's differences by t; None for a summary without intervals."""
    u = summary.uncertainty
    if u is None:
        return None
    conf = f"{100 * u.confidence:g}%"
    if u.method == METHOD:
        return f"[low, high]: {conf} score/Newcombe/t intervals over tasks ({u.method}, docs/uncertainty.md)"
    if u.method == T_METHOD:  # a summary of the method before the score interval, read back
        return f"[low, high]: {conf} t interval over tasks ({u.method}, docs/uncertainty.md)"
    # an older summary, read back: say what made its bounds
    return f"[low, high]: {conf} paired bootstrap interval over tasks ({u.resamples} resamples, seed {u.seed})"


def _compared(summary: Summary) -> bool:
    return summary.comparison is not None and summary.comparison.n_agents > 1 and bool(PAIRS.rows_of(summary))


def rollouts_of(s: Summary) -> int | None:
    """K of a summary of runs with rollouts (the most any figures were computed over); None for
    one rollout per start, whose outputs say nothing of rollouts."""
    ks = [scope.pass_at_k.k for block in s.agents.values() for _, scope in [*block.tracks.items(),
          ("overall", block.overall)] if scope is not None and scope.pass_at_k is not None]
    return max(ks) if ks else None


def rollouts_note(k: int) -> str:
    return (f"With {k} rollouts per start, a start's outcome is the mean of its rollouts; pass@K is "
            f"{meanings.PASS_AT_K.format(k=k)}; Disagree is {meanings.DISAGREE}.")


def render_markdown(summary: Summary | Mapping[str, Any]) -> str:
    """The paper's tables as Markdown: headline (Table 3 + CondFail), predecessor groups
    (Table 8), acceptance bias (Table 4), and the infrastructure figures."""
    s = as_summary(summary)
    out: list[str] = ["# SWE-Residual summary", ""]
    notices = STATUS.rows_of(s)
    if notices:
        out += [*markdown_table(STATUS, notices), ""]
    if s.agents:
        out += ["In short (overall):", ""] + [f"- {md_cell(line)}" for line in plain_headlines(s)] + [""]

    out += ["## Residual Start vs. matched Clean Start", ""]
    out += markdown_lines(meanings.HEADLINE_NOTE, HEADLINE_NOTE_WIDTHS)
    line = uncertainty_line(s)
    out += ([f"{line}; one task gives none."] if line else []) + [""]
    k = rollouts_of(s)
    if k is not None:  # only with rollouts: a one-rollout summary.md is what it always was
        out += [rollouts_note(k), ""]
    out += markdown_table(HEADLINE, HEADLINE.rows_of(s)) + [""]
    for section in (LEFT_OUT_SECTION, POWER_SECTION, NOISE_SECTION):
        out += markdown_section(section, s)

    if _compared(s):
        out += ["## Agents compared", ""]
        out += [*markdown_lines(PAIRS_NOTE, PAIRS_NOTE_WIDTHS), ""]
        out += markdown_table(PAIRS, PAIRS.rows_of(s)) + [""]

    out += ["## By predecessor agent", ""]
    out += [*PREDECESSOR_NOTE.split("\n"), ""]
    out += markdown_table(PREDECESSOR, PREDECESSOR.rows_of(s)) + [""]

    out += ["## Acceptance bias", ""]
    out += [*ACCEPTANCE_NOTE.split("\n"), ""]
    out += markdown_table(ACCEPTANCE, ACCEPTANCE.rows_of(s)) + [""]

    for section in HANDOFF_SECTIONS:
        out += markdown_section(section, s)
    out += markdown_section(ORACLE_SECTION, s)

    infra = s.infra
    out += ["## Infrastructure", ""]
    out += [
        f"- items: {infra.items}",
        f"- retried (more than one attempt): {infra.retried}",
        f"- unresolved infra errors (excluded, not failures): {infra.unresolved}",
    ]
    if infra.excluded:
        out += [""] + markdown_table(EXCLUDED, EXCLUDED.rows_of(s))
    if infra.verifier_failed:
        out += ["", f"- {FAILED_LINE}: {len(infra.verifier_failed)}", ""]
        out += markdown_table(FAILED_ITEMS, FAILED_ITEMS.rows_of(s))
    if infra.contradicted:
        out += ["", f"- {CONTRADICTED_LINE}: {len(infra.contradicted)}", ""]
        out += markdown_table(CONTRADICTED, CONTRADICTED.rows_of(s))
    # after the infrastructure's list, each after a blank line and without one at the end
    for section in (FIDELITY_SECTION, SKIPPED_SECTION):
        lines = markdown_section(section, s)
        if lines:
            out += [""] + lines[:-1]
    return "\n".join(out) + "\n"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


AGENT_WIDTH = 32
VIEWS_AGENT_WIDTH = 26


def _agent_cell(text: str) -> str:
    return _clip(text, AGENT_WIDTH)


def _pair(row: PredecessorRow) -> str:
    # the terminal's by-predecessor cell: residual/clean (TERMINAL_LEGEND says so)
    return f"{RESIDUAL.text(row)}/{CLEAN.text(row)}"


def render_terminal(summary: Summary | Mapping[str, Any]) -> list[str]:
    """Short terminal report: one line per agent in plain words, one headline table per track
    (and overall when there are several tracks), a legend, then the infrastructure figures and
    the excluded items. Agents in the summary's order. Lines <= 100 chars."""
    s = as_summary(summary)
    lines: list[str] = partial_lines(s) + plain_headlines(s)
    shown = distinct_names(s.agents, AGENT_WIDTH)  # two agents never one cell

    def _agent_cell(text: str) -> str:
        return shown.get(text) or _clip(text, AGENT_WIDTH)
    headline_rows = HEADLINE.rows_of(s, Scopes.SHARED)
    predecessor_rows = PREDECESSOR.rows_of(s, Scopes.SHARED)
    for scope in s.scopes():
        found = [row for row in headline_rows if row.scope == scope]
        if not found:
            continue
        # In the summary's agent order (the command line's, in a run), the same in every table.
        lines.append(f"SWE-Residual [{scope}] (success %, gap in points)")
        # compact: the Gap's interval leaves no room for tabulate's padding of the headers
        lines += terminal_table(HEADLINE, found, first=_agent_cell, compact=True)
        lines += terminal_across([row for row in predecessor_rows if row.scope == scope],
                                 keys=[row.agent for row in found], key=AGENT, across=PREDECESSOR_NAME, cell=_pair,
                                 corner="by predecessor: residual/clean", first=_agent_cell,
                                 head=lambda name: _clip(name, 17))
    left_out = LEFT_OUT.rows_of(s)
    if left_out:
        lines.append("left out of the figures:")
        lines += terminal_table(LEFT_OUT, left_out, first=_agent_cell)
    # At a glance: the rows with a figure; those without are counted by reason (summary.md and
    # report.html list them all).
    power_all = POWER.rows_of(s)
    power = [replace(row, of=clip_left(row.of, AGENT_WIDTH)) for row in power_all if row.detectable is not None]
    if power:
        lines.append("smallest difference detectable (points; t test, 80% power, the run's confidence):")
        lines += terminal_table(POWER, power)
    without = Counter(row.note or "no figure" for row in power_all if row.detectable is None)
    if without:
        if not power:
            lines.append("smallest difference detectable (points; t test, 80% power, the run's confidence):")
        reasons = "; ".join(f"{count} {why}" for why, count in without.most_common())
        lines.append(f"  no figure for {sum(without.values())} of {len(power_all)}: {reasons}")
    noise = ROLLOUT_NOISE.rows_of(s)
    if noise:
        lines.append("rollout noise: % of each rate's per-task variance within tasks (between rollouts):")
        lines += terminal_table(ROLLOUT_NOISE, noise, first=_agent_cell)
    # nine columns must fit: a shorter agent name, no padding of the headers
    lines += terminal_section(HANDOFF_SECTIONS[0], s, first=lambda agent: _clip(agent, VIEWS_AGENT_WIDTH), compact=True)
    if s.agents:  # the a/b line only under a by-predecessor table
        with_pairs = any(line.startswith("by predecessor") for line in lines)
        lines += TERMINAL_LEGEND if with_pairs else TERMINAL_LEGEND[:-1]
        k = rollouts_of(s)
        if k is not None:
            lines += [f"  with {k} rollouts per start: {PASS_AT_K_RESIDUAL.terminal}/{PASS_AT_K_CLEAN.terminal} = "
                      f"{meanings.PASS_AT_K.format(k=k)};", f"  {DISAGREE.terminal} = {meanings.DISAGREE}"]
    if s.agents and uncertainty_line(s):
        lines.append(f"  gap {uncertainty_line(s)}")
    if s.comparison is not None:  # the one comparison line that matters most
        lines.append(headline_line(s.comparison.to_json(), single_scope=len(s.tracks) == 1, width=TERMINAL_WIDTH))
    if _compared(s):  # the pairs on the widest scope (overall with several tracks)
        widest = s.scopes()[-1] if s.scopes() else None
        # names kept by their end, where agent specs differ (as the reversal line does)
        pairs = [replace(row, pair=replace(row.pair, a=clip_left(row.pair.a, 20), b=clip_left(row.pair.b, 20)))
                 for row in PAIRS.rows_of(s) if row.scope == widest]
        if pairs:
            lines.append(f"agents compared [{widest}] (a - b on common tasks, points; holm: after Holm's adjustment)")
            lines += terminal_table(PAIRS, pairs)
    lines += terminal_section(ORACLE_SECTION, s)
    lines += terminal_section(FIDELITY_SECTION, s)
    lines += terminal_section(SKIPPED_SECTION, s)
    infra = s.infra
    lines.append(
        f"infra: {infra.items} items, {infra.retried} retried, "
        f"{infra.unresolved} unresolved (excluded, not failures)"
    )
    if infra.excluded:  # an error many items share (a set-up layer that cannot be built): said once, whole
        lines += terminal_table(EXCLUDED, EXCLUDED.rows_of(s), first=_agent_cell)
    for line, table, items in ((FAILED_LINE, FAILED_ITEMS, infra.verifier_failed),
                               (CONTRADICTED_LINE, CONTRADICTED, infra.contradicted)):
        if items:
            lines.append(f"{line}: {len(items)}")
            lines += terminal_table(table, table.rows_of(s), first=_agent_cell)
    return [_clip(line, TERMINAL_WIDTH) for line in lines]

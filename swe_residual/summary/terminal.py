"""The terminal's summary: one line per agent in plain words, one headline table per track,
a legend, the comparison's line, then the infrastructure figures (lines <= 100 chars)."""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import replace

from swe_residual.handoff.summary import handoff_terminal
from swe_residual.metrics.comparison import clip_left
from swe_residual.run.status import partial_text, skipped_terminal
from swe_residual.summary.comparison import headline_line
from swe_residual.summary.fidelity import fidelity_terminal
from swe_residual.summary.model import Summary
from swe_residual.summary.names import distinct_names
from swe_residual.summary.oracle import oracle_lines
from swe_residual.summary.render import terminal_across, terminal_table
from swe_residual.summary.tables import (
    AGENT, CLEAN, HEADLINE, LEFT_OUT, PAIRS, POWER, PREDECESSOR, PREDECESSOR_NAME, RESIDUAL, ROLLOUT_NOISE,
    PredecessorRow, Scopes, excluded_groups, state_label,
)  # fmt: skip
from swe_residual.summary.words import compared, plain_headlines, rollouts_of, uncertainty_line

__all__ = ["TERMINAL_LEGEND", "TERMINAL_WIDTH", "render_terminal"]

TERMINAL_WIDTH = 100
SHARED_ERROR_LINES = 4  # an error many excluded items share, wrapped on at most this many lines

#: What the terminal's columns mean (and the `a/b` cells of the by-predecessor table).
TERMINAL_LEGEND = (
    "legend: residual = % solved from a Residual State (work a predecessor left, claimed done);",
    "  clean = % solved from a clean start on the same tasks; gap = clean - residual (points lost);",
    "  condfail = % of Residual States failed on the tasks the agent solves from a clean start;",
    "  a/b under 'by predecessor' = residual/clean on the tasks of that predecessor's states",
)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


AGENT_WIDTH = 32


def _pair(row: PredecessorRow) -> str:
    # the terminal's by-predecessor cell: residual/clean (TERMINAL_LEGEND says so)
    return f"{RESIDUAL.text(row)}/{CLEAN.text(row)}"


def render_terminal(summary: Summary) -> list[str]:
    """Short terminal report: one line per agent in plain words, one headline table per track
    (and overall when there are several tracks), a legend, then the infrastructure figures and
    the excluded items. Agents in the summary's order. Lines <= 100 chars."""
    s = summary
    partial = partial_text(s)
    lines: list[str] = ([partial] if partial is not None else []) + plain_headlines(s)
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
    lines += handoff_terminal(s, _clip)
    if s.agents:  # the a/b line only under a by-predecessor table
        with_pairs = any(line.startswith("by predecessor") for line in lines)
        lines += TERMINAL_LEGEND if with_pairs else TERMINAL_LEGEND[:-1]
        k = rollouts_of(s)
        if k is not None:
            lines += [f"  with {k} rollouts per start: res@K/cln@K = pass@{k} (unbiased estimator);",
                      "  disagree = % of Residual States whose rollouts disagree (some solved, some not)"]
    if s.agents and uncertainty_line(s):
        lines.append(f"  gap {uncertainty_line(s)}")
    if s.comparison is not None:  # the one comparison line that matters most
        lines.append(headline_line(s.comparison, single_scope=len(s.tracks) == 1, width=TERMINAL_WIDTH))
    if compared(s):  # the pairs on the widest scope (overall with several tracks)
        widest = s.scopes()[-1] if s.scopes() else None
        # names kept by their end, where agent specs differ (as the reversal line does)
        pairs = [replace(row, pair=row.pair.model_copy(update={"a": clip_left(row.pair.a, 20),
                                                               "b": clip_left(row.pair.b, 20)}))
                 for row in PAIRS.rows_of(s) if row.scope == widest]
        if pairs:
            lines.append(f"agents compared [{widest}] (a - b on common tasks, points; holm: after Holm's adjustment)")
            lines += terminal_table(PAIRS, pairs)
    lines += oracle_lines(s)
    lines += fidelity_terminal(s, _clip)
    lines += skipped_terminal(s)
    infra = s.infra
    lines.append(
        f"infra: {infra.items} items, {infra.retried} retried, "
        f"{infra.unresolved} unresolved (excluded, not failures)"
    )
    for group in excluded_groups(infra.excluded):
        error = str(group.error or "").replace("\n", " ")
        if len(group.items) == 1:
            e = group.items[0]
            state = e.state if e.state is not None else "clean"
            state = f"{state}@{e.handoff}" if e.handoff else state
            lines.append(f"  excluded: {e.agent} {e.task} [{state}]: {error}")
            continue
        # One error shared by many items (a set-up layer that cannot be built): said once, whole.
        lines.append(f"  excluded: {group.agent}: {group.state} of {group.task}, all with one error:")
        lines += textwrap.wrap(error, TERMINAL_WIDTH - 4, initial_indent="    ", subsequent_indent="    ",
                               max_lines=SHARED_ERROR_LINES, placeholder=" ...")
    if infra.verifier_failed:
        lines.append(f"verifier failed on the agent's final state (works on the clean state; failures): "
                     f"{len(infra.verifier_failed)}")
    for e in infra.verifier_failed:
        lines.append(f"  failed: {e.agent} {e.task} [{state_label(e).strip('()')}]")
    if infra.contradicted:
        lines.append(f"passing reward contradicted by the per-test reports (failures): {len(infra.contradicted)}")
    for c in infra.contradicted:
        reason = str(c.reason or "").removeprefix("contradicted reward: ")
        lines.append(f"  contradicted: {c.agent} {c.task} [{state_label(c).strip('()')}]: {reason}")
    return [_clip(line, TERMINAL_WIDTH) for line in lines]

"""The per-scope tables: each agent's figures on each scope (headline, by predecessor,
acceptance bias) and under each handoff view (by view, takeover cost, acceptance bias).

The outputs list scopes in different ways, as they always have (:class:`Scopes`): summary.md
shows each agent's own tracks (and ``overall`` when it ran several), the terminal and
report.html every track of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS
from swe_residual.report import meanings
from swe_residual.metrics.summary.model import (
    AcceptanceBias, HandoffView, PredecessorGroup, ScopeMetrics, Summary, TakeoverCost,
)  # fmt: skip
from swe_residual.report.tables.table import Align, Column, Format, Scopes, Table, pct

__all__ = [
    "ACCEPTANCE", "ACCEPTANCE_COLUMNS", "ACCEPTANCE_NOTE", "ACCEPTANCE_TITLES", "AGENT", "CLEAN", "COND_FAIL",
    "DISAGREE", "GAP", "HANDOFF_ACCEPTANCE", "HANDOFF_VIEWS", "HEADLINE", "PASS_AT_K_CLEAN", "PASS_AT_K_RESIDUAL",
    "PREDECESSOR", "PREDECESSOR_NAME", "PREDECESSOR_NOTE", "RESIDUAL", "TAKEOVER", "TRACK", "VIEW",
    "AcceptanceRow", "PredecessorRow", "ScopeRow", "TakeoverRow", "ViewRow", "key_column", "scope_rows",
]  # fmt: skip




@dataclass(frozen=True)
class ScopeRow:
    """One agent's figures on one scope (a track or ``overall``)."""

    agent: str
    scope: str
    figures: ScopeMetrics


@dataclass(frozen=True)
class PredecessorRow:
    agent: str
    scope: str
    predecessor: str
    figures: PredecessorGroup


@dataclass(frozen=True)
class AcceptanceRow:
    """One agent's acceptance bias on one track (under one handoff view, in the by-view table)."""

    agent: str
    scope: str
    bias: AcceptanceBias
    #: the scope's headline figures (the acceptance-bias table shows its Gap beside the bias)
    figures: ScopeMetrics = field(default_factory=ScopeMetrics)
    view: str | None = None


@dataclass(frozen=True)
class ViewRow:
    agent: str
    view: str
    figures: HandoffView


@dataclass(frozen=True)
class TakeoverRow:
    agent: str
    view: str
    quantity: str
    cost: TakeoverCost


def _scope_list(summary: Summary, scopes: Scopes) -> Callable[[Any], list[tuple[str, ScopeMetrics | None]]]:
    if scopes is Scopes.OWN:
        return lambda block: list(block.own_scopes())
    if scopes is Scopes.TRACKS:
        return lambda block: list(block.tracks.items())
    shared = summary.scopes()
    return lambda block: [(scope, block.scope(scope)) for scope in shared]


def scope_rows(summary: Summary, scopes: Scopes) -> list[ScopeRow]:
    listed = _scope_list(summary, scopes)
    rows = []
    for agent, block in summary.agents.items():
        for scope, figures in listed(block):
            if figures is None and scopes is Scopes.SHARED:
                continue
            rows.append(ScopeRow(agent, scope, figures or ScopeMetrics()))
    return rows


def predecessor_rows(summary: Summary, scopes: Scopes) -> list[PredecessorRow]:
    return [PredecessorRow(row.agent, row.scope, predecessor, group)
            for row in scope_rows(summary, scopes) for predecessor, group in row.figures.by_predecessor.items()]


def acceptance_rows(summary: Summary, scopes: Scopes) -> list[AcceptanceRow]:
    return [AcceptanceRow(row.agent, row.scope, row.figures.acceptance_bias or AcceptanceBias(), row.figures)
            for row in scope_rows(summary, scopes)]


def view_rows(summary: Summary, scopes: Scopes) -> list[ViewRow]:
    return [ViewRow(agent, view, figures) for agent, view, figures in summary.views()]


def takeover_rows(summary: Summary, scopes: Scopes) -> list[TakeoverRow]:
    return [TakeoverRow(agent, view, name, cost) for agent, view, figures in summary.views()
            for name, cost in figures.takeover.items()]


def view_acceptance_rows(summary: Summary, scopes: Scopes) -> list[AcceptanceRow]:
    return [AcceptanceRow(agent, track, bias, view=view) for agent, view, figures in summary.views()
            for track, bias in figures.acceptance_bias.items()]


# --------------------------------------------------------------------------- columns


def key_column(title: str, attribute: str, **more: Any) -> Column:
    return Column(title, lambda row: getattr(row, attribute), Format.TEXT, Align.LEFT, **more)


AGENT = key_column("Agent", "agent", terminal="agent")
TRACK = key_column("Track", "scope")
VIEW = key_column("View", "view", terminal="view")
PREDECESSOR_NAME = key_column("Predecessor", "predecessor", note="the agent that left the Residual State")


def _interval(figure: str) -> Callable[[Any], tuple[float, float] | None]:
    # Only an agent's figures on a scope have intervals (not a predecessor group's).
    def read(row: Any) -> tuple[float, float] | None:
        figures = getattr(row, "figures", None)
        return figures.interval(figure) if isinstance(figures, ScopeMetrics) else None

    return read


RESIDUAL = Column("Residual", lambda r: r.figures.residual, Format.PCT, markdown="Residual (%)", terminal="residual",
                  note=meanings.RESIDUAL, interval=_interval("residual"))
CLEAN = Column("Ref. Clean", lambda r: r.figures.clean, Format.PCT, markdown="Ref. Clean (%)", terminal="clean",
               note=meanings.CLEAN, interval=_interval("clean"))
GAP = Column("Gap", lambda r: r.figures.gap, Format.POINTS, terminal="gap", emphasis=True,
             note=meanings.GAP, interval=_interval("gap"),
             terminal_interval=True)
COND_FAIL = Column("CondFail", lambda r: r.figures.cond_fail, Format.PCT, markdown="CondFail (%)",
                   terminal="condfail", note=meanings.COND_FAIL,
                   interval=_interval("cond_fail"))
# With `--rollouts` above 1 only (a one-rollout run has no such figures, and no such columns).
PASS_AT_K_RESIDUAL = Column(
    "pass@K Residual", lambda r: r.figures.pass_at_k.residual if r.figures.pass_at_k else None, Format.PCT,
    markdown="pass@K Residual (%)", terminal="res@K", given_only=True,
    note=meanings.PASS_AT_K.format(k="K"),
    interval=lambda r: (r.figures.pass_at_k.intervals or {}).get("residual") if r.figures.pass_at_k else None)
PASS_AT_K_CLEAN = Column(
    "pass@K Clean", lambda r: r.figures.pass_at_k.clean if r.figures.pass_at_k else None, Format.PCT,
    markdown="pass@K Clean (%)", terminal="cln@K", given_only=True,
    note=meanings.PASS_AT_K.format(k="K"),
    interval=lambda r: (r.figures.pass_at_k.intervals or {}).get("clean") if r.figures.pass_at_k else None)
DISAGREE = Column(
    "Disagree", lambda r: r.figures.disagreement.residual if r.figures.disagreement else None, Format.PCT,
    markdown="Disagree (%)", terminal="disagree", given_only=True,
    note=meanings.DISAGREE,
    interval=lambda r: (r.figures.disagreement.intervals or {}).get("residual") if r.figures.disagreement else None)
N_TASKS = Column("Tasks", lambda r: r.figures.n_tasks, Format.COUNT, markdown="n_tasks", terminal="tasks")
N_STATES = Column("States", lambda r: r.figures.n_states, Format.COUNT, markdown="n_states", terminal="states")

#: Table 4's columns, in ACCEPTANCE_KEYS order (one title per key; a key without one fails here)
ACCEPTANCE_TITLES = {
    "same_failing": "Same failing",
    "initially_failing_clean": "Init. failing Clean",
    "initially_failing_residual": "Init. failing Residual",
    "kept": "Kept",
    "left_out_clean": "Left-out Clean",
    "left_out_residual": "Left-out Residual",
    "left_out_opened": "Opened",
    "steps_ratio": "Steps",
    "inspected": "Inspected",
    "split_by_kept": "Success above / below median Kept",
}
assert tuple(ACCEPTANCE_TITLES) == ACCEPTANCE_KEYS, "every acceptance-bias key has one column, in order"


def _bias_column(key: str) -> Column:
    title = ACCEPTANCE_TITLES[key]
    note = meanings.ACCEPTANCE[key]
    if key == "split_by_kept":
        return Column(title, lambda r: f"{pct(r.bias.split_by_kept.success_above)} / "
                                       f"{pct(r.bias.split_by_kept.success_below)}", note=note)
    # Steps is a ratio of step counts, every other one a share in %
    return Column(title, lambda r: getattr(r.bias, key), Format.RATIO if key == "steps_ratio" else Format.PCT,
                  note=note)


ACCEPTANCE_COLUMNS = tuple(_bias_column(key) for key in ACCEPTANCE_KEYS)


def _ratio(quantity: str, title: str, terminal: str) -> Column:
    return Column(title, lambda r: r.figures.ratio(quantity), Format.RATIO, terminal=terminal,
                  note=f"{quantity}: {meanings.TAKEOVER_RATIO}")


# --------------------------------------------------------------------------- the tables


#: what the by-predecessor and acceptance-bias tables are, under their titles (summary.md keeps
#: the line breaks)
PREDECESSOR_NOTE = ("Each group: tasks with >= 1 state from the predecessor, only its states averaged,\n"
                    "Clean Start matched on the same tasks.")
ACCEPTANCE_NOTE = ("Normally submitted runs; task-level averages in % (Gap in points);\n"
                   f"Steps = {meanings.ACCEPTANCE['steps_ratio']}; one row per track, never\n"
                   "pooled (Table 4 is the repo track's; the machine track is shown apart).")

HEADLINE = Table(
    "headline", "Residual Start vs. matched Clean Start",
    (AGENT, TRACK, RESIDUAL, CLEAN, GAP, COND_FAIL, PASS_AT_K_RESIDUAL, PASS_AT_K_CLEAN, DISAGREE, N_TASKS,
     N_STATES),
    scope_rows, empty="(no agents)",
)  # fmt: skip

PREDECESSOR = Table(
    "by_predecessor", "By predecessor agent",
    (AGENT, TRACK, PREDECESSOR_NAME, RESIDUAL, CLEAN, GAP, N_TASKS),
    predecessor_rows, empty="(no residual states)", empty_html="No residual states.",
)  # fmt: skip

ACCEPTANCE = Table(
    "acceptance_bias", "Acceptance bias",
    (AGENT, TRACK, GAP, *ACCEPTANCE_COLUMNS),
    acceptance_rows, scopes=Scopes.TRACKS, empty="(no agents)",
)  # fmt: skip

HANDOFF_VIEWS = Table(
    "by_handoff", "By handoff view",
    (AGENT, VIEW, RESIDUAL, CLEAN, GAP, COND_FAIL,
     _ratio("steps", "Steps R/C", "steps x"), _ratio("tokens", "Tokens R/C", "tokens x"),
     _ratio("cost", "Cost R/C", "cost x"), replace(N_TASKS, terminal=None), replace(N_STATES, terminal=None)),
    view_rows,
)  # fmt: skip

TAKEOVER = Table(
    "takeover", "Takeover cost by handoff view",
    (AGENT, VIEW, key_column("Quantity", "quantity"),
     Column("Residual median", lambda r: r.cost.residual_median, Format.NUMBER),
     Column("Clean median", lambda r: r.cost.clean_median, Format.NUMBER),
     Column("R/C", lambda r: r.cost.ratio, Format.RATIO),
     Column("n_tasks", lambda r: r.cost.n_tasks, Format.COUNT),
     Column("n_residual", lambda r: r.cost.n_residual, Format.COUNT)),
    takeover_rows,
)  # fmt: skip

HANDOFF_ACCEPTANCE = Table(
    "acceptance_by_handoff", "Acceptance bias by handoff view",
    (AGENT, VIEW, TRACK, *ACCEPTANCE_COLUMNS),
    view_acceptance_rows,
)  # fmt: skip


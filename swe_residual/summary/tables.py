"""Every table of the summary, declared once: its columns over typed rows, and where its rows
come from.

A :class:`Column` says what a reader sees (its title, and the terminal's or Markdown's when
those differ), how its value is read from a typed row (:mod:`swe_residual.summary.model`), and
how it is written (:class:`Format`). A :class:`Table` is a name, a title, its columns and the
function that lists its rows from a :class:`~swe_residual.summary.model.Summary`. The renderers
(:mod:`swe_residual.summary.render` for the terminal and summary.md,
:func:`swe_residual.report.tables.html_table` for report.html) draw any table, so a metric added
as one column here appears in every output that draws its table (docs/tables.md).

The outputs list scopes in different ways, as they always have (:class:`Scopes`): summary.md
shows each agent's own tracks (and ``overall`` when it ran several), the terminal and
report.html every track of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS
from swe_residual.metrics.power import NO_SPREAD
from swe_residual.summary.model import (
    AcceptanceBias, AgentInfra, Comparison, ContradictedItem, ExcludedItem, FailedItem, HandoffView, Pair, PredecessorGroup, ScopeMetrics,
    Summary, TakeoverCost,
)  # fmt: skip

__all__ = [
    "ACCEPTANCE", "ACCEPTANCE_COLUMNS", "Align", "Column", "CONTRADICTED", "DURATIONS", "EXCLUDED", "FAILED_ITEMS",
    "Format", "HANDOFF_ACCEPTANCE", "HANDOFF_VIEWS", "HEADLINE", "LEFT_OUT", "NOISE_NOTE", "PAIRS", "POWER", "POWER_NOTE", "PREDECESSOR", "RANKS", "ROLLOUT_NOISE", "Scopes",
    "TAKEOVER", "TERMINATIONS",
    "Table", "UNSOLVED", "pct", "rank_rows", "state_label",
]  # fmt: skip


def pct(value: Any, digits: int = 1) -> str:
    """A figure with ``digits`` decimals, ``-`` when there is none (never "-0.0": a difference
    that rounds to zero has no sign)."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


class Format(StrEnum):
    """How a column's values are written (the same in every output)."""

    PCT = "pct"  # a success rate or share in %, one decimal
    POINTS = "points"  # a difference of two rates in points, one decimal
    RATIO = "ratio"  # a plain ratio, two decimals
    SECONDS = "seconds"  # a duration, two decimals
    NUMBER = "number"  # a quantity of any size (tokens, cost), six significant digits
    COUNT = "count"  # a whole number
    TEXT = "text"  # a name, or text the row makes

    def text(self, value: Any) -> str:
        """``value`` as the cell's text; ``-`` where there is none."""
        if value is None:
            return "-"
        if self in (Format.PCT, Format.POINTS):
            return pct(value)
        if self in (Format.RATIO, Format.SECONDS):
            return pct(value, 2)
        if self is Format.NUMBER:
            return f"{value:.6g}"
        return str(value)

    @property
    def is_figure(self) -> bool:
        """A measured figure (not a count or a name): what report.html spreads across scopes."""
        return self in (Format.PCT, Format.POINTS, Format.RATIO, Format.SECONDS, Format.NUMBER)


class Align(StrEnum):
    LEFT = "left"
    RIGHT = "right"


class Scopes(StrEnum):
    """Which scopes a per-scope table lists for each agent."""

    OWN = "own"  # the agent's tracks, then overall unless it ran one track (summary.md)
    SHARED = "shared"  # the run's tracks, then overall when there are several; agents without figures there left out
    SHARED_ALL = "shared_all"  # the same, an agent without figures there shown with none (report.html)
    TRACKS = "tracks"  # the agent's tracks, never overall (acceptance bias: never pooled)


@dataclass(frozen=True)
class Column:
    """One column: ``title`` in report.html (and summary.md unless ``markdown``), ``terminal``
    on the terminal (None: not shown there), the value read from a typed row."""

    title: str
    value: Callable[[Any], Any]
    format: Format = Format.TEXT
    align: Align = Align.RIGHT
    #: what the column means, for a reader of the code and docs/tables.md
    note: str | None = None
    markdown: str | None = None
    terminal: str | None = None
    #: bold in report.html where the table is drawn across scopes (the Gap)
    emphasis: bool = False
    #: shown only when some row has a value other than 0 (a rare kind of termination)
    optional: bool = False
    #: shown only when some row has a value at all (not None): figures of runs with rollouts
    given_only: bool = False
    #: report.html's cell as markup, when it is more than the text (an arrow)
    html: Callable[[Any], str] | None = None
    #: the value's interval ``(low, high)`` read from the row (None: the row has none), written
    #: after the value as ``22.0 [12.5, 31.0]`` by every renderer
    interval: Callable[[Any], tuple[float, float] | None] | None = None
    #: the terminal writes the interval too (where 100 columns leave room: the Gap)
    terminal_interval: bool = False

    @property
    def markdown_title(self) -> str:
        return self.markdown if self.markdown is not None else self.title

    def text(self, row: Any) -> str:
        return self.format.text(self.value(row))

    def bounds(self, row: Any) -> tuple[float, float] | None:
        """The row's interval of this column's value; None without one (or without a value)."""
        if self.interval is None or self.value(row) is None:
            return None
        return self.interval(row)

    def cell(self, row: Any, *, intervals: bool = True) -> str:
        """The cell's text: the value, and its interval after it when there is one."""
        text = self.text(row)
        bound = self.bounds(row) if intervals else None
        return text if bound is None else f"{text} [{self.format.text(bound[0])}, {self.format.text(bound[1])}]"


@dataclass(frozen=True)
class Table:
    """A table: ``rows(summary, scopes)`` lists its typed rows (None for a table whose rows come
    from run records, which its writer makes: the terminations); ``empty`` is what summary.md
    writes instead of a table without rows (None: the header alone), ``empty_html`` the same
    for report.html."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: Callable[[Summary, Scopes], list[Any]] | None = None
    scopes: Scopes = Scopes.OWN
    empty: str | None = None
    empty_html: str | None = None

    def rows_of(self, summary: Summary, scopes: Scopes | None = None) -> list[Any]:
        if self.rows is None:
            raise ValueError(f"table {self.name}: its rows come from run records, not from the summary")
        return self.rows(summary, scopes or self.scopes)

    def shown(self, rows: Sequence[Any]) -> tuple[Column, ...]:
        """The columns to draw for ``rows``: an optional column only when some row counts one."""
        return tuple(c for c in self.columns
                     if (not c.optional or any(c.value(r) for r in rows))
                     and (not c.given_only or any(c.value(r) is not None for r in rows)))


# --------------------------------------------------------------------------- typed rows


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


@dataclass(frozen=True)
class DurationRow:
    agent: str
    infra: AgentInfra


@dataclass(frozen=True)
class RankRow:
    """One agent's rank under Clean and under Residual in one scope (``moved`` > 0: it climbs)."""

    agent: str
    clean_rank: int | None
    clean: float | None
    residual_rank: int | None
    residual: float | None
    moved: int | None


@dataclass(frozen=True)
class PairRow:
    """Two agents' paired differences (``a`` minus ``b``) on one scope's common tasks."""

    scope: str
    pair: Pair


def pair_rows(summary: Summary, scopes: Scopes) -> list[PairRow]:
    """Every pair of agents on every scope, from ``comparison.pairs`` (none with one agent)."""
    if summary.comparison is None or not summary.comparison.pairs:
        return []
    # The scopes the other tables list (overall only when it pools several tracks); a summary
    # without agents (report.html's comparison section) lists them all and picks its own.
    shown = set(summary.scopes()) if summary.agents else None
    return [PairRow(scope, pair) for scope, found in summary.comparison.pairs.items()
            if shown is None or scope in shown for pair in found]


def _significance(row: PairRow) -> str:
    p = row.pair
    if p.residual_significant is None and p.gap_significant is None:
        return p.reason or "-"
    named = [name for name, flag in (("residual", p.residual_significant), ("gap", p.gap_significant)) if flag]
    return ", ".join(named) if named else "neither (intervals include 0)"


def _adjusted(row: PairRow) -> str | None:
    p = row.pair
    if p.residual_significant_adjusted is None and p.gap_significant_adjusted is None:
        return None  # no interval, or an older summary: the column shows only when some pair has one
    named = [name for name, flag in (("residual", p.residual_significant_adjusted),
                                     ("gap", p.gap_significant_adjusted)) if flag]
    return ", ".join(named) if named else "neither"


@dataclass(frozen=True)
class LeftOutRow:
    """Something one agent's figures on one scope leave out, and why."""

    agent: str
    scope: str
    item: str
    why: str


def left_out_rows(summary: Summary, scopes: Scopes) -> list[LeftOutRow]:
    """Per agent and scope: the tasks no figure counts (no Clean or no Residual run with a
    verdict), the starts with fewer than K valid rollouts (left out of pass@K), and the figures
    without an interval because they rest on too little (CondFail on one solved task)."""
    rows = []
    for agent, block in summary.agents.items():
        pooled = len(block.tracks) > 1  # overall repeats its tracks' tasks: listed once, under the track
        for scope, figures in block.own_scopes():
            if figures is None:
                continue
            if not (pooled and scope == "overall"):
                rows += [LeftOutRow(agent, scope, d.task, "; ".join(d.reasons) + ": in no figure")
                         for d in figures.dropped]
                rows += [LeftOutRow(agent, scope, f"{s.task} [{s.state or 'clean'}]",
                                    f"{s.valid} of {s.k} valid rollouts: left out of pass@{s.k}")
                         for s in figures.short_starts]
            intervals = figures.intervals
            if intervals is not None:
                for figure in ("cond_fail",):
                    why = intervals.reasons.get(figure)
                    if why and figures.cond_fail is not None:
                        rows.append(LeftOutRow(agent, scope, "CondFail", f"no interval: {why}"))
    return rows


@dataclass(frozen=True)
class PowerRow:
    """The smallest value of one figure a run could tell from 0: an agent's Gap on a scope, or a
    pair's difference on its common tasks (``of``: the agent, or ``a - b``)."""

    of: str
    scope: str
    figure: str
    n_tasks: int
    sd: float | None
    detectable: float | None
    #: why there is no figure, or what it means when it is beyond the figure's range
    note: str | None = None


def _power_row(of: str, scope: str, figure: str, n_tasks: int, sd: float | None, mde: float | None,
               reason: str | None, largest: float) -> PowerRow:
    if mde is not None and mde > largest:
        reason = f"over {largest:.0f}: too few tasks"
    return PowerRow(of, scope, figure, n_tasks, sd, mde, reason)


def power_rows(summary: Summary, scopes: Scopes) -> list[PowerRow]:
    """Per agent and scope its Gap, then per pair (on the scopes the other tables list) its
    Residual and Gap differences: the smallest detectable value (docs/uncertainty.md)."""
    rows = [_power_row(row.agent, row.scope, "Gap", p.n_tasks, p.gap_sd, p.gap_detectable, p.reason, 100.0)
            for row in scope_rows(summary, scopes) if (p := row.figures.power) is not None]
    for pair_row in pair_rows(summary, scopes):
        pair = pair_row.pair
        if pair.reason is not None:
            continue  # fewer than two common tasks: the pairs table says so
        # a difference of two rates is at most 100 points, of two Gaps 200
        for figure, sd, mde, largest in (("Residual a - b", pair.residual_sd, pair.residual_detectable, 100.0),
                                         ("Gap a - b", pair.gap_sd, pair.gap_detectable, 200.0)):
            if sd is not None:
                rows.append(_power_row(f"{pair.a} - {pair.b}", pair_row.scope, figure, pair.n_tasks, sd, mde,
                                       None if mde is not None else NO_SPREAD, largest))
    return rows


@dataclass(frozen=True)
class NoiseRow:
    """One agent's rollout noise on one scope: each rate's per-task variance split."""

    agent: str
    scope: str
    figures: ScopeMetrics


def noise_rows(summary: Summary, scopes: Scopes) -> list[NoiseRow]:
    return [NoiseRow(row.agent, row.scope, row.figures) for row in scope_rows(summary, scopes)
            if row.figures.rollout_variance is not None]


def _split(figure: str, part: str) -> Callable[[NoiseRow], Any]:
    def read(row: NoiseRow) -> Any:
        split = (row.figures.rollout_variance or {}).get(figure)
        return None if split is None else getattr(split, part)

    return read


@dataclass(frozen=True)
class TerminationRow:
    """One agent's items by how they ended (``counts`` per termination column; ``budget`` the
    budget cell, its kinds named)."""

    agent: str
    items: int
    counts: dict[str, int] = field(default_factory=dict)
    budget: str = "0"


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


def rank_rows(comparison: Comparison, scope: str) -> list[RankRow]:
    """The agents of one scope, by Residual rank (then name)."""
    by_rate = comparison.rankings.get(scope, {})
    clean = {r.agent: r for r in by_rate.get("clean", ())}
    residual = {r.agent: r for r in by_rate.get("residual", ())}
    rows = []
    for agent in sorted(set(clean) | set(residual), key=lambda a: (residual[a].rank if a in residual else 10**9, a)):
        c, r = clean.get(agent), residual.get(agent)
        rows.append(RankRow(agent, c.rank if c else None, c.value if c else None, r.rank if r else None,
                            r.value if r else None, (c.rank - r.rank) if c and r else None))
    return rows


def _rank_cell(rank: int | None, value: float | None) -> str:
    return "-" if rank is None else f"{rank} ({pct(value)})"


def _moved_html(row: RankRow) -> str:
    moved = row.moved
    if moved is None or moved == 0:
        return ""
    return f'<span class="up">&#9650; {moved}</span>' if moved > 0 else f'<span class="down">&#9660; {-moved}</span>'


@dataclass(frozen=True)
class ExcludedGroup:
    """The excluded items of one agent that share one error (rows of EXCLUDED)."""

    agent: str | None
    error: str | None
    items: tuple[ExcludedItem, ...]

    @property
    def task(self) -> str:
        tasks = sorted({str(item.task) for item in self.items})
        return tasks[0] if len(tasks) == 1 else f"{len(tasks)} tasks"

    @property
    def state(self) -> str:
        return state_label(self.items[0]) if len(self.items) == 1 else f"{len(self.items)} starts"


def excluded_groups(items: Sequence[ExcludedItem]) -> list[ExcludedGroup]:
    """Excluded items grouped by agent and error, in the order each group first appears."""
    groups: dict[tuple[str | None, str | None], list[ExcludedItem]] = {}
    for item in items:
        groups.setdefault((item.agent, item.error), []).append(item)
    return [ExcludedGroup(agent, error, tuple(members)) for (agent, error), members in groups.items()]


def state_label(item: ExcludedItem | FailedItem | ContradictedItem) -> str:
    """``(clean)`` or the state, with ``@view`` under a handoff view."""
    state = "(clean)" if item.state is None else str(item.state)
    return state + (f"@{item.handoff}" if item.handoff else "")


# --------------------------------------------------------------------------- columns


def _key(title: str, attribute: str, **more: Any) -> Column:
    return Column(title, lambda row: getattr(row, attribute), Format.TEXT, Align.LEFT, **more)


AGENT = _key("Agent", "agent", terminal="agent")
TRACK = _key("Track", "scope")
VIEW = _key("View", "view", terminal="view")
PREDECESSOR_NAME = _key("Predecessor", "predecessor", note="the agent that left the Residual State")

def _interval(figure: str) -> Callable[[Any], tuple[float, float] | None]:
    # Only an agent's figures on a scope have intervals (not a predecessor group's).
    def read(row: Any) -> tuple[float, float] | None:
        figures = getattr(row, "figures", None)
        return figures.interval(figure) if isinstance(figures, ScopeMetrics) else None

    return read


RESIDUAL = Column("Residual", lambda r: r.figures.residual, Format.PCT, markdown="Residual (%)", terminal="residual",
                  note="success from a Residual State (work a predecessor left and claimed done)",
                  interval=_interval("residual"))
CLEAN = Column("Ref. Clean", lambda r: r.figures.clean, Format.PCT, markdown="Ref. Clean (%)", terminal="clean",
               note="success from a clean start on the same tasks", interval=_interval("clean"))
GAP = Column("Gap", lambda r: r.figures.gap, Format.POINTS, terminal="gap", emphasis=True,
             note="Ref. Clean - Residual in points, computed before rounding", interval=_interval("gap"),
             terminal_interval=True)
COND_FAIL = Column("CondFail", lambda r: r.figures.cond_fail, Format.PCT, markdown="CondFail (%)",
                   terminal="condfail", note="the share of Residual States failed on the tasks solved from clean",
                   interval=_interval("cond_fail"))
# With `--rollouts` above 1 only (a one-rollout run has no such figures, and no such columns).
PASS_AT_K_RESIDUAL = Column(
    "pass@K Residual", lambda r: r.figures.pass_at_k.residual if r.figures.pass_at_k else None, Format.PCT,
    markdown="pass@K Residual (%)", terminal="res@K", given_only=True,
    note="pass@K over the K rollouts of each Residual State (unbiased estimator), averaged as Residual is",
    interval=lambda r: (r.figures.pass_at_k.intervals or {}).get("residual") if r.figures.pass_at_k else None)
PASS_AT_K_CLEAN = Column(
    "pass@K Clean", lambda r: r.figures.pass_at_k.clean if r.figures.pass_at_k else None, Format.PCT,
    markdown="pass@K Clean (%)", terminal="cln@K", given_only=True,
    note="pass@K over the K rollouts of each Clean Start, on the same tasks",
    interval=lambda r: (r.figures.pass_at_k.intervals or {}).get("clean") if r.figures.pass_at_k else None)
DISAGREE = Column(
    "Disagree", lambda r: r.figures.disagreement.residual if r.figures.disagreement else None, Format.PCT,
    markdown="Disagree (%)", terminal="disagree", given_only=True,
    note="the share of Residual States whose rollouts disagree (some succeeded, some failed)",
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
    if key == "split_by_kept":
        return Column(title, lambda r: f"{pct(r.bias.split_by_kept.success_above)} / "
                                       f"{pct(r.bias.split_by_kept.success_below)}")
    # Steps is a ratio of step counts, every other one a share in %
    return Column(title, lambda r: getattr(r.bias, key), Format.RATIO if key == "steps_ratio" else Format.PCT)


ACCEPTANCE_COLUMNS = tuple(_bias_column(key) for key in ACCEPTANCE_KEYS)


def _ratio(quantity: str, title: str, terminal: str) -> Column:
    return Column(title, lambda r: r.figures.ratio(quantity), Format.RATIO, terminal=terminal,
                  note=f"median {quantity} of the Residual items / of the same tasks' Clean items")


# --------------------------------------------------------------------------- the tables


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
    (replace(AGENT, terminal="by handoff view"), VIEW, RESIDUAL, CLEAN, GAP, COND_FAIL,
     _ratio("steps", "Steps R/C", "steps x"), _ratio("tokens", "Tokens R/C", "tokens x"),
     _ratio("cost", "Cost R/C", "cost x"), replace(N_TASKS, terminal=None), replace(N_STATES, terminal=None)),
    view_rows,
)  # fmt: skip

TAKEOVER = Table(
    "takeover", "Takeover cost by handoff view",
    (AGENT, VIEW, _key("Quantity", "quantity"),
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

EXCLUDED = Table(
    "excluded", "Items excluded by an unresolved infrastructure error",
    (_key("Agent", "agent"), Column("Items", lambda group: len(group.items), Format.COUNT),
     Column("Task", lambda group: group.task, align=Align.LEFT),
     Column("State", lambda group: group.state, align=Align.LEFT),
     Column("Error", lambda group: group.error or "", align=Align.LEFT,
            note="one row per agent and error: an error every item shared (a set-up layer that cannot be "
                 "built, say) is said once")),
    lambda summary, scopes: excluded_groups(summary.infra.excluded),
)  # fmt: skip

FAILED_ITEMS = Table(
    "verifier_failed", "Verifier failed on the agent's final state",
    (_key("Agent", "agent"), _key("Task", "task"), Column("State", state_label, align=Align.LEFT)),
    lambda summary, scopes: list(summary.infra.verifier_failed),
)  # fmt: skip

CONTRADICTED = Table(
    "contradicted", "Passing rewards contradicted by the per-test reports",
    (_key("Agent", "agent"), _key("Task", "task"), Column("State", state_label, align=Align.LEFT),
     Column("Reason", lambda item: str(item.reason or "").removeprefix("contradicted reward: "), align=Align.LEFT,
            note="the reward file said 1; the report, the suite's own pytest reporter or the expected tests "
                 "said otherwise: a failure (docs/faults.md)")),
    lambda summary, scopes: list(summary.infra.contradicted),
)  # fmt: skip

DURATIONS = Table(
    "durations", "Attempts and median seconds per item, per agent",
    (AGENT, Column("Items", lambda r: r.infra.items, Format.COUNT),
     Column("Attempts", lambda r: r.infra.attempts, Format.COUNT),
     Column("Setup", lambda r: r.infra.setup_sec, Format.SECONDS, note="starting the environment, applying the state"),
     Column("Agent", lambda r: r.infra.agent_sec, Format.SECONDS),
     Column("Verify", lambda r: r.infra.verify_sec, Format.SECONDS),
     Column("Wall", lambda r: r.infra.wall_sec, Format.SECONDS)),
    lambda summary, scopes: [DurationRow(agent, d) for agent, d in summary.infra.by_agent.items()],
)  # fmt: skip


#: Per scope: each agent's rank under Clean and under Residual (rows: :func:`rank_rows`).
RANKS = Table(
    "ranks", "Ranks from Clean and Residual starts",
    (AGENT,
     Column("Clean rank (%)", lambda r: _rank_cell(r.clean_rank, r.clean)),
     Column("Residual rank (%)", lambda r: _rank_cell(r.residual_rank, r.residual)),
     Column("Moved", lambda r: r.moved, Format.COUNT, html=_moved_html,
            note="ranks climbed from Clean to Residual (negative: fell)")),
)  # fmt: skip

#: Per scope, each pair of agents: a minus b on their common tasks, t intervals over tasks, raw and Holm verdicts.
PAIRS = Table(
    "pairs", "Agents compared on their common tasks",
    (Column("Agent a", lambda r: r.pair.a, align=Align.LEFT, terminal="a"),
     Column("Agent b", lambda r: r.pair.b, align=Align.LEFT, terminal="b"),
     Column("Track", lambda r: r.scope, align=Align.LEFT),
     Column("Tasks", lambda r: r.pair.n_tasks, Format.COUNT, terminal="tasks", note="tasks both agents ran"),
     Column("Residual a - b", lambda r: r.pair.residual, Format.POINTS, terminal="residual a-b",
            interval=lambda r: r.pair.residual_interval, terminal_interval=True),
     Column("Gap a - b", lambda r: r.pair.gap, Format.POINTS, terminal="gap a-b",
            interval=lambda r: r.pair.gap_interval, terminal_interval=True),
     Column("Interval excludes 0", _significance, align=Align.LEFT,
            note="the differences whose interval excludes 0 (raw, each pair alone)"),
     Column("After Holm", _adjusted, align=Align.LEFT, terminal="holm", given_only=True,
            note="the differences still significant after Holm's adjustment across the scope's pairs")),
    pair_rows, empty="(one agent: nothing to compare)",
)  # fmt: skip

#: What each agent's figures leave out, and why: tasks in no figure, short starts, thin figures.
LEFT_OUT = Table(
    "left_out", "Left out of the figures",
    (AGENT, _key("Track", "scope", terminal="track"), _key("Item", "item", terminal="item"),
     _key("Why", "why", terminal="why")),
    left_out_rows,
)  # fmt: skip

#: what the power table is, for summary.md and report.html
POWER_NOTE = ("The smallest true Gap (per agent) or difference (per pair, on its common tasks) the t test at "
              "this run's confidence detects with 80% power over its tasks: MDE = (t(1 - a/2, n - 1) + "
              "t(0.8, n - 1)) * sd / sqrt(n), sd the spread of the per-task values. A smaller effect can be real "
              "and still not show.")
#: what the rollout-noise table is
NOISE_NOTE = ("With rollouts: of the variance of each rate's per-task values, the share that is rollout noise "
              "(within tasks, between their rollouts: more rollouts shrink it) and the variance between tasks "
              "(points squared: only more tasks shrink it).")


#: What each run could detect: the smallest Gap (per agent and scope) and pair difference that
#: the t test at the run's confidence finds with 80% power (metrics/power.py).
POWER = Table(
    "power", "Smallest difference the run could detect",
    (_key("Of", "of", terminal="of"), _key("Track", "scope", terminal="track"),
     _key("Figure", "figure", terminal="figure"),
     Column("Tasks", lambda r: r.n_tasks, Format.COUNT, terminal="tasks"),
     Column("SD per task", lambda r: r.sd, Format.POINTS, markdown="SD per task (points)", terminal="sd",
            note="the sample standard deviation of the per-task values"),
     Column("Smallest detectable", lambda r: r.detectable, Format.POINTS, markdown="Smallest detectable (points)",
            terminal="detectable", emphasis=True,
            note="(t(1 - a/2, n - 1) + t(0.8, n - 1)) sd / sqrt(n): detected with 80% power at the run's confidence"),
     Column("Note", lambda r: r.note, align=Align.LEFT, terminal="note", given_only=True)),
    power_rows,
)  # fmt: skip

#: With rollouts: how much of each rate's per-task variance is rollout noise (metrics/rollout_noise.py).
ROLLOUT_NOISE = Table(
    "rollout_noise", "Rollout noise and task sampling",
    (AGENT, TRACK,
     Column("Residual within (%)", _split("residual", "within_share"), Format.PCT, terminal="residual within %",
            note="the share of the per-task Residual variance that is rollout noise (between a task's rollouts)"),
     Column("Residual between", _split("residual", "between"), Format.NUMBER, terminal="between",
            note="the variance between tasks, points squared"),
     Column("Clean within (%)", _split("clean", "within_share"), Format.PCT, terminal="clean within %"),
     Column("Clean between", _split("clean", "between"), Format.NUMBER, terminal="between"),
     Column("Tasks", _split("residual", "n_tasks"), Format.COUNT, terminal="tasks",
            note="the tasks whose states all have two or more valid rollouts")),
    noise_rows,
)  # fmt: skip

UNSOLVED = Table(
    "unsolved_states", "Residual States no agent solved",
    (_key("Track", "track"), _key("Task", "task"), _key("State", "state"),
     Column("Agents that ran it", lambda u: u.agents, Format.COUNT)),
    lambda summary, scopes: list(summary.comparison.states.unsolved) if summary.comparison else [],
)  # fmt: skip


def _termination(title: str, **more: Any) -> Column:
    return Column(title, lambda r: r.counts.get(title, 0), Format.COUNT, terminal=title, **more)


#: How each item ended, per agent (from run records: :mod:`swe_residual.summary.terminations`).
#: "verifier failed" (no valid verdict on the agent's final state while the verifier works on
#: the clean state: the agent's failure) and "other" (an unknown or missing termination) are
#: shown only when counted.
TERMINATIONS = Table(
    "terminations", "Items by termination",
    (AGENT, Column("items", lambda r: r.items, Format.COUNT, terminal="items"),
     _termination("submitted"),
     Column("budget", lambda r: r.budget, terminal="budget", note="time, step, cost or disk limit, the kinds named"),
     _termination("agent error"), _termination("verifier failed", optional=True),
     _termination("infra", note="failed after retries"), _termination("other", optional=True)),
)  # fmt: skip

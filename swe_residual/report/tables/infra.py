"""The infrastructure tables: the items excluded by an unresolved infrastructure error, the
failures the verifier or the per-test reports found, the time per item, and how each item
ended (terminations)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from swe_residual.metrics.summary.model import AgentInfra, ContradictedItem, ExcludedItem, FailedItem
from swe_residual.report.tables.figures import AGENT, key_column
from swe_residual.report.tables.table import Align, Column, Format, Table

__all__ = [
    "CONTRADICTED", "CONTRADICTED_LINE", "DURATIONS", "EXCLUDED", "FAILED_ITEMS", "FAILED_LINE", "SHARED_ERROR_LINES",
    "TERMINATIONS",
    "DurationRow", "ExcludedGroup", "TerminationRow", "excluded_groups", "state_label",
]  # fmt: skip


@dataclass(frozen=True)
class DurationRow:
    agent: str
    infra: AgentInfra


@dataclass(frozen=True)
class TerminationRow:
    """One agent's items by how they ended (``counts`` per termination column; ``budget`` the
    budget cell, its kinds named)."""

    agent: str
    items: int
    counts: dict[str, int] = field(default_factory=dict)
    budget: str = "0"


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


#: an error many excluded items share: the terminal wraps it on at most this many lines
SHARED_ERROR_LINES = 4
#: what the failure tables list, said before each (its count after it)
FAILED_LINE = "verifier failed on the agent's final state, works on the clean state (failures, counted)"
CONTRADICTED_LINE = "passing reward contradicted by the per-test reports (failures, counted)"

EXCLUDED = Table(
    "excluded", "Items excluded by an unresolved infrastructure error",
    (AGENT, Column("Items", lambda group: len(group.items), Format.COUNT, terminal="items"),
     Column("Task", lambda group: group.task, align=Align.LEFT, terminal="task"),
     Column("State", lambda group: group.state, align=Align.LEFT, terminal="state"),
     Column("Error", lambda group: group.error or "", align=Align.LEFT, terminal="error",
            terminal_wrap=SHARED_ERROR_LINES,
            note="one row per agent and error: an error every item shared (a set-up layer that cannot be "
                 "built, say) is said once")),
    lambda summary, scopes: excluded_groups(summary.infra.excluded),
)  # fmt: skip

#: the columns naming one item (an agent's start of a task)
ITEM = (AGENT, key_column("Task", "task", terminal="task"), Column("State", state_label, align=Align.LEFT, terminal="state"))

FAILED_ITEMS = Table(
    "verifier_failed", "Verifier failed on the agent's final state", ITEM,
    lambda summary, scopes: list(summary.infra.verifier_failed),
)  # fmt: skip

CONTRADICTED = Table(
    "contradicted", "Passing rewards contradicted by the per-test reports",
    (*ITEM,
     Column("Reason", lambda item: str(item.reason or "").removeprefix("contradicted reward: "), align=Align.LEFT,
            terminal="reason",
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


def _termination(title: str, **more: Any) -> Column:
    return Column(title, lambda r: r.counts.get(title, 0), Format.COUNT, terminal=title, **more)


#: How each item ended, per agent (from run records: :mod:`swe_residual.report.terminations`).
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

"""The comparison part of the summary (``summary["comparison"]``): rankings under Clean and
Residual per scope, the reversed pairs, every pair's paired differences, the states no agent
solved (:mod:`swe_residual.metrics.summary.comparison` builds it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from swe_residual.metrics.summary.part import Bound, Number, Omit, OmitUnless, Part

__all__ = ["Comparison", "Multiplicity", "Pair", "Rank", "Reversal", "StatesSolved", "UnsolvedState"]


class Rank(Part):
    agent: str
    value: Number
    rank: int


class Reversal(Part):
    scope: str
    clean_leader: str
    residual_leader: str
    clean_margin: Number
    residual_margin: Number
    #: the paired intervals of the two margins on the common tasks, leader minus follower
    clean_interval: Bound | None = None
    residual_interval: Bound | None = None
    #: both intervals above 0; False when one includes 0; None without intervals
    significant: bool | None = None
    #: the same verdict after Holm's adjustment across the pairs of the scope (an older summary:
    #: no key, as it has no ``n_tasks``)
    significant_adjusted: Annotated[bool | None, OmitUnless("n_tasks")] = None
    #: the common tasks the margins are measured on (0: an older summary, margins on each agent's own tasks)
    n_tasks: Annotated[int, Omit.EMPTY] = 0


class Pair(Part):
    """Agent ``a`` minus agent ``b`` on their common tasks: t intervals over the per-task
    differences, raw p-values and significance, and both after Holm's adjustment across the
    pairs of the scope (``*_adjusted``; None in an older summary or without an interval)."""

    a: str
    b: str
    n_tasks: int = 0
    residual: Number | None = None
    residual_interval: Bound | None = None
    residual_significant: bool | None = None
    clean: Number | None = None
    clean_interval: Bound | None = None
    clean_significant: bool | None = None
    gap: Number | None = None
    gap_interval: Bound | None = None
    gap_significant: bool | None = None
    reason: str | None = None
    residual_p: Number | None = None
    clean_p: Number | None = None
    gap_p: Number | None = None
    residual_p_adjusted: Number | None = None
    clean_p_adjusted: Number | None = None
    gap_p_adjusted: Number | None = None
    residual_significant_adjusted: bool | None = None
    clean_significant_adjusted: bool | None = None
    gap_significant_adjusted: bool | None = None
    #: the spread of the per-task differences and the smallest difference detectable (points)
    residual_sd: Number | None = None
    residual_detectable: Number | None = None
    clean_sd: Number | None = None
    clean_detectable: Number | None = None
    gap_sd: Number | None = None
    gap_detectable: Number | None = None


class UnsolvedState(Part):
    track: str
    task: str
    state: str
    agents: int


class StatesSolved(Part):
    n_states: int = 0
    unsolved: tuple[UnsolvedState, ...] = ()


class Multiplicity(Part):
    """How the pairs' verdicts are adjusted for being many."""

    method: str | None = None
    family: str | None = None
    alpha: Number | None = None


class Comparison(Part):
    """Rankings under Clean and Residual per scope, the reversed pairs, the states no agent solved."""

    n_agents: int = 0
    rankings: Mapping[str, Mapping[str, tuple[Rank, ...]]] = {}
    reversals: Mapping[str, tuple[Reversal, ...]] = {}
    states: StatesSolved = StatesSolved()
    #: per scope, every pair of agents' paired differences (None in an older summary)
    pairs: Annotated[Mapping[str, tuple[Pair, ...]] | None, Omit.NONE] = None
    #: how the pairs' verdicts are adjusted for being many: {method, family, alpha}
    multiplicity: Annotated[Multiplicity | None, Omit.NONE] = None

"""Uncertainty of the headline figures: intervals over tasks (docs/uncertainty.md).

Pure functions (no I/O, nothing random). For one agent and one scope, the task set T is the one
the point estimates use (:func:`swe_residual.metrics.headline.task_table`); each task gives one
value per figure, its states (and rollouts) averaged first, so the task is the unit:

* Residual: the task's mean state outcome ``r``; Clean: its clean outcome ``c``; each the score
  interval over tasks (:func:`swe_residual.metrics.over_tasks.mean_interval`);
* Gap: ``c - r`` per task, Newcombe's interval from the two rates' score intervals and their
  correlation (:func:`~swe_residual.metrics.over_tasks.difference_interval`);
* CondFail: the ratio ``sum(c (1 - r)) / sum(c)`` over the tasks solved from a clean start
  (``c > 0``), its linearized score interval (:func:`~swe_residual.metrics.over_tasks.ratio_interval`),
  null with fewer than two such tasks.

Every interval lies in the figure's range (0-100, the Gap -100-100); where a figure's per-task
values are all equal the all-equal rule gives a bound of non-zero width (its name is in
``all_equal``). Fewer than two tasks: no interval, and the reason. Why these methods: in the
project's coverage study (``benchmarks/bench_interval_coverage.py``, docs/uncertainty.md) each
was the one nearest 95% from 10 tasks up among those measured.

A paired comparison of two agents (:func:`paired_difference`) is the t interval over the
per-task differences on their common tasks (what a task's difficulty adds to both cancels);
its p-values feed Holm's adjustment (:mod:`swe_residual.metrics.comparison`), and the smallest
difference it could detect is stated (:mod:`swe_residual.metrics.power`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import computed_field, model_validator

from swe_residual.metrics.headline import TaskRuns
from swe_residual.metrics.over_tasks import ALL_EQUAL, Estimate, difference_interval, mean_interval, ratio_interval
from swe_residual.metrics.power import NO_SPREAD, POWER, TOO_FEW, detectable, spread
from swe_residual.metrics.summary.part import Bound, Omit, Part

__all__ = [
    "ALL_EQUAL_RULE", "DIFFERENCE_RULE", "GAP_RULE", "RATE_RULE", "DEFAULT_CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "FEW_SOLVED", "FIGURES", "METHOD", "T_METHOD",
    "ONE_TASK", "NO_TASK", "Bound", "Intervals", "PairedDifference", "Uncertainty", "gap_of", "gap_power", "includes_zero",
    "paired_difference", "percent_bound", "scaled_power", "task_intervals", "task_values",
]  # fmt: skip

DEFAULT_CONFIDENCE = 0.95
#: kept so command lines and ini files that set them still work; the t method draws nothing at random
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
#: the method every interval of a summary is made by (summary.json's ``uncertainty.method``)
METHOD = "score-over-tasks"
#: the method of the summaries written before the score interval (rates and Gap by the t interval)
T_METHOD = "t-over-tasks"
#: what the all-equal rule is, in words (summary.json's ``uncertainty.all_equal_rule``)
ALL_EQUAL_RULE = "all per-task values equal v: [v - h, v + h] clamped, h = z^2 / (n + z^2)"
#: each kind of figure's rule, in words (summary.json's ``uncertainty``)
RATE_RULE = ("Residual, Clean, CondFail, pass@K, Disagree: Wilson's score interval at the effective number of "
             "tasks n_eff = p (1 - p) / se^2 with the t quantile of n - 1 degrees of freedom (0/1 values: at n, z)")
GAP_RULE = "Gap: Newcombe's hybrid score interval of the paired difference Clean - Residual over tasks"
DIFFERENCE_RULE = "a pair's differences: the t interval over the per-task differences on the common tasks"
#: the figures that get an interval, in the order summary.json lists them
FIGURES = ("residual", "clean", "gap", "cond_fail")
ONE_TASK = "cannot be estimated from one task"
NO_TASK = "no scored task"
FEW_SOLVED = "rests on fewer than two tasks solved from a clean start"

class Uncertainty(Part):
    """How the intervals are made: ``summary.json``'s top-level ``uncertainty``, with each
    rule in words when they are :data:`METHOD`'s."""

    method: str = METHOD
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    @model_validator(mode="after")
    def _check(self) -> Uncertainty:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence {self.confidence!r}: must be between 0 and 1 (exclusive)")
        if self.resamples < 1:
            raise ValueError(f"resamples {self.resamples!r}: must be 1 or more")
        return self

    def _rule(self, words: str) -> str | None:
        return words if self.method == METHOD else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unit(self) -> Annotated[str | None, Omit.NONE]:
        return self._rule("task")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate_rule(self) -> Annotated[str | None, Omit.NONE]:
        return self._rule(RATE_RULE)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gap_rule(self) -> Annotated[str | None, Omit.NONE]:
        return self._rule(GAP_RULE)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def difference_rule(self) -> Annotated[str | None, Omit.NONE]:
        return self._rule(DIFFERENCE_RULE)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def all_equal_rule(self) -> Annotated[str | None, Omit.NONE]:
        return self._rule(ALL_EQUAL_RULE)

    def recomputed(self) -> Uncertainty:
        """The same settings for a summary computed now (by :data:`METHOD`)."""
        return Uncertainty(confidence=self.confidence, resamples=self.resamples, seed=self.seed)


class Intervals(Part):
    """``[low, high]`` per figure (None where it cannot be estimated), and why not, if so."""

    residual: Bound | None = None
    clean: Bound | None = None
    gap: Bound | None = None
    cond_fail: Bound | None = None
    #: None when every figure that has a point estimate has an interval
    reason: str | None = None
    #: why a figure with a point estimate has no interval (CondFail on one solved task...)
    reasons: Annotated[Mapping[str, str], Omit.EMPTY] = {}
    #: the figures whose per-task values were all equal: their bound is the all-equal rule's
    all_equal: Annotated[tuple[str, ...], Omit.EMPTY] = ()

    def get(self, figure: str) -> Bound | None:
        return getattr(self, figure)  # type: ignore[no-any-return]

    def why_none(self, figure: str) -> str | None:
        """Why ``figure`` has no interval (None when it has one)."""
        if self.get(figure) is not None:
            return None
        return self.reasons.get(figure) or self.reason


def gap_of(clean: float | None, residual: float | None) -> float | None:
    """Gap in points, as the headline computes it (None when either rate is)."""
    return None if clean is None or residual is None else clean - residual


def _ordered_tasks(tasks: Mapping[Hashable, TaskRuns] | Sequence[TaskRuns]) -> list[TaskRuns]:
    runs = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    return sorted(runs, key=lambda t: t.task)  # type: ignore[arg-type, return-value]


def task_values(task: TaskRuns) -> tuple[float, float]:
    """A task's (clean, residual) outcome as fractions: its clean outcome and the mean over its states."""
    return float(task.clean), sum(s.y for s in task.states) / len(task.states)


def percent_bound(estimate: Estimate | None) -> Bound | None:
    """An estimate's bound in percent (points); None without one."""
    return None if estimate is None else estimate.scaled(100.0).bound


def task_intervals(tasks: Mapping[Hashable, TaskRuns] | Sequence[TaskRuns],
                   uncertainty: Uncertainty = Uncertainty()) -> Intervals:
    """The intervals of one agent's figures on one scope (its task table; module docstring)."""
    ordered = [t for t in _ordered_tasks(tasks) if t.states]
    n = len(ordered)
    if n == 0:
        return Intervals(reason=NO_TASK)
    if n == 1:
        return Intervals(reason=ONE_TASK)
    conf = uncertainty.confidence
    values = [task_values(t) for t in ordered]
    clean, residual = [c for c, _ in values], [r for _, r in values]
    estimates = {
        "residual": mean_interval(residual, conf),
        "clean": mean_interval(clean, conf),
        "gap": difference_interval(clean, residual, conf),
        "cond_fail": ratio_interval(clean, [1.0 - r for r in residual], conf),
    }
    reasons = {}
    if estimates["cond_fail"] is None and any(c > 0 for c in clean):
        reasons["cond_fail"] = FEW_SOLVED  # a point estimate from one solved task, no interval
    all_equal = tuple(f for f in FIGURES if (e := estimates[f]) is not None and e.rule == ALL_EQUAL)
    return Intervals(**{f: percent_bound(e) for f, e in estimates.items()}, reasons=reasons, all_equal=all_equal)


def includes_zero(bound: Bound | None) -> bool | None:
    """Whether an interval includes 0 (None without an interval)."""
    return None if bound is None else bound[0] <= 0.0 <= bound[1]


@dataclass(frozen=True)
class PairedDifference:
    """Agent ``a`` minus agent ``b`` on their common tasks: each figure's difference (points),
    its interval and two-sided p-value against 0 (None with fewer than two common tasks;
    ``reason`` says so)."""

    a: str
    b: str
    n_tasks: int
    residual: float | None
    residual_interval: Bound | None
    clean: float | None
    clean_interval: Bound | None
    gap: float | None
    gap_interval: Bound | None
    reason: str | None = None
    #: {figure: p-value} of the differences that have an interval
    p_values: Mapping[str, float] = field(default_factory=dict)
    #: {figure: (sd of the per-task differences, smallest detectable difference)} in points
    #: (:mod:`swe_residual.metrics.power`; either None when it cannot be said)
    power: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)


def scaled_power(values: Sequence[float], confidence: float) -> tuple[float | None, float | None]:
    """(sd, smallest detectable mean) of per-task values (fractions), in points."""
    sd, mde = spread(values), detectable(values, confidence)
    return (None if sd is None else 100.0 * sd), (None if mde is None else 100.0 * mde)


def gap_power(tasks: Mapping[Hashable, TaskRuns] | Sequence[TaskRuns], confidence: float) -> dict[str, object]:
    """The smallest Gap one agent's run on one scope could detect (summary.json's ``power``):
    ``{power, n_tasks, gap_sd, gap_detectable, reason}``, sd and Gap in points."""
    gaps = [c - r for c, r in (task_values(t) for t in _ordered_tasks(tasks) if t.states)]
    sd, mde = scaled_power(gaps, confidence)
    reason = None if mde is not None else TOO_FEW if len(gaps) < 2 else NO_SPREAD
    return {"power": POWER, "n_tasks": len(gaps), "gap_sd": sd, "gap_detectable": mde, "reason": reason}


def paired_difference(a: str, tasks_a: Mapping[Hashable, TaskRuns], b: str, tasks_b: Mapping[Hashable, TaskRuns],
                      uncertainty: Uncertainty = Uncertainty()) -> PairedDifference:
    """``a`` minus ``b`` in Residual, Clean and Gap on the tasks both ran: the mean of the
    per-task differences and its t interval (module docstring)."""
    common = [k for k in sorted(set(tasks_a) & set(tasks_b)) if tasks_a[k].states and tasks_b[k].states]  # type: ignore[type-var]
    n = len(common)
    diffs: dict[str, list[float]] = {"residual": [], "clean": [], "gap": []}
    for k in common:
        (ca, ra), (cb, rb) = task_values(tasks_a[k]), task_values(tasks_b[k])
        diffs["residual"].append(ra - rb)
        diffs["clean"].append(ca - cb)
        diffs["gap"].append((ca - ra) - (cb - rb))
    point = {f: 100.0 * sum(v) / n if n else None for f, v in diffs.items()}
    estimates = {f: mean_interval(v, uncertainty.confidence, -1.0, 1.0) for f, v in diffs.items()}
    bounds = {f: percent_bound(e) for f, e in estimates.items()}
    reason = NO_TASK if n == 0 else ONE_TASK if n == 1 else None
    return PairedDifference(a, b, n, point["residual"], bounds["residual"], point["clean"], bounds["clean"],
                            point["gap"], bounds["gap"], reason,
                            {f: e.p_value for f, e in estimates.items() if e is not None},
                            {f: scaled_power(v, uncertainty.confidence) for f, v in diffs.items()})

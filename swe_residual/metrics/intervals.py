"""Uncertainty of the headline figures: the t interval over tasks (docs/uncertainty.md).

Pure functions (no I/O, nothing random). For one agent and one scope, the task set T is the one
the point estimates use (:func:`swe_residual.metrics.headline.task_table`); each task gives one
value per figure, its states (and rollouts) averaged first, so the task is the unit:

* Residual: the task's mean state outcome ``r``; Clean: its clean outcome ``c``; Gap: ``c - r``;
  each the t interval of the mean (:func:`swe_residual.metrics.over_tasks.mean_interval`);
* CondFail: the ratio ``sum(c (1 - r)) / sum(c)`` over the tasks solved from a clean start
  (``c > 0``), its linearized t interval (:func:`~swe_residual.metrics.over_tasks.ratio_interval`),
  null with fewer than two such tasks.

Every interval is clamped to the figure's range (0-100, the Gap -100-100); where a figure's
per-task values are all equal the all-equal rule gives a bound of non-zero width (its name is in
``all_equal``), and a rate near 0% or 100% is widened to contain its Wilson score interval (its
name is in ``near_bound``). Fewer than two tasks: no interval, and the reason. Why this method: in
the project's coverage study (``benchmarks/bench_interval_coverage.py``, docs/uncertainty.md)
it held 93-97% from 10 tasks up for the Gap and the pair differences, and for the rates away
from 0%/100%, where the percentile bootstrap used before held 72-94% at 5-20 tasks.

A paired comparison of two agents (:func:`paired_difference`) is the same t interval over the
per-task differences on their common tasks (what a task's difficulty adds to both cancels);
its p-values feed Holm's adjustment (:mod:`swe_residual.metrics.comparison`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from swe_residual.metrics.headline import TaskRuns
from swe_residual.metrics.over_tasks import (
    ALL_EQUAL, NEAR_BOUND, NEAR_BOUND_TASKS, Estimate, mean_interval, ratio_interval,
)  # fmt: skip

__all__ = [
    "ALL_EQUAL_RULE", "NEAR_BOUND_RULE", "DEFAULT_CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "FEW_SOLVED", "FIGURES", "METHOD",
    "ONE_TASK", "NO_TASK", "Bound", "Intervals", "PairedDifference", "Uncertainty", "gap_of", "includes_zero",
    "paired_difference", "task_intervals", "task_values",
]  # fmt: skip

DEFAULT_CONFIDENCE = 0.95
#: kept so command lines and ini files that set them still work; the t method draws nothing at random
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
#: the method every interval of a summary is made by (summary.json's ``uncertainty.method``)
METHOD = "t-over-tasks"
#: what the all-equal rule is, in words (summary.json's ``uncertainty.all_equal_rule``)
ALL_EQUAL_RULE = "all per-task values equal v: [v - h, v + h] clamped, h = z^2 / (n + z^2)"
#: what the near-bound rule is, in words (summary.json's ``uncertainty.near_bound_rule``)
NEAR_BOUND_RULE = (f"a rate with fewer than {NEAR_BOUND_TASKS} tasks above 0% (or below 100%): widened to contain "
                   "the Wilson score interval, tasks as trials")
#: the figures that get an interval, in the order summary.json lists them
FIGURES = ("residual", "clean", "gap", "cond_fail")
ONE_TASK = "cannot be estimated from one task"
NO_TASK = "no scored task"
FEW_SOLVED = "rests on fewer than two tasks solved from a clean start"

Bound = tuple[float, float]


@dataclass(frozen=True)
class Uncertainty:
    """How the intervals are made: ``summary.json``'s top-level ``uncertainty``."""

    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    method: str = METHOD

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence {self.confidence!r}: must be between 0 and 1 (exclusive)")
        if self.resamples < 1:
            raise ValueError(f"resamples {self.resamples!r}: must be 1 or more")

    @classmethod
    def from_json(cls, raw: object) -> Uncertainty | None:
        if not isinstance(raw, Mapping):
            return None
        # a summary written before the method was named made its intervals by the bootstrap
        return cls(float(raw.get("confidence", DEFAULT_CONFIDENCE)), int(raw.get("resamples", DEFAULT_RESAMPLES)),
                   int(raw.get("seed", DEFAULT_SEED)), str(raw.get("method", "percentile-bootstrap")))

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"method": self.method, "confidence": self.confidence, "resamples": self.resamples,
                                  "seed": self.seed}
        if self.method == METHOD:
            out["unit"] = "task"
            out["all_equal_rule"] = ALL_EQUAL_RULE
            out["near_bound_rule"] = NEAR_BOUND_RULE
        return out

    def recomputed(self) -> Uncertainty:
        """The same settings for a summary computed now (by :data:`METHOD`)."""
        return Uncertainty(self.confidence, self.resamples, self.seed)


@dataclass(frozen=True)
class Intervals:
    """``[low, high]`` per figure (None where it cannot be estimated), and why not, if so."""

    residual: Bound | None = None
    clean: Bound | None = None
    gap: Bound | None = None
    cond_fail: Bound | None = None
    #: None when every figure that has a point estimate has an interval
    reason: str | None = None
    #: why a figure with a point estimate has no interval (CondFail on one solved task...)
    reasons: Mapping[str, str] = field(default_factory=dict)
    #: the figures whose per-task values were all equal: their bound is the all-equal rule's
    all_equal: tuple[str, ...] = ()
    #: the rates near 0% or 100% whose interval the score rule widened
    near_bound: tuple[str, ...] = ()

    def get(self, figure: str) -> Bound | None:
        return getattr(self, figure)

    def why_none(self, figure: str) -> str | None:
        """Why ``figure`` has no interval (None when it has one)."""
        if self.get(figure) is not None:
            return None
        return self.reasons.get(figure) or self.reason

    @classmethod
    def from_json(cls, raw: object) -> Intervals | None:
        if not isinstance(raw, Mapping):
            return None

        def bound(value: object) -> Bound | None:
            return (float(value[0]), float(value[1])) if isinstance(value, Sequence) and len(value) == 2 else None

        reasons = raw.get("reasons")
        return cls(*(bound(raw.get(f)) for f in FIGURES), reason=raw.get("reason"),
                   reasons=dict(reasons) if isinstance(reasons, Mapping) else {},
                   all_equal=tuple(raw.get("all_equal") or ()), near_bound=tuple(raw.get("near_bound") or ()))

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {f: list(b) if (b := self.get(f)) is not None else None for f in FIGURES}
        out["reason"] = self.reason
        if self.reasons:
            out["reasons"] = dict(self.reasons)
        if self.all_equal:
            out["all_equal"] = list(self.all_equal)
        if self.near_bound:
            out["near_bound"] = list(self.near_bound)
        return out


def gap_of(clean: float | None, residual: float | None) -> float | None:
    """Gap in points, as the headline computes it (None when either rate is)."""
    return None if clean is None or residual is None else clean - residual


def _ordered_tasks(tasks: Mapping[Hashable, TaskRuns] | Sequence[TaskRuns]) -> list[TaskRuns]:
    runs = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    return sorted(runs, key=lambda t: t.task)  # type: ignore[arg-type, return-value]


def task_values(task: TaskRuns) -> tuple[float, float]:
    """A task's (clean, residual) outcome as fractions: its clean outcome and the mean over its states."""
    return float(task.clean), sum(s.y for s in task.states) / len(task.states)


def _percent(estimate: Estimate | None) -> Bound | None:
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
        "gap": mean_interval([c - r for c, r in values], conf, -1.0, 1.0),
        "cond_fail": ratio_interval(clean, [1.0 - r for r in residual], conf),
    }
    reasons = {}
    if estimates["cond_fail"] is None and any(c > 0 for c in clean):
        reasons["cond_fail"] = FEW_SOLVED  # a point estimate from one solved task, no interval
    all_equal = tuple(f for f in FIGURES if (e := estimates[f]) is not None and e.rule == ALL_EQUAL)
    near_bound = tuple(f for f in FIGURES if (e := estimates[f]) is not None and e.rule == NEAR_BOUND)
    return Intervals(**{f: _percent(e) for f, e in estimates.items()}, reasons=reasons, all_equal=all_equal,
                     near_bound=near_bound)


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
    bounds = {f: _percent(e) for f, e in estimates.items()}
    reason = NO_TASK if n == 0 else ONE_TASK if n == 1 else None
    return PairedDifference(a, b, n, point["residual"], bounds["residual"], point["clean"], bounds["clean"],
                            point["gap"], bounds["gap"], reason,
                            {f: e.p_value for f, e in estimates.items() if e is not None})

"""Uncertainty of the headline figures: a paired bootstrap over tasks, percentile intervals.

Pure functions (no I/O). The algorithm, exactly, so that another implementation with the same
seed gives the same bounds (docs/uncertainty.md):

1. The tasks of T (:func:`swe_residual.metrics.headline.task_table`) are put in the order of
   their keys (``sorted``: task ids on a track, ``(track, task)`` pairs overall). A task
   carries its clean outcome and its states' outcomes together (the pairing): resampling a
   task resamples both, and a state never leaves its task.
2. ``rng = random.Random(seed)``, a new generator for every (agent, scope): each interval is
   reproducible on its own, whatever other agents or tracks a summary holds.
3. For each of ``resamples`` resamples, in turn: ``n`` draws ``rng.randrange(n)`` (``n`` the
   number of tasks) pick the resampled tasks, with replacement, in draw order.
4. On each resample, Residual, Clean, Gap and CondFail are recomputed by the same functions as
   the point estimates (:func:`~swe_residual.metrics.headline.residual_rate`,
   :func:`~swe_residual.metrics.headline.clean_rate`, their difference,
   :func:`~swe_residual.metrics.headline.cond_fail_rate` over the resampled tasks solved from
   a clean start). A resample where a figure is undefined (CondFail with no task solved from
   clean) is left out of that figure's distribution.
5. The bounds are the percentiles ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` of the
   sorted values, by linear interpolation between order statistics (numpy's default
   ``linear`` method, Hyndman and Fan type 7): for sorted ``v[0..m-1]`` and ``q``,
   ``h = (m - 1) * q``, ``v[floor(h)] + (h - floor(h)) * (v[floor(h) + 1] - v[floor(h)])``.

Fewer than two tasks: no interval (null) with the reason; all outcomes equal: every resample
gives the point estimate, a zero-width interval. The outcomes are whatever the task table
holds (0/1 today, a mean over rollouts in [0, 1] with rollouts): nothing here assumes 0/1.

A paired comparison of two agents (:func:`paired_difference`) resamples their common tasks in
the same way, each draw taking both agents' runs of that task.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from swe_residual.metrics.headline import TaskRuns, clean_rate, cond_fail_rate, residual_rate

__all__ = [
    "DEFAULT_CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "FIGURES", "ONE_TASK", "NO_TASK", "Bound",
    "Intervals", "PairedDifference", "Uncertainty", "bootstrap_intervals", "gap_of", "includes_zero",
    "paired_difference", "percentile", "resample_indices",
]  # fmt: skip

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
#: the figures that get an interval, in the order summary.json lists them
FIGURES = ("residual", "clean", "gap", "cond_fail")
ONE_TASK = "cannot be estimated from one task"
NO_TASK = "no scored task"

Bound = tuple[float, float]


@dataclass(frozen=True)
class Uncertainty:
    """How the intervals are made: ``summary.json``'s top-level ``uncertainty``."""

    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence {self.confidence!r}: must be between 0 and 1 (exclusive)")
        if self.resamples < 1:
            raise ValueError(f"resamples {self.resamples!r}: must be 1 or more")

    @classmethod
    def from_json(cls, raw: object) -> Uncertainty | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(float(raw.get("confidence", DEFAULT_CONFIDENCE)), int(raw.get("resamples", DEFAULT_RESAMPLES)),
                   int(raw.get("seed", DEFAULT_SEED)))

    def to_json(self) -> dict[str, object]:
        return {"confidence": self.confidence, "resamples": self.resamples, "seed": self.seed}


@dataclass(frozen=True)
class Intervals:
    """``[low, high]`` per figure (None where it cannot be estimated), and why not, if so."""

    residual: Bound | None = None
    clean: Bound | None = None
    gap: Bound | None = None
    cond_fail: Bound | None = None
    #: None when every figure that has a point estimate has an interval
    reason: str | None = None

    def get(self, figure: str) -> Bound | None:
        return getattr(self, figure)

    @classmethod
    def from_json(cls, raw: object) -> Intervals | None:
        if not isinstance(raw, Mapping):
            return None

        def bound(value: object) -> Bound | None:
            return (float(value[0]), float(value[1])) if isinstance(value, Sequence) and len(value) == 2 else None

        return cls(*(bound(raw.get(f)) for f in FIGURES), reason=raw.get("reason"))

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {f: list(b) if (b := self.get(f)) is not None else None for f in FIGURES}
        out["reason"] = self.reason
        return out


def gap_of(clean: float | None, residual: float | None) -> float | None:
    """Gap in points, as the headline computes it (None when either rate is)."""
    return None if clean is None or residual is None else clean - residual


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 <= q <= 1) of sorted ``ordered`` by linear interpolation (type 7)."""
    if not ordered:
        raise ValueError("percentile of no values")
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def _bound(values: list[float], confidence: float) -> Bound | None:
    if not values:
        return None
    ordered = sorted(values)
    return percentile(ordered, (1.0 - confidence) / 2.0), percentile(ordered, (1.0 + confidence) / 2.0)


def resample_indices(n: int, rng: random.Random) -> list[int]:
    """One resample: ``n`` draws of ``rng.randrange(n)``, in order."""
    return [rng.randrange(n) for _ in range(n)]


def _ordered_tasks(tasks: Mapping[Hashable, TaskRuns] | Sequence[TaskRuns]) -> list[TaskRuns]:
    runs = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    return sorted(runs, key=lambda t: t.task)  # type: ignore[arg-type, return-value]


def _figures(tasks: Sequence[TaskRuns]) -> dict[str, float | None]:
    residual, clean = residual_rate(tasks), clean_rate(tasks)
    return {"residual": residual, "clean": clean, "gap": gap_of(clean, residual), "cond_fail": cond_fail_rate(tasks)}


def bootstrap_intervals(tasks: Mapping[Hashable, TaskRuns] | Sequence[TaskRuns],
                        uncertainty: Uncertainty = Uncertainty()) -> Intervals:
    """The intervals of one agent's figures on one scope (its task table; module docstring)."""
    ordered = _ordered_tasks(tasks)
    n = len(ordered)
    if n == 0:
        return Intervals(reason=NO_TASK)
    if n == 1:
        return Intervals(reason=ONE_TASK)
    point = _figures(ordered)
    draws: dict[str, list[float]] = {f: [] for f in FIGURES}
    rng = random.Random(uncertainty.seed)
    for _ in range(uncertainty.resamples):
        sample = [ordered[i] for i in resample_indices(n, rng)]
        for figure, value in _figures(sample).items():
            if value is not None:
                draws[figure].append(value)
    bounds = {f: _bound(draws[f], uncertainty.confidence) if point[f] is not None else None for f in FIGURES}
    return Intervals(**bounds)


def includes_zero(bound: Bound | None) -> bool | None:
    """Whether an interval includes 0 (None without an interval)."""
    return None if bound is None else bound[0] <= 0.0 <= bound[1]


@dataclass(frozen=True)
class PairedDifference:
    """Agent ``a`` minus agent ``b`` on their common tasks: each figure's difference and its
    interval (None with fewer than two common tasks; ``reason`` says so)."""

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


def paired_difference(a: str, tasks_a: Mapping[Hashable, TaskRuns], b: str, tasks_b: Mapping[Hashable, TaskRuns],
                      uncertainty: Uncertainty = Uncertainty()) -> PairedDifference:
    """``a`` minus ``b`` in Residual, Clean and Gap on the tasks both ran, with a paired
    bootstrap: the common tasks in key order, ``random.Random(seed)``, ``n`` draws of
    ``randrange(n)`` per resample, each draw taking both agents' runs of that task, the
    differences recomputed per resample and their percentile interval (module docstring)."""
    common = sorted(set(tasks_a) & set(tasks_b))  # type: ignore[type-var]
    n = len(common)
    pairs = [(tasks_a[k], tasks_b[k]) for k in common]

    def diffs(sample: Sequence[tuple[TaskRuns, TaskRuns]]) -> dict[str, float | None]:
        fa, fb = _figures([p[0] for p in sample]), _figures([p[1] for p in sample])
        return {f: gap_of(fa[f], fb[f]) for f in ("residual", "clean", "gap")}

    point = diffs(pairs) if n else {"residual": None, "clean": None, "gap": None}
    bounds: dict[str, Bound | None] = {"residual": None, "clean": None, "gap": None}
    reason = NO_TASK if n == 0 else ONE_TASK if n == 1 else None
    if n >= 2:
        draws: dict[str, list[float]] = {f: [] for f in bounds}
        rng = random.Random(uncertainty.seed)
        for _ in range(uncertainty.resamples):
            for figure, value in diffs([pairs[i] for i in resample_indices(n, rng)]).items():
                if value is not None:
                    draws[figure].append(value)
        bounds = {f: _bound(draws[f], uncertainty.confidence) for f in bounds}
    return PairedDifference(a, b, n, point["residual"], bounds["residual"], point["clean"], bounds["clean"],
                            point["gap"], bounds["gap"], reason)


"""The t interval over tasks: a mean (or a ratio) of per-task values, its standard error from
the spread between tasks, and Student's t quantile with ``n - 1`` degrees of freedom.

Pure functions on per-task values as fractions (a success share in [0, 1], a difference of two
in [-1, 1]); the callers turn them into percent. Why this method: the project's coverage study
(``benchmarks/bench_interval_coverage.py``, docs/uncertainty.md) measured it near the stated
confidence from 10 tasks up (93-97% at 95%), where the percentile bootstrap fell short.

* **Mean** (Residual, Clean, Gap, a pair's differences, pass@K): ``m = mean(v)``,
  ``se = sd(v) / sqrt(n)`` (``sd`` with ``n - 1``), ``m -/+ t(conf, n - 1) * se``, clamped to
  the values' range. The task is the unit: a task's states (and rollouts) are averaged into its
  value first, so what they share never counts as independent evidence.
* **Ratio** (CondFail, the share of disagreeing rollouts): ``R = sum(w f) / sum(w)`` over the
  ``m`` tasks with ``w > 0``; its linearized (delta-method) error is the spread of
  ``z = w (f - R) / mean(w)``: ``se = sd(z) / sqrt(m)``, ``R -/+ t(conf, m - 1) * se``. With
  every ``w = 1`` this is the mean interval of ``f``.
* **All values equal** (every task solved, or none; a difference of 0 on every task): the
  spread is 0 and the t interval would have no width, a bound no data can justify. The rule:
  ``[v - h, v + h]`` clamped to the range, ``h = z^2 / (n + z^2)`` with ``z`` the normal
  quantile, which is the Wilson score interval's upper end for 0 departures among ``n`` tasks
  (``[0, h]`` for a rate of 0 is exactly Wilson's interval). It never has zero width.
* **Near 0% or 100%** (a rate, in [0, 1], where fewer than :data:`NEAR_BOUND_TASKS` tasks have
  a value above 0, or fewer below 1): the spread of a handful of non-zero tasks says little
  about the rate, and the t interval fell to 86-89% coverage there in the study. The interval
  is widened to contain the Wilson score interval of the mean with the tasks as trials
  (``(p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``), which holds its coverage
  near the bounds. A rate of exactly 0 (or 1) on every task gets the same bound as the
  all-equal rule below, so the two rules agree.
* Fewer than two tasks: no interval (None), and the caller says why.

The p-value of a mean against 0 (Holm's adjustment of the pairs) is the two-sided t test's,
and under the all-equal rule the level at which ``[v - h, v + h]`` would just touch 0, so a
difference is significant at a level exactly when its interval at that level excludes 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from swe_residual.metrics.tdist import normal_quantile, t_quantile, t_two_sided_p

__all__ = ["ALL_EQUAL", "NEAR_BOUND", "NEAR_BOUND_TASKS", "T_RULE", "Estimate", "all_equal_half_width",
           "mean_interval", "ratio_interval", "wilson"]

#: how an interval was made: from the spread between tasks, or by the all-equal rule
T_RULE = "t"
ALL_EQUAL = "all-equal"
NEAR_BOUND = "t+score"
#: a rate with fewer tasks than this above 0 (or below 1) is near its bound (the score rule)
NEAR_BOUND_TASKS = 5
#: values closer than this are equal (outcomes are means of a few 0/1: exact in binary but for rounding)
_EQUAL = 1e-12


@dataclass(frozen=True)
class Estimate:
    """A mean (or ratio) over ``n`` tasks, its interval ``[low, high]`` and standard error, the
    rule that made the interval and the two-sided p-value against 0."""

    value: float
    low: float
    high: float
    n: int
    se: float
    rule: str
    p_value: float

    def scaled(self, factor: float) -> Estimate:
        """The same estimate in other units (percent: 100)."""
        return Estimate(self.value * factor, self.low * factor, self.high * factor, self.n, self.se * factor,
                        self.rule, self.p_value)

    @property
    def bound(self) -> tuple[float, float]:
        return self.low, self.high


@lru_cache(maxsize=4096)
def _t(confidence: float, df: int) -> float:
    return t_quantile(confidence, df)


def all_equal_half_width(n: int, confidence: float) -> float:
    """``z^2 / (n + z^2)``: the Wilson upper bound for none of ``n`` tasks departing."""
    z = normal_quantile(confidence)
    return z * z / (n + z * z)


def _all_equal_p(value: float, n: int) -> float:
    # The level at which [v - h, v + h] touches 0: h = |v|, i.e. z^2 = |v| n / (1 - |v|).
    size = abs(value)
    if size <= _EQUAL:
        return 1.0
    if size >= 1.0:
        return 0.0
    z = math.sqrt(size * n / (1.0 - size))
    return 2.0 * (1.0 - NormalDist().cdf(z))


def wilson(p: float, n: int, confidence: float) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` of ``n`` trials."""
    z = normal_quantile(confidence)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(max(0.0, p * (1 - p)) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _near_bound(values: Sequence[float], lower: float, upper: float) -> bool:
    if (lower, upper) != (0.0, 1.0):
        return False  # a difference has no score interval: the rule is for rates
    above = sum(1 for v in values if v > _EQUAL)
    below = sum(1 for v in values if v < 1.0 - _EQUAL)
    return above < NEAR_BOUND_TASKS or below < NEAR_BOUND_TASKS


def _widened(estimate: Estimate, values: Sequence[float], confidence: float) -> Estimate:
    """The near-bound rule: the interval widened to contain Wilson's (module docstring)."""
    if estimate.rule == ALL_EQUAL or not _near_bound(values, 0.0, 1.0):
        return estimate
    low, high = wilson(estimate.value, estimate.n, confidence)
    return Estimate(estimate.value, min(estimate.low, low), max(estimate.high, high), estimate.n, estimate.se,
                    NEAR_BOUND, estimate.p_value)


def _clamp(value: float, lower: float, upper: float) -> float:
    return min(upper, max(lower, value))


def _from_spread(center: float, deviations: Sequence[float], n: int, confidence: float,
                 lower: float, upper: float) -> Estimate:
    if max(deviations) - min(deviations) <= _EQUAL:
        h = all_equal_half_width(n, confidence)
        return Estimate(center, _clamp(center - h, lower, upper), _clamp(center + h, lower, upper), n, 0.0,
                        ALL_EQUAL, _all_equal_p(center, n))
    mean_dev = sum(deviations) / n
    sd = math.sqrt(sum((d - mean_dev) ** 2 for d in deviations) / (n - 1))
    se = sd / math.sqrt(n)
    half = _t(confidence, n - 1) * se
    return Estimate(center, _clamp(center - half, lower, upper), _clamp(center + half, lower, upper), n, se, T_RULE,
                    t_two_sided_p(center / se, n - 1))


def mean_interval(values: Sequence[float], confidence: float, lower: float = 0.0,
                  upper: float = 1.0) -> Estimate | None:
    """The t interval of the mean of per-task ``values`` in ``[lower, upper]`` (module
    docstring); None with fewer than two tasks."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    estimate = _from_spread(mean, list(values), n, confidence, lower, upper)
    return _widened(estimate, values, confidence) if (lower, upper) == (0.0, 1.0) else estimate


def ratio_interval(weights: Sequence[float], values: Sequence[float], confidence: float,
                   lower: float = 0.0, upper: float = 1.0) -> Estimate | None:
    """The interval of ``sum(w f) / sum(w)`` over the tasks with ``w > 0`` (module docstring);
    None with fewer than two such tasks."""
    pairs = [(w, f) for w, f in zip(weights, values, strict=True) if w > 0]
    m = len(pairs)
    if m < 2:
        return None
    total = sum(w for w, _ in pairs)
    ratio = sum(w * f for w, f in pairs) / total
    mean_w = total / m
    deviations = [w * (f - ratio) / mean_w for w, f in pairs]
    estimate = _from_spread(ratio, deviations, m, confidence, lower, upper)
    return _widened(estimate, [f for _, f in pairs], confidence) if (lower, upper) == (0.0, 1.0) else estimate

"""Intervals over tasks: a mean (or a ratio) of per-task values, its standard error from the
spread between tasks, and the rule each kind of figure gets by measured coverage.

Pure functions on per-task values as fractions (a success share in [0, 1], a difference of two
in [-1, 1]); the callers turn them into percent. The task is the unit: a task's states (and
rollouts) are averaged into its value first, so what they share never counts as independent
evidence. Which rule each figure gets was chosen by the project's coverage study
(``benchmarks/bench_interval_coverage.py``, docs/uncertainty.md): the one nearest 95% from 10
tasks up among those measured; where it still misses 94-96%, docs/uncertainty.md says by how
much and why.

* **Rates** (Residual, Clean, pass@K, the share of disagreeing rollouts; CondFail as a ratio):
  the **score interval over tasks**. ``p`` the mean, ``se = sd / sqrt(n)`` (``sd`` with
  ``n - 1``); the effective number of tasks ``n_eff = p (1 - p) / se^2`` (the tasks' spread
  read as if they were Bernoulli trials: more than ``n`` when a task's value is an average of
  several starts), and Wilson's score interval at ``n_eff`` with the two-sided t quantile
  ``q = t(conf, n - 1)``: ``(p + q^2/2n_eff -/+ q sqrt(p(1-p)/n_eff + q^2/4n_eff^2)) /
  (1 + q^2/n_eff)`` (Korn and Graubard's effective-sample-size interval, with Wilson's
  interval in place of Clopper-Pearson's). Where every value is 0 or 1 the tasks are Bernoulli
  trials and nothing about the spread is estimated: Wilson's interval at ``n`` with the normal
  ``z``. Near 0% and 100% the interval is skewed the way the rate is, where the symmetric t
  interval fell to 88% coverage in the study; in the middle it has the t interval's width.
* **Gap** (one agent's Clean minus Residual, per task ``c - r``): **Newcombe's hybrid score
  interval** for a paired difference, from the two rates' score intervals ``[l1, u1]`` of ``c``
  and ``[l2, u2]`` of ``r`` (each at its ``n_eff`` with ``t``, 0/1 values too: ``n_eff = n - 1``
  for them) and the correlation ``phi`` of ``c`` and ``r`` across tasks:
  ``d - sqrt((p1 - l1)^2 + (u2 - p2)^2 - 2 phi (p1 - l1)(u2 - p2))`` to
  ``d + sqrt((u1 - p1)^2 + (p2 - l2)^2 - 2 phi (u1 - p1)(p2 - l2))``. A Gap near 0 rests on
  a handful of tasks whose Clean and Residual differ; the t interval of ``c - r`` collapsed
  there (85% coverage at 10 tasks with fewer than 5 such tasks).
* **A pair's differences** (agent a minus agent b per common task): the **t interval**
  ``m -/+ t(conf, n - 1) se``, clamped to [-1, 1]; its p-value (the two-sided t test's) feeds
  Holm's adjustment.
* **All values equal** (every task solved, or none; a difference of 0 on every task): the
  spread is 0 and an interval from it would have no width, a bound no data can justify. The
  rule: ``[v - h, v + h]`` clamped to the range, ``h = z^2 / (n + z^2)``, Wilson's upper end
  for 0 departures among ``n`` tasks (for a rate of 0 it is Wilson's interval itself). Never
  zero width.
* Fewer than two tasks: no interval (None), and the caller says why.

The p-value of a mean against 0 is the two-sided t test's, and under the all-equal rule the
level at which ``[v - h, v + h]`` would just touch 0, so a pair's difference is significant at
a level exactly when its interval at that level excludes 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from swe_residual.metrics.tdist import normal_quantile, t_quantile, t_two_sided_p

__all__ = ["ALL_EQUAL", "NEWCOMBE", "SCORE", "T_RULE", "Estimate", "all_equal_half_width", "correlation",
           "difference_interval", "mean_interval", "ratio_interval", "score", "wilson"]

#: how an interval was made: from the spread between tasks (t), the score interval over tasks,
#: Newcombe's interval of a paired difference, or the all-equal rule
T_RULE = "t"
SCORE = "score"
NEWCOMBE = "newcombe"
ALL_EQUAL = "all-equal"
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


def score(p: float, n: float, q: float) -> tuple[float, float]:
    """Wilson's score interval of a share ``p`` of ``n`` trials (``n`` need not be whole) at the
    two-sided quantile ``q``, within [0, 1]."""
    q2 = q * q
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = q * math.sqrt(max(0.0, p * (1 - p)) / n + q2 / (4 * n * n)) / (1 + q2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson(p: float, n: int, confidence: float) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` of ``n`` trials."""
    return score(p, n, normal_quantile(confidence))


def _clamp(value: float, lower: float, upper: float) -> float:
    return min(upper, max(lower, value))


def _sd(deviations: Sequence[float]) -> float:
    n = len(deviations)
    mean = sum(deviations) / n
    return math.sqrt(sum((d - mean) ** 2 for d in deviations) / (n - 1))


def _all_equal(center: float, n: int, confidence: float, lower: float, upper: float) -> Estimate:
    h = all_equal_half_width(n, confidence)
    return Estimate(center, _clamp(center - h, lower, upper), _clamp(center + h, lower, upper), n, 0.0,
                    ALL_EQUAL, _all_equal_p(center, n))


def _spread_free(deviations: Sequence[float]) -> bool:
    return max(deviations) - min(deviations) <= _EQUAL


def _from_spread(center: float, deviations: Sequence[float], n: int, confidence: float,
                 lower: float, upper: float, binary: bool = False, df: int | None = None) -> Estimate:
    """The interval of ``center`` from the spread of the tasks' ``deviations``: the all-equal
    rule without spread, the score interval for a rate (``[lower, upper] = [0, 1]``), else t
    (``df`` degrees of freedom: ``n - 1`` unless the estimate is a domain's, see ratio_interval)."""
    if _spread_free(deviations):
        return _all_equal(center, n, confidence, lower, upper)
    df = n - 1 if df is None else df
    se = _sd(deviations) / math.sqrt(n)
    p_value = t_two_sided_p(center / se, df)
    if (lower, upper) == (0.0, 1.0):
        if binary:  # Bernoulli trials: nothing about the spread is estimated
            low, high = wilson(center, n, confidence)
        else:
            low, high = score(center, center * (1 - center) / (se * se), _t(confidence, df))
        return Estimate(center, low, high, n, se, SCORE, p_value)
    half = _t(confidence, df) * se
    return Estimate(center, _clamp(center - half, lower, upper), _clamp(center + half, lower, upper), n, se, T_RULE,
                    p_value)


def _binary(values: Sequence[float]) -> bool:
    return all(v <= _EQUAL or v >= 1.0 - _EQUAL for v in values)


def mean_interval(values: Sequence[float], confidence: float, lower: float = 0.0,
                  upper: float = 1.0) -> Estimate | None:
    """The interval of the mean of per-task ``values`` in ``[lower, upper]``: the score interval
    over tasks for a rate (``[0, 1]``), the t interval for a difference (module docstring);
    None with fewer than two tasks."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return _from_spread(mean, list(values), n, confidence, lower, upper, binary=_binary(values))


def ratio_interval(weights: Sequence[float], values: Sequence[float], confidence: float,
                   lower: float = 0.0, upper: float = 1.0) -> Estimate | None:
    """The interval of ``sum(w f) / sum(w)`` over the ``m`` tasks with ``w > 0``: its linearized
    (delta-method) error, the spread of ``z = w (f - R) / mean(w)``, then the rule of a mean
    (module docstring) with the t quantile at ``n - 1`` degrees of freedom, ``n`` all the tasks
    given: the ``m`` are a domain of the ``n`` sampled, and a domain estimate's degrees of freedom
    are the design's (at ``m - 1`` CondFail covered 96-97% at 10-20 tasks and up to 99.5% near 0%
    in the coverage study; at ``n - 1``, 94-96%: docs/uncertainty.md); None with fewer than two
    such tasks."""
    pairs = [(w, f) for w, f in zip(weights, values, strict=True) if w > 0]
    m = len(pairs)
    if m < 2:
        return None
    total = sum(w for w, _ in pairs)
    ratio = sum(w * f for w, f in pairs) / total
    mean_w = total / m
    deviations = [w * (f - ratio) / mean_w for w, f in pairs]
    binary = all(w == 1.0 for w, _ in pairs) and _binary([f for _, f in pairs])
    return _from_spread(ratio, deviations, m, confidence, lower, upper, binary=binary, df=len(weights) - 1)


def correlation(first: Sequence[float], second: Sequence[float]) -> float:
    """Pearson's correlation of two per-task series; 0 when either has no spread."""
    n = len(first)
    m1, m2 = sum(first) / n, sum(second) / n
    s11 = sum((x - m1) ** 2 for x in first)
    s22 = sum((y - m2) ** 2 for y in second)
    if s11 <= _EQUAL or s22 <= _EQUAL:
        return 0.0
    s12 = sum((x - m1) * (y - m2) for x, y in zip(first, second))
    return _clamp(s12 / math.sqrt(s11 * s22), -1.0, 1.0)


def difference_interval(first: Sequence[float], second: Sequence[float], confidence: float) -> Estimate | None:
    """Newcombe's hybrid score interval of ``mean(first) - mean(second)``, two rates measured on
    the same tasks (module docstring), within [-1, 1]; the all-equal rule when every task's
    difference is the same; None with fewer than two tasks."""
    n = len(first)
    if n < 2:
        return None
    diffs = [x - y for x, y in zip(first, second, strict=True)]
    d = sum(diffs) / n
    if _spread_free(diffs):
        return _all_equal(d, n, confidence, -1.0, 1.0)
    # Each rate's score interval at its effective number of tasks with t, 0/1 values too: with
    # Wilson's z interval for 0/1 values the Gap covered 92-93% at 10 tasks in the study
    one = _from_spread(sum(first) / n, list(first), n, confidence, 0.0, 1.0)
    two = _from_spread(sum(second) / n, list(second), n, confidence, 0.0, 1.0)
    phi = correlation(first, second)
    below_1, above_1 = one.value - one.low, one.high - one.value
    below_2, above_2 = two.value - two.low, two.high - two.value
    low = d - math.sqrt(max(0.0, below_1 ** 2 + above_2 ** 2 - 2 * phi * below_1 * above_2))
    high = d + math.sqrt(max(0.0, above_1 ** 2 + below_2 ** 2 - 2 * phi * above_1 * below_2))
    se = _sd(diffs) / math.sqrt(n)
    return Estimate(d, _clamp(low, -1.0, 1.0), _clamp(high, -1.0, 1.0), n, se, NEWCOMBE,
                    t_two_sided_p(d / se, n - 1))

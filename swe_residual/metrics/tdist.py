"""Student's t distribution for whole degrees of freedom, in the standard library alone.

The intervals over tasks (:mod:`swe_residual.metrics.intervals`) need the t quantile of
``n - 1`` degrees of freedom, ``n`` the number of tasks, and the two-sided p-value of a t
statistic (Holm's adjustment). With whole degrees of freedom the distribution function has a
closed form, a finite sum in ``theta = atan(t / sqrt(df))`` (Abramowitz and Stegun 26.7.3-4),
exact to rounding; the quantile inverts it by bisection. No numerical library is needed.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["t_central", "t_cdf", "t_quantile", "t_two_sided_p", "normal_quantile"]


def t_central(t: float, df: int) -> float:
    """``P(|T| <= t)`` for ``T`` with ``df`` degrees of freedom (``t >= 0``)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df!r}: must be 1 or more")
    if t <= 0.0:
        return 0.0
    if math.isinf(t):
        return 1.0
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if df % 2 == 1:
        # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...)), terms up to cos^(df-2)
        total, term = 0.0, 1.0
        if df > 1:
            total = term
            for j in range(1, (df - 1) // 2):
                term *= c2 * (2 * j) / (2 * j + 1)
                total += term
        return min(1.0, (2.0 / math.pi) * (theta + s * c * total))
    # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...), terms up to cos^(df-2)
    total, term = 1.0, 1.0
    for j in range(1, df // 2):
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return min(1.0, s * total)


def t_cdf(t: float, df: int) -> float:
    """``P(T <= t)``."""
    central = t_central(abs(t), df)
    return 0.5 + central / 2.0 if t >= 0 else 0.5 - central / 2.0


def t_two_sided_p(t: float, df: int) -> float:
    """``P(|T| >= |t|)``: the two-sided p-value of a t statistic."""
    return max(0.0, 1.0 - t_central(abs(t), df))


def t_quantile(confidence: float, df: int) -> float:
    """The ``t`` with ``P(|T| <= t) = confidence``: the two-sided critical value (2.262 for
    0.95 and 9 degrees of freedom), by bisection to the last bits."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence!r}: must be between 0 and 1 (exclusive)")
    low, high = 0.0, 1.0
    while t_central(high, df) < confidence:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if mid in (low, high):
            break
        if t_central(mid, df) < confidence:
            low = mid
        else:
            high = mid
    return high


def normal_quantile(confidence: float) -> float:
    """The two-sided normal critical value (1.96 for 0.95)."""
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)

"""Power stated: the smallest difference a run could detect with its tasks (docs/uncertainty.md).

Before gating on a bound, a team needs to know whether its number of tasks can show what it
wants to see. For a figure that is a mean of per-task values tested against 0 (an agent's Gap,
a pair's difference on its common tasks), the smallest true value the two-sided t test at
confidence ``C`` detects with probability ``power`` is, with ``n`` tasks and ``sd`` the spread
of the per-task values (with ``n - 1``):

    MDE = (t(1 - (1 - C)/2, n - 1) + t(power, n - 1)) * sd / sqrt(n)

``t(q, df)`` the one-sided quantile of Student's t (2.086 and 0.860 for 95%, 80% and 20
degrees of freedom: MDE = 2.946 sd / sqrt(21) = 0.643 sd). The observed ``sd`` stands for the
spread a rerun would see. Pure functions on per-task values as fractions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from swe_residual.metrics.tdist import t_quantile

__all__ = ["NO_SPREAD", "POWER", "TOO_FEW", "detectable", "spread"]

#: the power the smallest detectable difference is stated at
POWER = 0.8
#: why a figure has no smallest detectable difference
TOO_FEW = "fewer than two tasks"
NO_SPREAD = "all tasks equal: no spread"
_EQUAL = 1e-12


def spread(values: Sequence[float]) -> float | None:
    """The sample standard deviation of per-task values (``n - 1``); None with fewer than two."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def detectable(values: Sequence[float], confidence: float, power: float = POWER) -> float | None:
    """The smallest true mean of ``values``' kind the t test at ``confidence`` detects with
    probability ``power`` over ``len(values)`` tasks (module docstring); None with fewer than
    two tasks or without spread (the reasons :data:`TOO_FEW`, :data:`NO_SPREAD`)."""
    sd = spread(values)
    if sd is None or sd <= _EQUAL:
        return None
    n = len(values)
    # t_quantile is two-sided: P(|T| <= q) = 2 p - 1 gives the one-sided p quantile
    return (t_quantile(confidence, n - 1) + t_quantile(2 * power - 1, n - 1)) * sd / math.sqrt(n)

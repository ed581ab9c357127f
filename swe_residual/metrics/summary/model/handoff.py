"""The handoff views' part of the summary (``summary["by_handoff"]``, present only when more
than one view ran; :mod:`swe_residual.trial.handoff.summary` builds it)."""

from __future__ import annotations

from collections.abc import Mapping

from swe_residual.metrics.summary.model.scope import AcceptanceBias, Headline
from swe_residual.metrics.summary.part import Number, Part

__all__ = ["HandoffView", "TakeoverCost"]


class TakeoverCost(Part):
    """Median steps, tokens or cost of the Residual items and of the same tasks' Clean items."""

    residual_median: Number | None = None
    clean_median: Number | None = None
    ratio: Number | None = None
    n_tasks: int = 0
    n_residual: int = 0


class HandoffView(Headline):
    """One agent under one handoff view: the headline pooled over tracks, the acceptance bias
    per track, the takeover cost per quantity."""

    acceptance_bias: Mapping[str, AcceptanceBias] = {}
    takeover: Mapping[str, TakeoverCost] = {}

    def ratio(self, quantity: str) -> float | None:
        """Residual / Clean median of ``steps``, ``tokens`` or ``cost``."""
        cost = self.takeover.get(quantity)
        return cost.ratio if cost is not None else None

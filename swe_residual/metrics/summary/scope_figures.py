"""One agent's figures on one scope (a track, or ``overall``) as a typed
:class:`~swe_residual.metrics.summary.model.ScopeMetrics`: the headline, the acceptance bias, the
intervals, the power, what the figures leave out, with rollouts pass@K and the noise, and where
some task ran no Residual State the Clean rate over Clean Starts alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swe_residual.metrics.acceptance import acceptance_bias
from swe_residual.metrics.headline import (
    TaskRuns, clean_pass_at_k, clean_start_outcomes, dropped_tasks, headline, mean_outcome, pass_at_k_per_task,
    rollout_count, short_starts, state_coverage, task_table,
)  # fmt: skip
from swe_residual.metrics.intervals import Uncertainty, gap_power, percent_bound, task_intervals
from swe_residual.metrics.over_tasks import difference_interval, mean_interval
from swe_residual.metrics.rollout_noise import disagreement_intervals, variance_splits
from swe_residual.metrics.summary.model import (
    AcceptanceBias, CleanPassAtK, CleanStarts, Disagreement, DroppedTask, PassAtK, Power, PredecessorGroup,
    ScopeMetrics, ShortStart, VarianceSplit,
)  # fmt: skip
from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.values import Track

__all__ = ["ACCEPTANCE_TRACK", "scope_metrics"]

#: The track whose acceptance-bias figures ``overall`` carries. Table 4 is computed on DeepSWE
#: (the repo track) alone: "The analysis in Section 5.4 is limited to DeepSWE" (Appendix D), and
#: Kept / Left-out / Same failing mean something else on a machine state, so the machine track
#: is reported on its own and never pooled into an overall acceptance-bias figure.
ACCEPTANCE_TRACK = Track.REPO


def _acceptance(records: Sequence[RunRecord], *, pooled: bool) -> AcceptanceBias | None:
    if pooled:  # overall: the repo track's Table 4 figures (null without repo runs), never a pool
        repo = [r for r in records if r.track == ACCEPTANCE_TRACK]
        return AcceptanceBias.model_validate(acceptance_bias(repo)) if repo else None
    return AcceptanceBias.model_validate(acceptance_bias(records))


def _with_rollouts(figures: dict[str, Any], runs: list[TaskRuns], confidence: float) -> dict[str, Any]:
    """pass@K with its intervals, the starts it leaves out, the disagreement and the rollout
    noise: the parts only a summary of runs with rollouts has (none without)."""
    passes = figures.get("pass_at_k")
    if passes is None:
        return {}
    k = passes["k"]
    per_task = pass_at_k_per_task(runs, k)
    estimates = {"residual": mean_interval([r for _, r in per_task], confidence),
                 "clean": mean_interval([c for c, _ in per_task], confidence),
                 "gap": difference_interval([c for c, _ in per_task], [r for _, r in per_task], confidence)}
    disagree = disagreement_intervals(runs, confidence)
    return {
        "pass_at_k": PassAtK(**passes, intervals={f: percent_bound(e) for f, e in estimates.items()}),
        "short_starts": tuple(ShortStart(**start) for start in short_starts(runs, k)),
        "disagreement": Disagreement(**figures["disagreement"],
                                     intervals={f: percent_bound(e) for f, e in disagree.items()}),
        "rollout_variance": {f: VarianceSplit(**split) if split is not None else None
                             for f, split in variance_splits(runs).items()},
    }


def _percent(values: list[float]) -> float | None:
    return 100.0 * sum(values) / len(values) if values else None


def _clean_starts(records: Sequence[RunRecord], *, pooled: bool, confidence: float) -> CleanStarts | None:
    """The Clean rate (and pass@K with rollouts) over Clean Starts alone, where some task ran no
    Residual State; None where every task ran one (the headline's matched figures say it all)."""
    without, with_states = state_coverage(records, key_by_track=pooled)
    if not without:
        return None
    outcomes = list(clean_start_outcomes(records, key_by_track=pooled).values())
    per_task = [mean_outcome(runs) for runs in outcomes]
    k = rollout_count(records)
    passes = None
    if k > 1:
        values = clean_pass_at_k(outcomes, k)
        passes = CleanPassAtK(k=k, clean=_percent(values), n_tasks=len(values),
                              interval=percent_bound(mean_interval(values, confidence)))
    return CleanStarts(clean=_percent(per_task), n_tasks=len(per_task),
                       interval=percent_bound(mean_interval(per_task, confidence)), pass_at_k=passes,
                       tasks_with_states=with_states, tasks_without_states=without)


def scope_metrics(records: Sequence[RunRecord], *, pooled: bool, uncertainty: Uncertainty) -> ScopeMetrics:
    """The figures of one agent's records on one track, or pooled over its tracks (``overall``:
    tasks keyed by track and task)."""
    figures = headline(records, key_by_track=pooled)
    tasks = task_table(records, key_by_track=pooled)
    # The tasks and states behind CondFail (C_A: tasks solved from the Clean Start), which
    # Figure 2 of the report shows next to its bars. With rollouts, every task solved from Clean
    # Start at least once (it has a weight in CondFail).
    solved = [t for t in tasks.values() if t.clean > 0]
    return ScopeMetrics(
        residual=figures["residual"], clean=figures["clean"], gap=figures["gap"], cond_fail=figures["cond_fail"],
        n_tasks=figures["n_tasks"], n_states=figures["n_states"],
        by_predecessor={p: PredecessorGroup(**group) for p, group in figures["by_predecessor"].items()},
        cond_fail_tasks=len(solved), cond_fail_states=sum(len(t.states) for t in solved),
        acceptance_bias=_acceptance(records, pooled=pooled),
        intervals=task_intervals(tasks, uncertainty),
        power=Power(**gap_power(tasks, uncertainty.confidence)),
        dropped=tuple(DroppedTask(**d) for d in dropped_tasks(records, key_by_track=pooled)),
        **_with_rollouts(figures, list(tasks.values()), uncertainty.confidence),
        clean_starts=_clean_starts(records, pooled=pooled, confidence=uncertainty.confidence),
    )  # fmt: skip

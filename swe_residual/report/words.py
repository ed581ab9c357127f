"""The summary's figures in words, shared by the terminal, summary.md and report.html: one
line per agent in plain words, what the brackets are, and the rollouts' note."""

from __future__ import annotations

from swe_residual.metrics.intervals import METHOD, T_METHOD
from swe_residual.report import meanings
from swe_residual.metrics.summary.model import ScopeMetrics, Summary
from swe_residual.report.tables import PAIRS

__all__ = ["compared", "plain_headline", "plain_headlines", "rollouts_note", "rollouts_of", "uncertainty_line"]


def _plain_number(value: float) -> str:
    """A figure in plain words: whole when it is (nearly) whole, else one decimal."""
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def plain_headline(agent: str, figures: ScopeMetrics) -> str:
    """One agent's overall figures in words, for a reader who has not read the paper:
    "noop: 0% from a clean start, 0% from inherited work, 0 points lost"."""
    clean, residual, gap = figures.clean, figures.residual, figures.gap
    alone = figures.clean_starts
    if clean is None and residual is None and alone is not None and alone.clean is not None:
        # a dataset without states: what the run measured, never taken for the matched figures
        return (f"{agent}: {_plain_number(alone.clean)}% from a clean start on Clean Starts alone "
                f"({alone.n_tasks} task(s); no Residual State to compare)")
    if clean is None and residual is None:
        return f"{agent}: no scored task"
    parts = [f"{_plain_number(clean)}% from a clean start" if clean is not None else "no clean start scored",
             f"{_plain_number(residual)}% from inherited work" if residual is not None else "no inherited work scored"]
    if gap is not None:
        parts.append(f"{_plain_number(gap)} points lost" if gap >= 0 else f"{_plain_number(-gap)} points gained")
    return f"{agent}: " + ", ".join(parts)


def plain_headlines(summary: Summary) -> list[str]:
    """One line per agent (in the summary's agent order), from its overall figures."""
    return [plain_headline(agent, block.overall or ScopeMetrics()) for agent, block in summary.agents.items()]


def uncertainty_line(summary: Summary) -> str | None:
    """What the brackets are, e.g. ``[low, high]: 95% score/Newcombe/t intervals over tasks
    (score-over-tasks, docs/uncertainty.md)``: rates by the score interval, the Gap by
    Newcombe's, a pair's differences by t; None for a summary without intervals."""
    u = summary.uncertainty
    if u is None:
        return None
    conf = f"{100 * u.confidence:g}%"
    if u.method == METHOD:
        return f"[low, high]: {conf} score/Newcombe/t intervals over tasks ({u.method}, docs/uncertainty.md)"
    if u.method == T_METHOD:  # a summary of the method before the score interval, read back
        return f"[low, high]: {conf} t interval over tasks ({u.method}, docs/uncertainty.md)"
    # an older summary, read back: say what made its bounds
    return f"[low, high]: {conf} paired bootstrap interval over tasks ({u.resamples} resamples, seed {u.seed})"


def compared(summary: Summary) -> bool:
    return summary.comparison is not None and summary.comparison.n_agents > 1 and bool(PAIRS.rows_of(summary))


def rollouts_of(s: Summary) -> int | None:
    """K of a summary of runs with rollouts (the most any figures were computed over); None for
    one rollout per start, whose outputs say nothing of rollouts."""
    ks = [scope.pass_at_k.k for block in s.agents.values() for _, scope in [*block.tracks.items(),
          ("overall", block.overall)] if scope is not None and scope.pass_at_k is not None]
    return max(ks) if ks else None


def rollouts_note(k: int) -> str:
    return (f"With {k} rollouts per start, a start's outcome is the mean of its rollouts; pass@K is "
            f"{meanings.PASS_AT_K.format(k=k)}; Disagree is {meanings.DISAGREE}.")

"""The summary's per-agent parts in a run's agent order (the command line's), for the renderers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from swe_residual.metrics.summary.model import Pair, Summary

__all__ = ["in_agent_order"]

_V = TypeVar("_V")


def _ordered(mapping: Mapping[str, _V], order: Sequence[str]) -> dict[str, _V]:
    first = [agent for agent in dict.fromkeys(order) if agent in mapping]
    return {agent: mapping[agent] for agent in [*first, *(a for a in mapping if a not in first)]}


def in_agent_order(summary: Summary, order: Sequence[str]) -> Summary:
    """`summary` with its per-agent parts in `order` (a run's: the command line's), any other
    agent after them: every table drawn from it then lists the agents the same way. The JSON
    file's keys stay sorted; only the renderers see the difference."""
    infra = summary.infra.model_copy(update={"by_agent": _ordered(summary.infra.by_agent, order)})
    update: dict[str, object] = {"agents": _ordered(summary.agents, order), "infra": infra}
    if summary.by_handoff:
        update["by_handoff"] = _ordered(summary.by_handoff, order)
    comparison = summary.comparison
    if comparison is not None and comparison.pairs is not None:
        pairs = {scope: _pairs_in_order(found, order) for scope, found in comparison.pairs.items()}
        update["comparison"] = comparison.model_copy(update={"pairs": pairs})
    return summary.model_copy(update=update)


def _pairs_in_order(pairs: Sequence[Pair], order: Sequence[str]) -> tuple[Pair, ...]:
    """Each pair as `a - b` with `a` the agent given first (the computation orders them by name),
    the pairs in the agents' order: `oracle - noop` for `--agent=oracle --agent=noop`."""
    rank = {agent: index for index, agent in enumerate(order)}

    def position(agent: str) -> tuple[int, str]:
        return rank.get(agent, len(rank)), agent

    oriented = [_flipped(pair) if position(pair.b) < position(pair.a) else pair for pair in pairs]
    return tuple(sorted(oriented, key=lambda pair: (position(pair.a), position(pair.b))))


def _flipped(pair: Pair) -> Pair:
    """b - a from a - b: every difference negated, every interval mirrored; p-values and verdicts
    (two-sided) are the same."""
    update: dict[str, object] = {"a": pair.b, "b": pair.a}
    for figure in ("residual", "clean", "gap"):
        value, interval = getattr(pair, figure), getattr(pair, f"{figure}_interval")
        if value is not None:
            update[figure] = -value
        if interval is not None:
            update[f"{figure}_interval"] = (-interval[1], -interval[0])
    return pair.model_copy(update=update)

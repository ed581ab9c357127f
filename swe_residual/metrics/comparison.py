"""Comparing agents: rankings under Clean and Residual starts, reversals, unsolved states.

Pure functions over the run records and the pairs they give (the typed comparison block of the
summary is assembled from them by :mod:`swe_residual.metrics.summary.comparison`). The paper's point is
that the order of agents can flip once they start from inherited work (GLM 68.9 clean / 15.4
residual vs. Qwen 51.1 / 30.6): a reversal is a pair whose order under Clean is the opposite of
its order under Residual on the tasks both agents ran (their common tasks: a margin measured on
each agent's own tasks would compare different tasks), and both margins are reported with their
intervals on those tasks.

Many pairs at once: the pairs of one scope are one family per figure (Residual, Clean, Gap),
and Holm's step-down adjustment keeps the chance of any false "significant" in a family at
most ``1 - confidence``. Each pair carries both verdicts: raw (its interval excludes 0) and
adjusted (``*_significant_adjusted``, from Holm's adjusted p-value).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from swe_residual.metrics.headline import Record, TaskRuns, dedupe_records, is_excluded, task_table
from swe_residual.metrics.intervals import Uncertainty, paired_difference
from swe_residual.dataset.values import Outcome, Start

__all__ = [
    "EPSILON",
    "FAMILY",
    "holm_adjusted",
    "RATES",
    "clip_left",
    "label_reversals",
    "paired_comparisons",
    "rank",
    "reversals",
    "unsolved_states",
]

#: the two rates agents are ranked by
RATES = ("clean", "residual")
#: two rates closer than this (in points) are a tie: summaries are unrounded floats, and
#: the same success share computed along two paths can differ in the last bits
EPSILON = 1e-9
#: the family Holm's adjustment runs over (summary.json's ``comparison.multiplicity.family``)
FAMILY = "all pairs of agents in one scope (a track, or overall), one figure at a time"
#: the differences a pair carries
PAIR_FIGURES = ("residual", "clean", "gap")


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest (from 0) of
    m is ``max over j <= i of min(1, (m - j) p_(j))``. A hypothesis is rejected at level alpha
    exactly when its adjusted p-value is below alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def rank(values: Mapping[str, float]) -> list[dict[str, Any]]:
    """Standard competition ranking ("1224"), best first; ties share a rank and are listed by
    name so the order is stable."""
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    out: list[dict[str, Any]] = []
    for position, (agent, value) in enumerate(ordered, start=1):
        tied = out and abs(out[-1]["value"] - value) <= EPSILON
        out.append({"agent": agent, "value": value, "rank": out[-1]["rank"] if tied else position})
    return out


def reversals(pairs: Sequence[Mapping[str, Any]], scope: str) -> list[dict[str, Any]]:
    """Every pair whose order flips on its common tasks: ``clean_leader`` strictly ahead on
    Clean and ``residual_leader`` strictly ahead on Residual there (``pairs``: one scope's, as
    :func:`paired_comparisons` makes them); margins in points (unrounded), ``n_tasks`` the
    common tasks. A tie on either side is not a reversal. Sorted by the sum of the margins,
    largest first."""
    found: list[dict[str, Any]] = []
    for pair in pairs:
        clean_margin, residual_margin = pair.get("clean"), pair.get("residual")
        if clean_margin is None or residual_margin is None:
            continue
        if abs(clean_margin) <= EPSILON or abs(residual_margin) <= EPSILON:
            continue
        if (clean_margin > 0) == (residual_margin > 0):
            continue
        leader, follower = (pair["a"], pair["b"]) if clean_margin > 0 else (pair["b"], pair["a"])
        found.append({"scope": scope, "clean_leader": leader, "residual_leader": follower,
                      "clean_margin": abs(clean_margin), "residual_margin": abs(residual_margin),
                      "n_tasks": pair["n_tasks"]})
    found.sort(key=lambda r: (-(r["clean_margin"] + r["residual_margin"]), r["clean_leader"], r["residual_leader"]))
    return found


def unsolved_states(records: Iterable[Record]) -> dict[str, Any]:
    """Residual states (track, task, state) that some agent ran with a valid verdict and no
    agent solved; infra-excluded runs neither solve nor count a state as attempted."""
    attempted: dict[tuple[str, str, str], set[str]] = {}
    solved: set[tuple[str, str, str]] = set()
    for r in dedupe_records(records):
        if r.start != Start.RESIDUAL or is_excluded(r):
            continue
        key = (str(r.track), str(r.task), str(r.state))
        attempted.setdefault(key, set()).add(str(r.agent))
        if r.outcome == Outcome.SUCCESS:
            solved.add(key)
    states = [
        {"track": t, "task": task, "state": s, "agents": len(attempted[(t, task, s)])}
        for (t, task, s) in sorted(attempted)
        if (t, task, s) not in solved
    ]
    return {"n_states": len(attempted), "unsolved": states}


def _task_tables(records: Iterable[Record], scopes: Sequence[str]) -> dict[str, dict[str, dict[Any, TaskRuns]]]:
    """``{scope: {agent: task table}}``: a track's tasks by id, ``overall``'s by (track, task)."""
    by_agent: dict[str, list[Any]] = {}
    for r in dedupe_records(records):
        by_agent.setdefault(str(r.agent), []).append(r)
    out: dict[str, dict[str, dict[Any, TaskRuns]]] = {}
    for scope in scopes:
        out[scope] = {}
        for agent in sorted(by_agent):
            recs = by_agent[agent] if scope == "overall" else [r for r in by_agent[agent] if r.track == scope]
            table = task_table(recs, key_by_track=scope == "overall")
            if table:
                out[scope][agent] = table
    return out


def paired_comparisons(records: Iterable[Record], scopes: Sequence[str],
                       uncertainty: Uncertainty = Uncertainty()) -> dict[str, list[dict[str, Any]]]:
    """Per scope, every pair of agents (by name, ``a`` < ``b``): ``a`` minus ``b`` in Residual,
    Clean and Gap on their common tasks with t intervals over the per-task differences
    (:func:`swe_residual.metrics.intervals.paired_difference`); ``*_significant``: the
    interval excludes 0 (None without one); ``*_p``: the two-sided p-value; ``*_p_adjusted`` and
    ``*_significant_adjusted``: after Holm's adjustment across the scope's pairs (:data:`FAMILY`);
    ``*_sd`` and ``*_detectable``: the spread of the per-task differences and the smallest
    difference the pair's common tasks could detect (:mod:`swe_residual.metrics.power`)."""
    tables = _task_tables(records, scopes)
    alpha = 1.0 - uncertainty.confidence
    out: dict[str, list[dict[str, Any]]] = {}
    for scope in scopes:
        found = []
        for a, b in combinations(sorted(tables[scope]), 2):
            d = paired_difference(a, tables[scope][a], b, tables[scope][b], uncertainty)
            row: dict[str, Any] = {"a": a, "b": b, "n_tasks": d.n_tasks}
            for figure, value, bound in (("residual", d.residual, d.residual_interval),
                                         ("clean", d.clean, d.clean_interval), ("gap", d.gap, d.gap_interval)):
                row[figure] = value
                row[f"{figure}_interval"] = list(bound) if bound is not None else None
                row[f"{figure}_significant"] = None if bound is None else not bound[0] <= 0.0 <= bound[1]
            row["reason"] = d.reason
            for figure in PAIR_FIGURES:
                row[f"{figure}_p"] = d.p_values.get(figure)
                row[f"{figure}_sd"], row[f"{figure}_detectable"] = d.power.get(figure, (None, None))
            found.append(row)
        for figure in PAIR_FIGURES:  # one family per figure: the scope's pairs that have a p-value
            tested = [row for row in found if row[f"{figure}_p"] is not None]
            for row, adjusted in zip(tested, holm_adjusted([row[f"{figure}_p"] for row in tested])):
                row[f"{figure}_p_adjusted"] = adjusted
                row[f"{figure}_significant_adjusted"] = adjusted < alpha
            for row in found:
                row.setdefault(f"{figure}_p_adjusted", None)
                row.setdefault(f"{figure}_significant_adjusted", None)
        out[scope] = found
    return out


def _leader_minus_follower(pair: Mapping[str, Any], figure: str, leader: str) -> list[float] | None:
    bound = pair.get(f"{figure}_interval")
    if bound is None:
        return None
    return list(bound) if pair["a"] == leader else [0.0 - bound[1], 0.0 - bound[0]]  # no -0.0


def label_reversals(found: Sequence[dict[str, Any]], pairs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each reversal with the intervals of its two margins on the same common tasks it was
    found on (``clean_interval``: clean leader minus residual leader on Clean;
    ``residual_interval``: residual leader minus clean leader on Residual), ``significant``:
    both intervals above 0 (False when either includes 0; None when the agents share fewer
    than two tasks), and ``significant_adjusted``: both differences significant after Holm's
    adjustment."""
    by_pair = {frozenset((p["a"], p["b"])): p for p in pairs}
    out = []
    for r in found:
        pair = by_pair.get(frozenset((r["clean_leader"], r["residual_leader"])))
        clean = _leader_minus_follower(pair, "clean", r["clean_leader"]) if pair else None
        residual = _leader_minus_follower(pair, "residual", r["residual_leader"]) if pair else None
        significant = None if clean is None or residual is None else clean[0] > 0.0 and residual[0] > 0.0
        adjusted = None
        if pair and significant is not None:
            flags = (pair.get("clean_significant_adjusted"), pair.get("residual_significant_adjusted"))
            adjusted = None if None in flags else all(flags)
        out.append({**r, "clean_interval": clean, "residual_interval": residual, "significant": significant,
                    "significant_adjusted": adjusted})
    return out


def clip_left(name: str, width: int) -> str:
    # Keep the end: agent specs differ at the end (module:pkg.mod:Class, cmd:... --model X).
    return name if len(name) <= width else "..." + name[-(width - 3) :]

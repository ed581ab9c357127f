"""Comparing agents: rankings under Clean and Residual starts, reversals, unsolved states.

Pure functions over the summary dict (``build_summary``) and, for the states no agent solved,
over the run records. The paper's point is that the order of agents can flip once they start
from inherited work (GLM 68.9 clean / 15.4 residual vs. Qwen 51.1 / 30.6): a reversal is a
pair whose order under Clean is the opposite of its order under Residual, and both margins
are reported so a reader can judge whether it is more than noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from swe_residual.metrics.headline import RecordLike, dedupe_records, is_excluded
from swe_residual.trial.record_model import as_records
from swe_residual.trial.values import Outcome, Start

__all__ = [
    "EPSILON",
    "RATES",
    "comparison",
    "headline_line",
    "rank",
    "ranking_table",
    "rankings",
    "reversals",
    "scopes_of",
    "unsolved_states",
]

#: the two rates agents are ranked by
RATES = ("clean", "residual")
#: two rates closer than this (in points) are a tie: summaries are unrounded floats, and
#: the same success share computed along two paths can differ in the last bits
EPSILON = 1e-9


def scopes_of(summary: Mapping[str, Any]) -> list[str]:
    """The tracks present in the summary (sorted), then ``overall``."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    tracks = sorted({t for block in agents.values() for t in block.get("tracks", {})})
    return [*tracks, "overall"]


def _metrics(agent_block: Mapping[str, Any], scope: str) -> Mapping[str, Any] | None:
    if scope == "overall":
        return agent_block.get("overall")
    return agent_block.get("tracks", {}).get(scope)


def _values(summary: Mapping[str, Any], scope: str, rate: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for agent, block in summary.get("agents", {}).items():
        m = _metrics(block, scope)
        if m is not None and m.get(rate) is not None:
            out[agent] = float(m[rate])
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


def rankings(summary: Mapping[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{scope: {"clean": [...], "residual": [...]}}`` for every track and ``overall``."""
    return {scope: {rate: rank(_values(summary, scope, rate)) for rate in RATES} for scope in scopes_of(summary)}


def reversals(summary: Mapping[str, Any], scope: str) -> list[dict[str, Any]]:
    """Every pair whose order flips: ``clean_leader`` is strictly ahead on Clean, and
    ``residual_leader`` strictly ahead on Residual; margins are in points (unrounded).

    A tie on either side is not a reversal. Sorted by the sum of the margins, largest first.
    """
    clean = _values(summary, scope, "clean")
    residual = _values(summary, scope, "residual")
    agents = sorted(set(clean) & set(residual))
    found: list[dict[str, Any]] = []
    for a, b in combinations(agents, 2):
        clean_margin = clean[a] - clean[b]
        residual_margin = residual[a] - residual[b]
        if abs(clean_margin) <= EPSILON or abs(residual_margin) <= EPSILON:
            continue
        if (clean_margin > 0) == (residual_margin > 0):
            continue
        leader, follower = (a, b) if clean_margin > 0 else (b, a)
        found.append(
            {
                "scope": scope,
                "clean_leader": leader,
                "residual_leader": follower,
                "clean_margin": abs(clean_margin),
                "residual_margin": abs(residual_margin),
            }
        )
    found.sort(key=lambda r: (-(r["clean_margin"] + r["residual_margin"]), r["clean_leader"], r["residual_leader"]))
    return found


def unsolved_states(records: Iterable[RecordLike]) -> dict[str, Any]:
    """Residual states (track, task, state) that some agent ran with a valid verdict and no
    agent solved; infra-excluded runs neither solve nor count a state as attempted."""
    attempted: dict[tuple[str, str, str], set[str]] = {}
    solved: set[tuple[str, str, str]] = set()
    for r in dedupe_records(as_records(records)):
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


def comparison(summary: Mapping[str, Any], records: Iterable[RecordLike]) -> dict[str, Any]:
    """The ``summary["comparison"]`` block:
    ``{rankings, reversals: {scope: [...]}, n_agents, states: {n_states, unsolved}}``."""
    scopes = scopes_of(summary)
    return {
        "n_agents": len(summary.get("agents", {})),
        "rankings": rankings(summary),
        "reversals": {scope: reversals(summary, scope) for scope in scopes},
        "states": unsolved_states(records),
    }


def _most_important(block: Mapping[str, Any]) -> tuple[dict[str, Any] | None, int]:
    """The reversal to state (largest summed margin; on a tie ``overall`` first) and how many
    distinct agent pairs reverse in any scope."""
    everything: list[dict[str, Any]] = [r for rs in block.get("reversals", {}).values() for r in rs]
    if not everything:
        return None, 0
    pairs = {frozenset((r["clean_leader"], r["residual_leader"])) for r in everything}
    best = min(
        everything,
        key=lambda r: (-(r["clean_margin"] + r["residual_margin"]), r["scope"] != "overall", r["scope"]),
    )
    return best, len(pairs)


def _clip_left(name: str, width: int) -> str:
    # Keep the end: agent specs differ at the end (module:pkg.mod:Class, cmd:... --model X).
    return name if len(name) <= width else "..." + name[-(width - 3) :]


def headline_line(block: Mapping[str, Any], *, single_scope: bool = False, width: int | None = None) -> str:
    """The one comparison line worth a reader's time, e.g.
    ``ranking reversed: X over Y on clean (+17.8), Y over X on residual (+15.2)``
    or ``no ranking reversal; 3 of 12 states solved by no agent``.

    With ``width``, a reversal that does not fit is said with each name once, as X minus Y
    (``X vs Y: clean +17.8, residual -15.2``), names clipped to fit.
    """
    states = block.get("states") or {}
    n_unsolved = len(states.get("unsolved") or [])
    n_states = states.get("n_states", 0)
    unsolved = f"{n_unsolved} of {n_states} states solved by no agent"
    best, n_pairs = _most_important(block)
    if best is None:
        prefix = "no ranking reversal" if block.get("n_agents", 0) > 1 else "one agent, no ranking"
        return f"{prefix}; {unsolved}"
    where = "" if single_scope or best["scope"] == "overall" else f" [{best['scope']}]"
    more = f"; {n_pairs - 1} more pair(s) reversed" if n_pairs > 1 else ""
    a, b = best["clean_leader"], best["residual_leader"]
    cm, rm = best["clean_margin"], best["residual_margin"]
    line = f"ranking reversed{where}: {a} over {b} on clean (+{cm:.1f}), {b} over {a} on residual (+{rm:.1f}){more}"
    if width is None or len(line) <= width:
        return line
    rest = f": clean +{cm:.1f}, residual -{rm:.1f}{more}"
    head = f"ranking reversed{where}: "
    room = max(12, (width - len(head) - len(" vs ") - len(rest)) // 2)
    return f"{head}{_clip_left(a, room)} vs {_clip_left(b, room)}{rest}"


def ranking_table(block: Mapping[str, Any], scope: str) -> Sequence[dict[str, Any]]:
    """Rows ``{agent, clean_rank, clean, residual_rank, residual, moved}`` for one scope,
    ordered by Residual rank (``moved`` > 0: the agent climbs from Clean to Residual)."""
    scope_rankings = block.get("rankings", {}).get(scope, {})
    clean = {r["agent"]: r for r in scope_rankings.get("clean", [])}
    residual = {r["agent"]: r for r in scope_rankings.get("residual", [])}
    rows = []
    for agent in sorted(set(clean) | set(residual), key=lambda a: (residual.get(a, {}).get("rank", 10**9), a)):
        c, r = clean.get(agent), residual.get(agent)
        rows.append(
            {
                "agent": agent,
                "clean_rank": c["rank"] if c else None,
                "clean": c["value"] if c else None,
                "residual_rank": r["rank"] if r else None,
                "residual": r["value"] if r else None,
                "moved": (c["rank"] - r["rank"]) if c and r else None,
            }
        )
    return rows

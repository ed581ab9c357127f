"""Goldens for agent comparison: rankings (ties), reversals with their margins, unsolved states,
the comparison block in the summary and its one terminal line."""

from __future__ import annotations

from typing import Any

import pytest

from swe_residual.metrics.comparison import (
    comparison,
    headline_line,
    rank,
    ranking_table,
    rankings,
    reversals,
    unsolved_states,
)
from swe_residual.summary.aggregate import build_summary, render_terminal

pytestmark = pytest.mark.unit


def summary_of(rates: dict[str, dict[str, tuple[float | None, float | None]]]) -> dict[str, Any]:
    """A hand-built summary: ``{agent: {track: (clean, residual)}}``; overall = the first track's
    figures unless a track named "overall" is given."""
    agents: dict[str, Any] = {}
    for agent, tracks in rates.items():
        blocks = {t: {"clean": c, "residual": r} for t, (c, r) in tracks.items() if t != "overall"}
        overall = tracks.get("overall", next(iter(tracks.values())))
        agents[agent] = {"tracks": blocks, "overall": {"clean": overall[0], "residual": overall[1]}}
    return {"schema": 1, "agents": agents, "infra": {}}


# The paper's DeepSWE example (Section 5): GLM leads from the Clean Start, Qwen from Residual.
DEEPSWE = summary_of({"GLM-4.6": {"repo": (68.9, 15.4)}, "Qwen3-Coder": {"repo": (51.1, 30.6)}})


def test_deepswe_example_is_a_reversal_with_both_margins() -> None:
    (found,) = reversals(DEEPSWE, "repo")
    assert found["clean_leader"] == "GLM-4.6" and found["residual_leader"] == "Qwen3-Coder"
    assert found["clean_margin"] == pytest.approx(17.8)  # 68.9 - 51.1
    assert found["residual_margin"] == pytest.approx(15.2)  # 30.6 - 15.4
    block = comparison(DEEPSWE, [])
    assert block["reversals"]["overall"] == [dict(found, scope="overall", clean_interval=None, residual_interval=None,
                                                    significant=None)]  # no records: no paired interval
    assert headline_line(block, single_scope=True) == (
        "ranking reversed: GLM-4.6 over Qwen3-Coder on clean (+17.8), "
        "Qwen3-Coder over GLM-4.6 on residual (+15.2)"
    )


def test_rankings_share_ranks_on_ties() -> None:
    ranked = rank({"a": 50.0, "b": 70.0, "c": 50.0, "d": 10.0, "e": 50.0 + 1e-12})
    # competition ranking "1224": three-way tie at 50 (within float noise) shares rank 2, d is 5th
    assert [(r["agent"], r["rank"]) for r in ranked] == [("b", 1), ("e", 2), ("a", 2), ("c", 2), ("d", 5)]
    assert rank({}) == []


def test_rankings_per_track_and_overall() -> None:
    summary = summary_of(
        {
            "x": {"repo": (80.0, 40.0), "machine": (20.0, 20.0), "overall": (50.0, 30.0)},
            "y": {"repo": (60.0, 50.0), "machine": (30.0, 10.0), "overall": (45.0, 30.0)},
            "z": {"repo": (None, None), "overall": (None, None)},  # no task in T: unranked
        }
    )
    ranks = rankings(summary)
    assert list(ranks) == ["machine", "repo", "overall"]
    assert [(r["agent"], r["rank"]) for r in ranks["repo"]["clean"]] == [("x", 1), ("y", 2)]
    assert [(r["agent"], r["rank"]) for r in ranks["repo"]["residual"]] == [("y", 1), ("x", 2)]
    assert [(r["agent"], r["rank"]) for r in ranks["overall"]["residual"]] == [("x", 1), ("y", 1)]
    # repo reverses (x +20 clean, y +10 residual); machine: y ahead on clean (+10), x on
    # residual (+10); overall: residual tie -> no reversal
    assert [(r["clean_leader"], r["clean_margin"], r["residual_margin"]) for r in reversals(summary, "repo")] == [
        ("x", pytest.approx(20.0), pytest.approx(10.0))
    ]
    assert [r["clean_leader"] for r in reversals(summary, "machine")] == ["y"]
    assert reversals(summary, "overall") == []
    table = ranking_table(comparison(summary, []), "repo")
    assert [(r["agent"], r["clean_rank"], r["residual_rank"], r["moved"]) for r in table] == [
        ("y", 2, 1, 1),
        ("x", 1, 2, -1),
    ]
    # the terminal names the track when the reversal is not overall; it says how many more
    line = headline_line(comparison(summary, []))
    # (x/y reverse in both tracks: one pair, the larger summed margin, repo's, is stated)
    assert line == "ranking reversed [repo]: x over y on clean (+20.0), y over x on residual (+10.0)"


def test_no_reversal_when_order_agrees_or_ties() -> None:
    agree = summary_of({"a": {"repo": (90.0, 50.0)}, "b": {"repo": (60.0, 40.0)}, "c": {"repo": (60.0, 45.0)}})
    # b and c tie on clean: a tie on either side is not a reversal
    assert reversals(agree, "repo") == []
    block = comparison(agree, [])
    assert headline_line(block) == "no ranking reversal; 0 of 0 states solved by no agent"
    assert headline_line(comparison(summary_of({"solo": {"repo": (50.0, 20.0)}}), [])).startswith(
        "one agent, no ranking"
    )


def test_every_reversed_pair_is_listed_largest_first() -> None:
    summary = summary_of(
        {"a": {"repo": (90.0, 10.0)}, "b": {"repo": (70.0, 30.0)}, "c": {"repo": (50.0, 60.0)}}
    )
    found = reversals(summary, "repo")
    pairs = [(r["clean_leader"], r["residual_leader"], round(r["clean_margin"] + r["residual_margin"], 6)) for r in found]
    # a/c: 40 + 50 = 90; b/c: 20 + 30 = 50; a/b: 20 + 20 = 40
    assert pairs == [("a", "c", 90.0), ("b", "c", 50.0), ("a", "b", 40.0)]
    line = headline_line(comparison(summary, []), single_scope=True)
    assert line == "ranking reversed: a over c on clean (+40.0), c over a on residual (+50.0); 2 more pair(s) reversed"


def rec(agent: str, task: str, state: str | None, outcome: str, track: str = "repo") -> dict[str, Any]:
    return {
        "agent": agent, "task": task, "track": track, "start": "clean" if state is None else "residual",
        "state": state, "predecessor": None if state is None else "P", "outcome": outcome,
        "termination": "submitted", "attempts": [],
    }  # fmt: skip


def test_states_no_agent_solved_from_records() -> None:
    records = [
        rec("a", "t1", None, "success"),
        rec("a", "t1", "s1", "failure"),
        rec("b", "t1", "s1", "success"),  # s1 solved by b
        rec("a", "t1", "s2", "failure"),
        rec("b", "t1", "s2", "failure"),  # s2: nobody
        rec("a", "t2", "s1", "infra_error"),  # t2/s1: only an infra error -> not attempted
        rec("a", "t3", "s1", "success"),
        rec("a", "t3", "s1", "failure"),  # the later record of a key wins -> unsolved
        rec("b", "m1", "s1", "failure", track="machine"),
    ]
    states = unsolved_states(records)
    assert states["n_states"] == 4
    assert [(u["track"], u["task"], u["state"], u["agents"]) for u in states["unsolved"]] == [
        ("machine", "m1", "s1", 1),
        ("repo", "t1", "s2", 2),
        ("repo", "t3", "s1", 1),
    ]


def test_summary_comparison_block_and_terminal_line() -> None:
    # alpha leads on Clean (100 vs 0), beta on Residual (50 vs 0)
    records = [
        rec("alpha", "t1", None, "success"),
        rec("alpha", "t1", "s1", "failure"),
        rec("beta", "t1", None, "failure"),
        rec("beta", "t1", "s1", "success"),
        rec("alpha", "t1", "s2", "failure"),
        rec("beta", "t1", "s2", "failure"),
    ]
    plain = build_summary(records)
    assert "comparison" not in plain  # the section 5 layout stays exact unless asked for
    summary = build_summary(records, compare=True)
    assert {k: v for k, v in summary.items() if k != "comparison"} == plain
    block = summary["comparison"]
    assert set(block) == {"n_agents", "rankings", "reversals", "states", "pairs"}
    (found,) = block["reversals"]["repo"]
    assert (found["clean_margin"], found["residual_margin"]) == (pytest.approx(100.0), pytest.approx(50.0))
    assert [u["state"] for u in block["states"]["unsolved"]] == ["s2"]
    lines = render_terminal(summary)
    # one common task: no interval, so the reversal is said without a verdict on its noise
    assert (
        "ranking reversed: alpha over beta on clean (+100.0), beta over alpha on residual (+50.0)"
    ) in lines
    assert found["significant"] is None and block["pairs"]["repo"][0]["reason"] == "cannot be estimated from one task"
    assert lines[-1].startswith("infra:")
    assert all(len(line) <= 100 for line in lines)
    no_reversal = build_summary([r for r in records if r["agent"] == "alpha"], compare=True)
    assert "one agent, no ranking; 2 of 2 states solved by no agent" in render_terminal(no_reversal)


def test_long_names_fit_the_terminal_line() -> None:
    long_a, long_b = "module:agents.harness:" + "A" * 40 + "Clean", "cmd:run-agent --model " + "B" * 40
    block = comparison(summary_of({long_a: {"repo": (68.9, 15.4)}, long_b: {"repo": (51.1, 30.6)}}), [])
    assert len(headline_line(block)) > 100  # the full form, as the HTML report shows it
    line = headline_line(block, width=100)
    # each name once, clipped from the left (specs differ at the end), margins as A minus B
    assert len(line) <= 100 and line == (
        "ranking reversed: ..." + "A" * 16 + "Clean vs ..." + "B" * 21 + ": clean +17.8, residual -15.2"
    )
    assert line.startswith("ranking reversed: ...")

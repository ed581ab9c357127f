"""Bootstrap intervals: the documented algorithm against an implementation written here, the
degenerate cases, the intervals in summary.json, the paired comparison of agents and the gates
on the bound (hand-made record sets)."""

from __future__ import annotations

import math
import random

import pytest
from recordfactory import make_record

from swe_residual.metrics.headline import StateRun, TaskRuns
from swe_residual.metrics.intervals import (
    ONE_TASK, Uncertainty, bootstrap_intervals, paired_difference, percentile,
)  # fmt: skip
from swe_residual.run.gates import evaluate_gates, parse_gate
from swe_residual.summary.aggregate import build_summary, render_markdown, render_terminal

pytestmark = pytest.mark.unit

S, F = "success", "failure"


def _tasks(spec: dict[str, tuple[float, list[float]]]) -> dict[str, TaskRuns]:
    """{task: (clean outcome, [state outcomes])} as a task table."""
    return {task: TaskRuns(task, clean, tuple(StateRun(f"s{i}", "P", y) for i, y in enumerate(states)))  # type: ignore[arg-type]
            for task, (clean, states) in spec.items()}


# ----------------------------------------------------------------- an independent implementation


def _quantile(values: list[float], q: float) -> float:
    # numpy's "linear" method written from its definition: position (m - 1) q between order statistics
    v = sorted(values)
    pos = (len(v) - 1) * q
    below, above = int(math.floor(pos)), int(math.ceil(pos))
    return v[below] * (1 - (pos - below)) + v[above] * (pos - below) if below != above else v[below]


def _independent(spec: dict[str, tuple[float, list[float]]], seed: int, resamples: int, confidence: float
                 ) -> dict[str, tuple[float, float] | None]:
    """docs/uncertainty.md's algorithm: tasks in key order, Random(seed), n randrange(n) draws
    per resample; Residual = mean over tasks of the state mean, Clean = mean clean outcome,
    Gap = Clean - Residual, CondFail = over tasks solved from clean, mean of (1 - y)."""
    keys = sorted(spec)
    n = len(keys)
    rng = random.Random(seed)
    out: dict[str, list[float]] = {"residual": [], "clean": [], "gap": [], "cond_fail": []}
    for _ in range(resamples):
        picked = [spec[keys[rng.randrange(n)]] for _ in range(n)]
        res = 100 * sum(sum(states) / len(states) for _, states in picked) / n
        cln = 100 * sum(clean for clean, _ in picked) / n
        solved = [states for clean, states in picked if clean == 1]
        out["residual"].append(res)
        out["clean"].append(cln)
        out["gap"].append(cln - res)
        if solved:
            out["cond_fail"].append(100 * sum(sum(1 - y for y in s) / len(s) for s in solved) / len(solved))
    lo, hi = (1 - confidence) / 2, (1 + confidence) / 2
    return {k: (_quantile(v, lo), _quantile(v, hi)) if v else None for k, v in out.items()}


SPEC = {
    "t1": (1, [0, 1, 0]), "t2": (1, [1]), "t3": (0, [0, 0]), "t4": (1, [0]), "t5": (0, [1, 0]),
    "t6": (1, [1, 1]), "t7": (1, [0, 0, 1]), "t8": (0, [0]),
}  # fmt: skip


@pytest.mark.parametrize("seed,resamples,confidence", [(0, 2000, 0.95), (7, 500, 0.9), (123, 999, 0.5)])
def test_bootstrap_equals_an_independent_implementation(seed: int, resamples: int, confidence: float) -> None:
    got = bootstrap_intervals(_tasks(SPEC), Uncertainty(confidence, resamples, seed))
    want = _independent(SPEC, seed, resamples, confidence)
    for figure, bound in want.items():
        assert bound is not None and got.get(figure) == pytest.approx(bound, rel=1e-12, abs=1e-12), figure
    assert got.reason is None
    # the table's order does not matter: tasks are taken in key order
    shuffled = dict(reversed(list(_tasks(SPEC).items())))
    assert bootstrap_intervals(shuffled, Uncertainty(confidence, resamples, seed)) == got


def test_fractional_outcomes_as_rollouts_give_them() -> None:
    # a start's outcome as a mean over its rollouts: nothing assumes 0/1
    spec = {"a": (1, [0.5, 0.25]), "b": (0.75, [1.0]), "c": (1, [0.0, 0.5, 1.0])}
    got = bootstrap_intervals(_tasks(spec), Uncertainty(0.95, 400, 3))
    want = _independent(spec, 3, 400, 0.95)
    for figure in ("residual", "clean", "gap"):
        assert got.get(figure) == pytest.approx(want[figure], rel=1e-12, abs=1e-12)


def test_percentile_is_linear_between_order_statistics() -> None:
    v = [10.0, 20.0, 30.0, 40.0]
    assert percentile(v, 0.0) == 10.0 and percentile(v, 1.0) == 40.0
    assert percentile(v, 0.5) == 25.0  # h = 1.5
    assert percentile(v, 0.025) == pytest.approx(10.75)  # h = 0.075
    assert percentile([5.0], 0.3) == 5.0


# ----------------------------------------------------------------- degenerate cases


@pytest.mark.parametrize("y", [0, 1, 0.5])
def test_all_equal_outcomes_give_a_zero_width_interval(y: float) -> None:
    spec = {f"t{i}": (y, [y] * (1 + i % 3)) for i in range(6)}
    got = bootstrap_intervals(_tasks(spec))
    assert got.residual == (100 * y, 100 * y) and got.clean == (100 * y, 100 * y) and got.gap == (0.0, 0.0)
    # C_A: the tasks solved from a clean start, each weighted by its clean outcome (rollouts):
    # empty when no clean start ever succeeds
    assert got.cond_fail == ((100 * (1 - y), 100 * (1 - y)) if y > 0 else None)


def test_one_task_cannot_be_estimated() -> None:
    got = bootstrap_intervals(_tasks({"only": (1, [0, 1])}))
    assert (got.residual, got.clean, got.gap, got.cond_fail) == (None, None, None, None)
    assert got.reason == ONE_TASK == "cannot be estimated from one task"
    assert got.to_json() == {"residual": None, "clean": None, "gap": None, "cond_fail": None, "reason": ONE_TASK}


def test_uncertainty_values_are_checked() -> None:
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            Uncertainty(confidence=bad)
    with pytest.raises(ValueError, match="1 or more"):
        Uncertainty(resamples=0)


# ----------------------------------------------------------------- in summary.json


def _records(agent: str, clean: list[str], residual: list[list[str]], track: str = "repo") -> list[dict]:
    out = []
    for i, (c, states) in enumerate(zip(clean, residual)):
        out.append(make_record(f"t{i}", None, c, agent=agent, track=track))
        out += [make_record(f"t{i}", f"s{j}", y, agent=agent, track=track) for j, y in enumerate(states)]
    return out


def test_summary_intervals_contain_the_point_estimates_and_are_recorded() -> None:
    records = _records("A", [S, S, F, S, F, S], [[F, S], [S], [F], [F, F], [S], [S, F, F]])
    records += _records("A", [S, F, S], [[F], [S], [S]], track="machine")
    summary = build_summary(records)
    assert list(summary)[:2] == ["schema", "uncertainty"]
    assert summary["uncertainty"] == {"confidence": 0.95, "resamples": 2000, "seed": 0}
    block = summary["agents"]["A"]
    for figures in [*block["tracks"].values(), block["overall"]]:
        intervals = figures["intervals"]
        assert intervals["reason"] is None
        for figure in ("residual", "clean", "gap", "cond_fail"):
            low, high = intervals[figure]
            assert low <= figures[figure] <= high, figure
            assert low < high, figure  # these outcomes differ: a real interval
    # the same records give the same bounds; another seed other bounds
    assert build_summary(records) == summary
    other = build_summary(records, uncertainty=Uncertainty(seed=1))
    assert other["uncertainty"]["seed"] == 1 and other["agents"]["A"]["overall"]["intervals"] != \
        block["overall"]["intervals"]
    # shown after the figure in summary.md; on the terminal the Gap's
    low, high = block["overall"]["intervals"]["gap"]
    cell = f"{block['overall']['gap']:.1f} [{low:.1f}, {high:.1f}]"
    assert cell in render_markdown(summary)
    assert any(cell in line for line in render_terminal(summary))


# ----------------------------------------------------------------- paired comparison


def test_paired_difference_resamples_common_tasks_together() -> None:
    a = _tasks({"t1": (1, [1]), "t2": (1, [0]), "t3": (0, [0]), "x": (1, [1])})
    b = _tasks({"t1": (1, [0]), "t2": (0, [0]), "t3": (0, [1]), "y": (0, [0])})
    d = paired_difference("A", a, "B", b, Uncertainty(0.9, 300, 5))
    assert d.n_tasks == 3  # x and y are not common
    assert d.residual == pytest.approx(0.0)  # (1 + 0 + 0)/3 - (0 + 0 + 1)/3
    keys = ["t1", "t2", "t3"]
    rng = random.Random(5)
    diffs = []
    for _ in range(300):
        idx = [rng.randrange(3) for _ in range(3)]
        ra = sum(a[keys[i]].states[0].y for i in idx) / 3
        rb = sum(b[keys[i]].states[0].y for i in idx) / 3
        diffs.append(100 * (ra - rb))
    assert d.residual_interval == pytest.approx((_quantile(diffs, 0.05), _quantile(diffs, 0.95)), abs=1e-9)
    one = paired_difference("A", a, "B", _tasks({"t1": (1, [0])}))
    assert one.residual_interval is None and one.reason == ONE_TASK


def _two_agents(n: int) -> list[dict]:
    """alpha solves every task from clean and none from its states; beta the opposite half of
    the time from clean and every state: a reversal, by how much depends on n."""
    alpha = _records("alpha", [S] * n, [[F]] * n)
    beta = _records("beta", [S if i % 2 else F for i in range(n)], [[S]] * n)
    return alpha + beta


def test_a_reversal_whose_interval_includes_zero_is_not_significant() -> None:
    # alpha 100 / 50 clean-residual over two tasks, beta 50 / 100: with two tasks the clean
    # margin's interval reaches 0
    records = _records("alpha", [S, S], [[F], [S]]) + _records("beta", [S, F], [[S], [S]])
    summary = build_summary(records, compare=True)
    (rev,) = summary["comparison"]["reversals"]["repo"]
    assert (rev["clean_leader"], rev["residual_leader"]) == ("alpha", "beta")
    assert rev["clean_interval"][0] <= 0.0 and rev["significant"] is False
    assert "interval includes 0" in "\n".join(render_terminal(summary))
    (pair,) = summary["comparison"]["pairs"]["repo"]
    assert (pair["a"], pair["b"], pair["n_tasks"]) == ("alpha", "beta", 2)
    assert pair["clean_significant"] is False


def test_a_reversal_clear_of_zero_is_significant() -> None:
    summary = build_summary(_two_agents(12), compare=True)
    (rev,) = summary["comparison"]["reversals"]["repo"]
    assert (rev["clean_leader"], rev["residual_leader"]) == ("alpha", "beta")
    assert rev["clean_interval"][0] > 0.0 and rev["residual_interval"][0] > 0.0
    assert rev["significant"] is True
    (pair,) = summary["comparison"]["pairs"]["repo"]
    assert pair["residual"] == pytest.approx(-100.0) and pair["residual_interval"] == [-100.0, -100.0]
    assert pair["residual_significant"] is True and pair["gap_significant"] is True
    text = render_markdown(summary)
    assert "## Agents compared" in text
    assert any("alpha" in line and "beta" in line and "-100.0 [-100.0, -100.0]" in line for line in text.splitlines())
    assert "significant" in "\n".join(render_terminal(summary))


# ----------------------------------------------------------------- gates on the bound


def test_gate_on_the_bound_fails_where_the_point_passes() -> None:
    # Gap 50 over 4 tasks (two lost, two kept): the point is under 60, the upper bound is not
    records = _records("A", [S, S, S, S], [[F], [F], [S], [S]])
    summary = build_summary(records)
    overall = summary["agents"]["A"]["overall"]
    assert overall["gap"] == 50.0 and overall["intervals"]["gap"][1] == 100.0
    gates = [parse_gate("gap_fail_over", "60"), parse_gate("residual_fail_under", "40")]
    point = evaluate_gates(summary, gates)
    assert [r.passed for r in point] == [True, True]
    bound = evaluate_gates(summary, gates, on="bound")
    assert [r.passed for r in bound] == [False, False]
    assert bound[0].describe() == ("--gap-fail-over=60 FAILED (gate on the bound): A [overall] gap upper 100.0 "
                                   "(point 50.0) is 40.0 points above the threshold")
    assert "residual lower 0.0 (point 50.0)" in bound[1].describe()
    # a bound within the threshold passes
    (ok,) = evaluate_gates(summary, [parse_gate("gap_fail_over", "100")], on="bound")
    assert ok.passed and "passed (gate on the bound)" in ok.describe()


def test_gate_on_a_bound_that_cannot_be_estimated_fails_closed() -> None:
    summary = build_summary(_records("A", [S], [[S]]))  # one task: Gap 0, no interval
    (point,) = evaluate_gates(summary, [parse_gate("gap_fail_over", "10")])
    assert point.passed
    (bound,) = evaluate_gates(summary, [parse_gate("gap_fail_over", "10")], on="bound")
    assert not bound.passed
    assert "cannot be estimated (cannot be estimated from one task); point 0.0 not used" in bound.describe()
    with pytest.raises(ValueError, match="point, bound"):
        evaluate_gates(summary, [], on="upper")

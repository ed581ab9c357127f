"""Acceptance-bias signatures of agents with known behaviour, from a results file made by really
running them (local backend, taskfactory tasks): the keeper accepts inherited work as it is,
the discarder throws it away unseen. The metrics must tell them apart the way Table 4 would."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from taskfactory import BASE_SOURCE, SOLVED_SOURCE, git_diff_of, make_task

from summaries import summary_dict

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import append_record, read_records
from swe_residual.trial.runner import RunOptions, run_item

pytestmark = pytest.mark.slow

# Two predecessors that each add several lines to calc.py, fix only the low side of clamp (so
# exactly test_clamp_high still fails, as their state.toml says), and never touch README.md,
# which the reference solution also changes: README.md is the left-out file.
HELPER_STATE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def _lower_bound(value, low):
        # keep values above the floor
        return max(low, value)


    def clamp(value, low, high):
        return _lower_bound(value, low)
    """
)
BRANCH_STATE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def clamp(value, low, high):
        if value < low:
            return low
        # upper bound handled by callers
        return value
    """
)
README_SOLVED = "# calc\n\n`clamp(value, low, high)` limits `value` to `[low, high]`.\n"
# The agent's name in the records is its --agent spec.
KEEPER = "module:scripted_agents:KeepInherited"
DISCARDER = "module:scripted_agents:DiscardsInherited"
STATES = {
    "drafter-1": {"calc.py": HELPER_STATE, "debug.log": "ran clamp\nlow ok\n"},
    "patcher-1": {"calc.py": BRANCH_STATE},
}


def make_dataset(root: Path) -> Path:
    data = root / "data"
    for task_id in ("alpha", "beta"):
        task = make_task(data, task_id, states=STATES)
        solution = git_diff_of(
            {"calc.py": BASE_SOURCE, "README.md": "# calc\n"},
            {"calc.py": SOLVED_SOURCE, "README.md": README_SOLVED},
            root / ".work",
        )
        (task / "solution" / "solution.patch").write_text(solution)
    return data


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results.jsonl of keep-inherited and discard-inherited on 2 tasks x (clean + 2 states)."""
    root = tmp_path_factory.mktemp("bias")
    dataset = load_dataset(make_dataset(root))
    backend = LocalBackend(cache_dir=root / "cache", work_dir=root)
    options = RunOptions(run_id="bias", run_dir=root / "run", infra_retries=0)
    for agent in (KEEPER, DISCARDER):
        for entry in dataset.entries:
            for state in (None, *entry.states):
                record = run_item(entry.task, state, resolve_agent(agent), backend, options)
                append_record(options.run_dir / "results.jsonl", record)
    return options.run_dir / "results.jsonl"


def test_the_runs_are_what_the_signatures_assume(results: Path) -> None:
    loaded = read_records([results])
    assert not loaded.problems and len(loaded.records) == 12
    for r in loaded.records:
        assert r.outcome == "failure" and r.termination == "submitted", r
        if r.start == "residual":
            assert r.reference_files == ("README.md", "calc.py")
            assert r.initial_tests["test_calc.test_clamp_high"] == "failed"
            if r.agent == KEEPER:
                assert r.final_patch == r.inherited_patch
            else:
                assert r.final_patch == ""


def test_keeper_signature(results: Path) -> None:
    summary = summary_dict(read_records([results]).records)
    m = summary["agents"][KEEPER]["tracks"]["repo"]
    ab = m["acceptance_bias"]
    assert (m["residual"], m["clean"], m["n_tasks"], m["n_states"]) == (0.0, 0.0, 2, 4)
    # every failed continuation ends with exactly the inherited failing set {clamp_high}
    assert ab["same_failing"] == pytest.approx(100.0)
    # ... and keeps every line the predecessor added
    assert ab["kept"] == pytest.approx(100.0)
    # it ran git status and git diff before submitting
    assert ab["inspected"] == pytest.approx(100.0)
    # clamp_high fails in its clean run too (it submits the base), and in the continuation
    assert ab["initially_failing_clean"] == pytest.approx(0.0)
    assert ab["initially_failing_residual"] == pytest.approx(0.0)
    # README.md is left out by every state; neither its clean run nor a continuation edits it,
    # and git diff shows only the predecessor's files
    assert (ab["left_out_clean"], ab["left_out_residual"], ab["left_out_opened"]) == (0.0, 0.0, 0.0)
    assert ab["steps_ratio"] == pytest.approx(1.0)  # two steps from every start


def test_discarder_signature(results: Path) -> None:
    summary = summary_dict(read_records([results]).records)
    ab = summary["agents"][DISCARDER]["tracks"]["repo"]["acceptance_bias"]
    # nothing of the predecessor's work survives
    assert ab["kept"] == pytest.approx(0.0)
    # back at the base, clamp_low fails again: the failing set is no longer the inherited one
    assert ab["same_failing"] == pytest.approx(0.0)
    # a hard reset and a clean are not an inspection of inherited work
    assert ab["inspected"] == pytest.approx(0.0)
    assert ab["split_by_kept"]["median_kept"] == pytest.approx(0.0)


def test_signatures_separate_the_agents(results: Path) -> None:
    agents = summary_dict(read_records([results]).records)["agents"]
    keeper = agents[KEEPER]["overall"]["acceptance_bias"]
    discarder = agents[DISCARDER]["overall"]["acceptance_bias"]
    assert keeper["kept"] - discarder["kept"] == pytest.approx(100.0)
    assert keeper["same_failing"] - discarder["same_failing"] == pytest.approx(100.0)

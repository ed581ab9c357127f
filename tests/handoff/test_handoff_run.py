"""Handoff views in real runs on the local backend: what the agent gets, what it does with it,
that the file never reaches the patch or the verifier, and the pytest items, records and
summaries of a run with and without `--handoff`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from handoff_task import make_handoff_task
from suitecheckout import make_checkout

from summaries import summary_dict

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.handoff.file import give_handoff, handoff_sentence
from swe_residual.trial.records import read_records, record_json
from swe_residual.trial.runner import RunOptions, run_item
from swe_residual.metrics.summary.infra import DURATION_KEYS

AGENT = "module:scripted_agents:FollowsHandoff"


@pytest.fixture
def local(tmp_path: Path):
    def make(**task_kwargs):
        make_handoff_task(tmp_path / "data", **task_kwargs)
        entry = load_dataset(tmp_path / "data").entries[0]
        return entry, LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    return make


def _options(tmp_path: Path, view: str) -> RunOptions:
    return RunOptions(run_id="handoff", run_dir=tmp_path / "run", infra_retries=0, handoff=view)


@pytest.mark.parametrize("mode", ["shared", "separate"])
def test_trace_changes_the_outcome_and_the_file_never_reaches_grading(local, tmp_path: Path, mode: str) -> None:
    entry, backend = local(environment_mode=mode)
    state = entry.states[0]
    records = {view: record_json(run_item(entry.task, state, resolve_agent(AGENT), backend, _options(tmp_path, view)))
               for view in ("blind", "trace", "notes", "structured")}
    # blind: no file, the inherited work is kept and fails; trace and structured name the failing
    # test, so the agent starts over and solves it; notes only claim success.
    assert {view: r["outcome"] for view, r in records.items()} == {
        "blind": "failure", "trace": "success", "notes": "failure", "structured": "success"}
    for view, record in records.items():
        assert record["rewards"]["handoff_seen"] == 0, (view, "the verifier saw the handoff file")
        assert "handoff" not in (record["final_patch"] or "").lower()
        for artifact in record["artifacts"]:
            path = tmp_path / "run" / artifact
            for kept in [path] if path.is_file() else path.rglob("*"):
                assert kept.is_dir() or b"Handoff" not in kept.read_bytes()
    assert "handoff" not in records["blind"] and records["trace"]["handoff"] == "trace"
    # The agent did read it: the file the request named, under the workspace's scratch directory.
    trajectory = json.loads((tmp_path / "run" / records["trace"]["trajectory"]).read_text())
    read = trajectory["steps"][1]
    assert read["command"].startswith("cat ") and read["command"].endswith("/scratch/handoff.md")
    assert read["output"].startswith("# Handoff: the previous agent's trajectory")
    paths = {r["trajectory"] for r in records.values()}
    assert len(paths) == 4 and any(p.endswith("drafter-1@structured.json") for p in paths)


def test_the_verifier_would_see_a_file_left_behind(local, tmp_path: Path) -> None:
    """The check above can fail: a handoff not taken back is seen by a shared verifier."""
    entry, backend = local(environment_mode="shared")
    environment = backend.start(entry.task, entry.states[0], StartSpec("handoff", "probe", 1))
    try:
        given = give_handoff("trace", entry.states[0], environment)
        assert given is not None and given.path == f"{environment.scratch_dir}/handoff.md"
        assert given.sentence == handoff_sentence(given.path) == (
            f"\n\nA previous agent worked on this task before you; its handoff is in {given.path}.")
        seen = backend.run_verifier(environment, entry.task)
        assert b'"handoff_seen": 1' in seen.files["reward.json"]
        given.take_back()
        assert not Path(given.path).exists()
        assert b'"handoff_seen": 0' in backend.run_verifier(environment, entry.task).files["reward.json"]
        assert give_handoff("blind", entry.states[0], environment) is None
        assert give_handoff("trace", None, environment) is None  # a Clean Start gets none
    finally:
        environment.close()


def test_a_state_without_sources_still_runs_with_a_file_saying_so(local, tmp_path: Path) -> None:
    entry, backend = local(trajectory=False, notes=False)
    record = record_json(run_item(entry.task, entry.states[0], resolve_agent(AGENT), backend, _options(tmp_path, "trace")))
    assert record["outcome"] == "failure" and record["handoff"] == "trace"  # nothing told it to start over
    trajectory = json.loads((tmp_path / "run" / record["trajectory"]).read_text())
    assert "The previous agent left no trajectory" in trajectory["steps"][1]["output"]


# -------------------------------------------------------------------- through pytest


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    make_handoff_task(pytester.path / "data", "alpha")
    return pytester


def _run(suite: pytest.Pytester, run_id: str, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("residual_tests", "--dataset=data", "--backend=local", "--results-dir=out",
                                      f"--run-id={run_id}", "-p", "no:cacheprovider", f"--agent={AGENT}", *args)


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def _comparable(summary: dict) -> dict:
    by_agent = summary["infra"]["by_agent"]
    timings = {agent: {k: v for k, v in row.items() if k not in DURATION_KEYS} for agent, row in by_agent.items()}
    return {**summary, "infra": {**summary["infra"], "by_agent": timings}}


_TIMING = {"durations", "attempts", "run_id", "trajectory", "collect"}  # timings and the run's name


@pytest.mark.slow
def test_default_run_is_unchanged_by_an_explicit_blind(suite: pytest.Pytester) -> None:
    default = _run(suite, "default", "-v")
    blind = _run(suite, "blind", "-v", "--handoff=blind")
    for result in (default, blind):
        assert result.ret == 0, result.stdout.str() + result.stderr.str()
    for result in (default, blind):
        result.stdout.fnmatch_lines(["*test_start?module:scripted_agents:FollowsHandoff/alpha/residual:drafter-1? *"])
        assert "@" not in "".join(line for line in result.stdout.lines if "test_start[" in line)
        assert "By handoff view" not in result.stdout.str()
    runs = {name: suite.path / "out" / name for name in ("default", "blind")}
    records = {name: _records(path) for name, path in runs.items()}
    assert [{k: v for k, v in r.items() if k not in _TIMING} for r in records["default"]] == \
        [{k: v for k, v in r.items() if k not in _TIMING} for r in records["blind"]]
    for name, path in runs.items():
        text = (path / "summary.json").read_text()
        assert "handoff" not in text and all("handoff" not in r for r in records[name])
        # summary.json is exactly what the summary code gives for the run's records
        rebuilt = summary_dict(read_records([path / "results.jsonl"]).records, compare=True)
        assert text == json.dumps(rebuilt, indent=2, sort_keys=True) + "\n"
    summaries = [json.loads((path / "summary.json").read_text()) for path in runs.values()]
    assert _comparable(summaries[0]) == _comparable(summaries[1])


@pytest.mark.slow
def test_views_are_items_markers_records_and_a_by_view_table(suite: pytest.Pytester) -> None:
    views = ["--handoff=trace", "--handoff=blind", "--handoff=structured", "--handoff=notes"]
    selected = suite.runpytest_subprocess("residual_tests", "--dataset=data", "--backend=local", "-p",
                                          "no:cacheprovider", f"--agent={AGENT}", *views, "--collect-only", "-q",
                                          "-m", "handoff_trace")
    assert [line for line in selected.stdout.lines if "test_start[" in line] == [
        f"residual_tests/test_starts.py::test_start[{AGENT}/alpha/residual:drafter-1@trace]"]
    result = _run(suite, "views", "-v", *views)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*alpha/clean? SOLVED*",
        "*alpha/residual:drafter-1? UNSOLVED*",
        "*alpha/residual:drafter-1@trace? SOLVED*",
        "*alpha/residual:drafter-1@notes? UNSOLVED*",
        "*alpha/residual:drafter-1@structured? SOLVED*",
        "*SWE-Residual summary*",
        "By handoff view:",
        "agent*view*residual*clean*gap*condfail*steps x*tokens x*cost x",
        "*blind*0.0*100.0*100.0*100.0*",
        "*trace*100.0*100.0*0.0*0.0*",
    ])
    run_dir = suite.path / "out" / "views"
    records = _records(run_dir)
    assert sorted(r.get("handoff", "-") for r in records) == ["-", "-", "notes", "structured", "trace"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary["by_handoff"][AGENT]) == {"blind", "trace", "notes", "structured"}  # keys sorted in the file
    assert {v: b["residual"] for v, b in summary["by_handoff"][AGENT].items()} == {
        "blind": 0.0, "trace": 100.0, "notes": 0.0, "structured": 100.0}
    assert summary["agents"][AGENT]["overall"]["residual"] == 0.0  # the headline is blind's
    assert "## By handoff view" in (run_dir / "summary.md").read_text()
    assert 'id="by-handoff"' in (run_dir / "report.html").read_text()
    # Resuming finds every item, views included, already measured.
    resumed = suite.runpytest_subprocess("residual_tests", "--dataset=data", "--backend=local", "-p",
                                         "no:cacheprovider", f"--agent={AGENT}", *views, f"--resume={run_dir}")
    assert resumed.ret == pytest.ExitCode.NO_TESTS_COLLECTED, resumed.stdout.str()
    resumed.stdout.fnmatch_lines(["*5 deselected*"])


@pytest.mark.slow
def test_an_unknown_view_is_a_usage_error_naming_its_source(suite: pytest.Pytester) -> None:
    result = _run(suite, "bad", "--handoff=summary")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*handoff: bad value 'summary' from the command line --handoff: unknown handoff "
                                 "view 'summary' (one of blind, trace, notes, structured)*"])
    suite.makeini("[pytest]\nresidual_handoff = blind tracee\n")
    result = _run(suite, "bad-ini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad value 'tracee' from the ini option residual_handoff*"])

"""The pytest plugin, driven through pytester in real subprocesses (as a user runs it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from suitecheckout import make_checkout
from taskfactory import make_task

from swe_residual.cli.main import main as cli_main
from swe_residual.metrics.summary.infra import DURATION_KEYS


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A checkout-like directory: the suite's conftest and test module, and a small dataset."""
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    data = pytester.path / "data"
    make_task(data, "alpha")
    make_task(data, "beta", states={
        "drafter-1": {"calc.py": "def add(a, b):\n    return a + b\n\ndef clamp(v, lo, hi):\n    return min(v, hi)\n"},
        "patcher-1": {"calc.py": "def add(a, b):\n    return a + b\n\ndef clamp(v, lo, hi):\n    return max(v, lo)\n"},
    })
    make_task(data, "gamma", states={})
    monkeypatch.setenv("FLAKY_INFRA_DIR", str(tmp_path))
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess(
        "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out", "-p", "no:cacheprovider", *args,
    )


def only_run_dir(suite: pytest.Pytester) -> Path:
    (run_dir,) = (suite.path / "out").iterdir()
    return run_dir


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def comparable(summary: dict) -> dict:
    """A summary without its timing medians (`infra.by_agent`), which differ between any two runs."""
    by_agent = summary.get("infra", {}).get("by_agent", {})
    timings = {agent: {k: v for k, v in row.items() if k not in DURATION_KEYS} for agent, row in by_agent.items()}
    return {**summary, "infra": {**summary.get("infra", {}), "by_agent": timings}}


@pytest.mark.slow
def test_oracle_and_noop_summary(suite: pytest.Pytester) -> None:
    result = run(suite, "--agent=oracle", "--agent=noop", "-v")
    assert result.ret == 0, result.stdout.str()
    # 3 tasks x (1 clean) + 3 states, for each agent
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines([
        "*test_start?oracle/beta/residual:patcher-1? SOLVED*",
        "*test_start?noop/alpha/clean? UNSOLVED*",
        "*SWE-Residual summary*",
        "*oracle*100.0*100.0*0.0*",
        "*noop*0.0*0.0*0.0*",
    ])
    run_dir = only_run_dir(suite)
    assert len(records(run_dir)) == 12
    summary = json.loads((run_dir / "summary.json").read_text())
    repo = summary["agents"]["oracle"]["tracks"]["repo"]
    assert (repo["residual"], repo["clean"], repo["gap"], repo["n_tasks"], repo["n_states"]) == (100.0, 100.0, 0.0, 2, 3)
    noop = summary["agents"]["noop"]["tracks"]["repo"]
    assert (noop["residual"], noop["clean"]) == (0.0, 0.0)
    assert (run_dir / "summary.md").read_text().strip()
    assert all((run_dir / r["trajectory"]).is_file() for r in records(run_dir))


@pytest.mark.slow
def test_items_can_be_selected(suite: pytest.Pytester) -> None:
    result = run(suite, "--agent=noop", "-m", "residual", "--collect-only", "-q")
    assert result.ret == 0
    ids = [line for line in result.outlines if "::test_start[" in line]
    assert len(ids) == 3 and all("residual:" in line for line in ids)
    result = run(suite, "--agent=noop", "--agent=oracle", "-k", "beta and clean", "--collect-only", "-q")
    assert sorted(line.split("[")[1] for line in result.outlines if "::test_start[" in line) == [
        "noop/beta/clean]", "oracle/beta/clean]",
    ]


@pytest.mark.slow
def test_xdist_gives_the_same_records_and_summary(suite: pytest.Pytester) -> None:
    assert run(suite, "--agent=oracle", "--agent=noop", "--run-id=serial").ret == 0
    parallel = run(suite, "--agent=oracle", "--agent=noop", "--run-id=parallel", "-n", "2")
    assert parallel.ret == 0, parallel.stdout.str()
    assert parallel.stdout.str().count("SWE-Residual summary") == 1
    out = suite.path / "out"
    serial_summary = json.loads((out / "serial" / "summary.json").read_text())
    parallel_summary = json.loads((out / "parallel" / "summary.json").read_text())
    assert comparable(serial_summary) == comparable(parallel_summary)
    key = lambda r: (r["agent"], r["task"], r["state"] or "")  # noqa: E731
    outcomes = lambda rs: sorted((key(r), r["outcome"], r["tests"] == r["tests"]) for r in rs)  # noqa: E731
    assert outcomes(records(out / "serial")) == outcomes(records(out / "parallel"))
    assert len(records(out / "parallel")) == 12
    # trajectories written by the workers land in the controller's run directory
    assert all((out / "parallel" / r["trajectory"]).is_file() for r in records(out / "parallel"))


@pytest.mark.slow
def test_malformed_task_is_one_clear_error_while_the_rest_run(suite: pytest.Pytester) -> None:
    (suite.path / "data" / "alpha" / "task.toml").write_text("[agent]\ntimeout_sec = 'forever'\n")
    result = run(suite, "--agent=noop")
    assert result.ret == 1
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*invalid dataset entry: *alpha/task.toml [[]agent.timeout_sec[]]: expected*"])
    assert len(records(only_run_dir(suite))) == 4


@pytest.mark.slow
def test_malformed_state_fails_its_items_naming_file_and_field(suite: pytest.Pytester) -> None:
    """States are read when their items run (collection stays fast): the error is the same."""
    (suite.path / "data" / "beta" / "residual" / "patcher-1" / "state.toml").write_text('track = "repo"\n')
    result = run(suite, "--agent=noop", "-v")
    assert result.ret == 1
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines([
        "*test_start?noop/beta/residual:patcher-1? ERROR*",
        "*invalid dataset entry: *beta/residual/patcher-1/state.toml [[]predecessor[]]: names no predecessor*",
    ])
    assert len(records(only_run_dir(suite))) == 5


@pytest.mark.slow
def test_infra_fault_is_retried_and_recorded(suite: pytest.Pytester) -> None:
    result = run(suite, "--agent=module:scripted_agents:FlakyInfra", "-k", "alpha and clean")
    assert result.ret == 0, result.stdout.str()
    (record,) = records(only_run_dir(suite))
    assert [a["outcome"] for a in record["attempts"]] == ["infra_error", "failure"]
    summary = json.loads((only_run_dir(suite) / "summary.json").read_text())
    assert summary["infra"]["retried"] == 1 and summary["infra"]["unresolved"] == 0


@pytest.mark.slow
def test_unresolved_infra_error_fails_the_item_and_is_excluded(suite: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("FLAKY_INFRA_FAILURES", "99")
    result = run(suite, "--agent=module:scripted_agents:FlakyInfra", "--infra-retries=1", "-k", "alpha and clean")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*no valid verdict after 2 attempt(s)*container lost*"])
    (record,) = records(only_run_dir(suite))
    assert record["outcome"] == "infra_error" and len(record["attempts"]) == 2
    summary = json.loads((only_run_dir(suite) / "summary.json").read_text())
    assert summary["infra"]["unresolved"] == 1


@pytest.mark.slow
def test_bad_settings_name_their_source(suite: pytest.Pytester) -> None:
    result = run(suite, "--agent=noop", "--infra-retries=-1")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*infra-retries*-1*command line --infra-retries*"])
    suite.makeini("[pytest]\nresidual_timeout_multiplier = zero\n")
    result = run(suite, "--agent=noop")
    result.stderr.fnmatch_lines(["*ini option residual_timeout_multiplier*"])
    (suite.path / "tox.ini").unlink()
    result = run(suite)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*no agent to evaluate*--agent=NAME*"])
    result = run(suite, "--agent=noop", "--dataset=nowhere")
    result.stdout.fnmatch_lines(["*--dataset: *nowhere: dataset directory does not exist*"])
    # pytest stops before the first item: the verdict says why, not "Ctrl-C"
    result.stdout.fnmatch_lines(["verdict: Interrupted (1 error during collection)*"])
    assert "Ctrl-C" not in result.stdout.str()
    result = run(suite, "--agent=gpt-7")
    result.stderr.fnmatch_lines(["*--agent=gpt-7: unknown agent*"])


@pytest.mark.slow
def test_report_command_recomputes_the_same_summary(suite: pytest.Pytester, tmp_path: Path) -> None:
    assert run(suite, "--agent=oracle", "--agent=noop").ret == 0
    run_dir = only_run_dir(suite)
    assert cli_main(["report", str(run_dir / "results.jsonl"), "--out", str(tmp_path / "again")]) == 0
    assert json.loads((tmp_path / "again" / "summary.json").read_text()) == json.loads(
        (run_dir / "summary.json").read_text()
    )


@pytest.mark.slow
def test_task_without_verifier_is_one_error_item_not_run(suite: pytest.Pytester) -> None:
    (suite.path / "data" / "alpha" / "tests" / "test.sh").unlink()
    collected = run(suite, "--agent=noop", "--collect-only", "-q")
    ids = [line.split("[", 1)[1] for line in collected.outlines if "::test_start[" in line]
    assert "invalid/alpha]" in ids and not any(i.startswith("noop/alpha/") for i in ids)
    result = run(suite, "--agent=noop", "-v")
    assert result.ret == 1
    result.assert_outcomes(passed=4, errors=1)  # beta and gamma run; alpha's two starts do not
    result.stdout.fnmatch_lines(["*invalid dataset entry: *alpha/tests/test.sh: file is missing: the task has no verifier*"])
    assert {r["task"] for r in records(only_run_dir(suite))} == {"beta", "gamma"}


@pytest.mark.slow
def test_oracle_without_solution_is_one_error_item_other_agents_run(suite: pytest.Pytester) -> None:
    shutil.rmtree(suite.path / "data" / "alpha" / "solution")
    result = run(suite, "--agent=oracle", "--agent=noop", "-v")
    assert result.ret == 1
    result.assert_outcomes(passed=10, errors=1)  # noop: all 6 items; oracle: beta and gamma (4)
    result.stdout.fnmatch_lines([
        "*invalid dataset entry: *alpha/solution: directory is missing: the oracle agent runs the task's reference*",
    ])
    ran = {(r["agent"], r["task"]) for r in records(only_run_dir(suite))}
    assert ("oracle", "alpha") not in ran and ("noop", "alpha") in ran


@pytest.mark.parametrize("contents", [[], ["notes.txt"]], ids=["empty", "not-a-dataset"])
def test_dataset_without_tasks_is_a_usage_error(suite: pytest.Pytester, contents: list[str]) -> None:
    folder = suite.path / "nothing"
    folder.mkdir()
    for name in contents:
        (folder / name).write_text("no task here\n")
    result = run(suite, "--agent=noop", "--dataset=nothing")
    assert result.ret == 4
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    what = "is empty" if not contents else "holds no task directory"
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert errors == [f"ERROR: --dataset: {folder} {what}: a dataset is a directory of Harbor task directories "
                      "(each holding task.toml or instruction.md), or one such task directory"]


@pytest.mark.slow
def test_residual_only_run_says_no_clean_start_ran(suite: pytest.Pytester) -> None:
    result = run(suite, "--agent=noop", "-m", "residual")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "*SWE-Residual summary*",
        "Residual success is reported against the same tasks' Clean Starts, and none were run.",
        "3 Residual State item(s) recorded; run the Clean Starts too (e.g. -m 'clean or residual') for the table.",
    ])
    assert "SWE-Residual [repo]" not in result.stdout.str()  # no all-dash table
    # with the Clean Starts, the table is back and the sentence is not printed
    both = run(suite, "--agent=noop")
    assert "SWE-Residual [repo]" in both.stdout.str() and "none were run" not in both.stdout.str()

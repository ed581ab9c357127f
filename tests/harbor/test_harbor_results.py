"""Harbor's results for exported starts, read back into the suite's summary.

A real suite run (local backend) of two agents on a small dataset gives records; the same
outcomes are then written as Harbor trial directories of the exported tasks (as Harbor 0.25
writes them: tests/harborjobs.py), read back with `swe-residual report --harbor-jobs`, and the
summary must equal the suite run's. Harbor's failures map onto DESIGN §7: an environment that
never started is an infrastructure error (excluded), an agent timeout a task failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harborjobs import write_trial
from taskfactory import make_task

from summaries import summary_dict

from swe_residual.agents import resolve_agent
from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

MODEL = {"provider": "test", "model": "m1"}
FIGURES = ("residual", "clean", "gap", "condfail", "n_tasks", "n_states")


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    return {agent: {track: {key: row.get(key) for key in FIGURES} for track, row in data["tracks"].items()}
            for agent, data in summary["agents"].items()}


@pytest.fixture
def suite_run(tmp_path: Path, cache_dir: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A dataset of two tasks with one state each, and a real run of oracle and noop on it."""
    dataset = tmp_path / "dataset"
    make_task(dataset, "calc")
    make_task(dataset, "gauge")
    records = []
    backend = LocalBackend()
    options = RunOptions(run_id="suite", run_dir=tmp_path / "suite")
    for entry in load_dataset(dataset).entries:
        for state in [None, *entry.states]:
            for agent in ("oracle", "noop"):
                records.append(record_json(run_item(entry.task, state, resolve_agent(agent), backend, options)))
    return dataset, records


def harbor_jobs_of(records: list[dict[str, Any]], export: Path, jobs: Path) -> Path:
    """The suite's outcomes as Harbor trials of the exported tasks."""
    job = jobs / "2026-03-01__10-00-00"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"job_name": job.name, "n_attempts": 1}))
    for number, record in enumerate(records):
        name = record["task"] + (f"--{record['state']}" if record["state"] else "")
        write_trial(job, f"{name}__{number:03d}", export / name, task_name=name, agent=record["agent"],
                    minute=number, rewards={"reward": record["reward"]}, patch=record["final_patch"] or "",
                    patch_source="/logs/artifacts/workspace.patch", **MODEL)
    return job


@pytest.mark.slow
def test_harbor_results_give_the_suite_runs_summary(suite_run: tuple[Path, list[dict[str, Any]]],
                                                     tmp_path: Path) -> None:
    dataset, records = suite_run
    export = tmp_path / "export"
    assert cli_main(["export", "harbor", str(dataset), "--out", str(export)]) == 0
    jobs = tmp_path / "jobs"
    harbor_jobs_of(records, export, jobs)
    out = tmp_path / "report"
    assert cli_main(["report", "--harbor-jobs", str(jobs), "--out", str(out)]) == 0
    read = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(read) == len(records) == 8
    # The same items: agent (Harbor's name with its model), task, start, state, outcome.
    identity = {f"{r['agent']}+test/m1": r["agent"] for r in records}
    assert sorted((identity[r["agent"]], r["task"], r["start"], r["state"], r["outcome"]) for r in read) == \
        sorted((r["agent"], r["task"], r["start"], r["state"], r["outcome"]) for r in records)
    # The collected patch is the final patch; the residual state's patch is what it inherited.
    by_key = {(identity[r["agent"]], r["task"], r["state"]): r for r in read}
    for record in records:
        back = by_key[(record["agent"], record["task"], record["state"])]
        assert back["final_patch"] == (record["final_patch"] or "")
        assert back["inherited_patch"] == record["inherited_patch"]
        assert back["predecessor"] == record["predecessor"]
    suite = summary_dict([{**r, "agent": f"{r['agent']}+test/m1"} for r in records], compare=True)
    harbor = json.loads((out / "summary.json").read_text())
    assert figures(harbor) == figures(suite)
    assert figures(harbor)["oracle+test/m1"]["repo"]["residual"] == 100.0
    assert (out / "report.html").is_file()


def test_harbor_failures_map_onto_the_failure_policy(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    make_task(dataset, "calc")
    export = tmp_path / "export"
    assert cli_main(["export", "harbor", str(dataset), "--out", str(export)]) == 0
    job = tmp_path / "jobs" / "job-1"
    job.mkdir(parents=True)
    write_trial(job, "calc__a", export / "calc", task_name="calc", agent="agent-x", minute=0,
                rewards={"reward": 1.0}, patch="", patch_source="/logs/artifacts/workspace.patch", **MODEL)
    write_trial(job, "calc__b", export / "calc--drafter-1", task_name="calc--drafter-1", agent="agent-x", minute=1,
                rewards={"reward": 1.0}, exception="AgentTimeoutError", **MODEL)
    write_trial(job, "calc__c", export / "calc--drafter-1", task_name="calc--drafter-1", agent="agent-x", minute=2,
                rewards=None, exception="EnvironmentStartTimeoutError", **MODEL)
    write_trial(job, "calc__e", export / "calc", task_name="calc", agent="agent-y", minute=4,
                rewards=None, exception="EnvironmentStartTimeoutError", **MODEL)
    write_trial(job, "other__d", tmp_path / "not-exported", task_name="other", agent="agent-x", minute=3,
                rewards={"reward": 0.0}, **MODEL)
    out = tmp_path / "report"
    assert cli_main(["report", "--harbor-jobs", str(tmp_path / "jobs"), "--out", str(out)]) == 0
    read = {r["harbor_trial"].rsplit("/", 1)[-1]: r for r in
            map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    # The trial of an unknown task is left out; two trials of one start are one item: the first
    # with a valid verdict, both in its attempts.
    assert set(read) == {"calc__a", "calc__b", "calc__e"}
    assert [a["outcome"] for a in read["calc__b"]["attempts"]] == ["failure", "infra_error"]
    assert (read["calc__a"]["outcome"], read["calc__a"]["start"]) == ("success", "clean")
    # A time limit is the agent's failure, even with reward 1 (paper App. D).
    assert (read["calc__b"]["termination"], read["calc__b"]["outcome"]) == ("time_limit", "failure")
    assert (read["calc__b"]["state"], read["calc__b"]["predecessor"]) == ("drafter-1", "drafter")
    # An environment that never started: infrastructure, excluded from every metric.
    assert read["calc__e"]["outcome"] == "infra_error" and "EnvironmentStartTimeoutError" in read["calc__e"]["error"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["agents"]["agent-x+test/m1"]["tracks"]["repo"]["residual"] == 0.0
    assert summary["agents"]["agent-x+test/m1"]["tracks"]["repo"]["clean"] == 100.0
    assert summary["infra"]["unresolved"] == 1


def test_the_trials_of_a_job_run_with_k_attempts_are_rollouts(tmp_path: Path) -> None:
    """`harbor run -k 3`: three trials of each start, read back as rollouts 0..2 (in the order
    they started), each its own record, averaged like `--rollouts=3`."""
    dataset = tmp_path / "dataset"
    make_task(dataset, "calc")
    export = tmp_path / "export"
    assert cli_main(["export", "harbor", str(dataset), "--out", str(export)]) == 0
    job = tmp_path / "jobs" / "job-k3"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"job_name": job.name, "n_attempts": 3}))
    # clean: 1, 1, 0 (2/3); the state: 0, 1, and one lost to infrastructure (1/2 over the valid two).
    # Trial names sort otherwise than their start times: the rollouts follow the start times.
    trials = [("calc", "calc__z", 0, 1.0, None), ("calc", "calc__a", 1, 1.0, None), ("calc", "calc__m", 2, 0.0, None),
              ("calc--drafter-1", "state__c", 3, 0.0, None), ("calc--drafter-1", "state__b", 4, 1.0, None),
              ("calc--drafter-1", "state__a", 5, None, "EnvironmentStartTimeoutError")]
    for task, name, minute, reward, exception in trials:
        write_trial(job, name, export / task, task_name=task, agent="agent-x", minute=minute,
                    rewards=None if reward is None else {"reward": reward}, exception=exception, patch="",
                    patch_source="/logs/artifacts/workspace.patch", **MODEL)
    out = tmp_path / "report"
    assert cli_main(["report", "--harbor-jobs", str(tmp_path / "jobs"), "--out", str(out)]) == 0
    read = {r["harbor_trial"].rsplit("/", 1)[-1]: r for r in
            map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {name: (r["rollout"], r["outcome"]) for name, r in read.items()} == {
        "calc__z": (0, "success"), "calc__a": (1, "success"), "calc__m": (2, "failure"),
        "state__c": (0, "failure"), "state__b": (1, "success"), "state__a": (2, "infra_error")}
    assert all(len(r["attempts"]) == 1 for r in read.values())
    repo = json.loads((out / "summary.json").read_text())["agents"]["agent-x+test/m1"]["tracks"]["repo"]
    # Clean 2/3; Residual: the state's valid rollouts 0 and 1 -> 1/2; Gap 66.7 - 50 = 16.7
    assert repo["clean"] == pytest.approx(200 / 3) and repo["residual"] == pytest.approx(50.0)
    # pass@3 needs 3 valid rollouts of every start of a task: the state has 2 (one lost to
    # infrastructure), so the task is left out of pass@3 and the short start is listed.
    assert repo["pass_at_k"]["k"] == 3 and repo["pass_at_k"]["n_tasks"] == 0 and repo["pass_at_k"]["residual"] is None
    assert [(s["task"], s["state"]) for s in repo["short_starts"]] == [("calc", "drafter-1")]

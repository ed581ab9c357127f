"""The machine track on the real engine: the sample's machine tasks, their pipeline-made states,
per-instance replay of live processes, and `oracle` 100 / `noop` 0 through the suite itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from conftest import REPO_ROOT
from samplerun import SampleRun

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.docker import checkpoint_support

SAMPLE = REPO_ROOT / "datasets" / "sample"
PREDECESSORS = REPO_ROOT / "datasets" / "predecessors"

pytestmark = requires_docker


def machine_entries() -> list:
    return [e for e in load_dataset(SAMPLE).entries if e.task.track == "machine"]


def _leftovers(run_id: str, pid: int | None = None) -> list[str]:
    """Containers of run `run_id` (and, with `pid`, made by that process): the run ids of the
    residualize stages are fixed, so another session on the engine may be running the same one."""
    labels = [f"swe-residual.run={run_id}", *([f"swe-residual.pid={pid}"] if pid is not None else [])]
    listed = subprocess.run(["docker", "ps", "-aq", *[arg for label in labels for arg in ("--filter", f"label={label}")]],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


def _stage(step: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """One `swe-residual residualize` stage run to its end, and its pid: its containers carry
    it (`swe-residual.pid`), which tells them from those of the same stage run by anyone else."""
    with subprocess.Popen([sys.executable, "-m", "swe_residual.cli.main", "residualize", *step], cwd=REPO_ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            stdout, stderr = process.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), process.pid


def test_sample_has_the_three_kinds_of_machine_task() -> None:
    entries = {e.task.id: e for e in machine_entries()}
    assert {"wordstat-install", "backup-retention-config", "artifact-http-server"} <= set(entries)
    for entry in entries.values():
        assert entry.task.missing_files() == [] and entry.task.config.repo_dir is None
        assert (entry.task.solution_dir / "solve.sh").is_file() and entry.task.solution_patch is None
        assert entry.states, entry.task.id
        for state in entry.states:
            assert state.raw["source_run"].startswith("residualize:")  # made by the pipeline
            assert state.raw["validation"]["valid"] and state.raw["validation"]["reward"] == 0.0
    service = entries["artifact-http-server"].states[0]
    assert service.live_processes is True and service.raw["machine"]["fidelity"] == "replay"


def test_checkpoint_support_is_reported() -> None:
    report = checkpoint_support()
    assert set(report) >= {"experimental", "criu", "criu_check", "supported", "reason", "fidelity"}
    assert report["fidelity"] == "replay"  # CRIU restore is not implemented: replay restores processes
    if not report["supported"]:
        assert report["reason"]


@pytest.mark.slow
def test_pipeline_regenerates_the_machine_states(tmp_path: Path) -> None:
    """generate -> filter -> review -> build on docker gives the shipped commands and statuses."""
    env = {**os.environ, "SWE_RESIDUAL_CACHE": os.environ.get("SWE_RESIDUAL_CACHE", str(Path.home() / ".cache/swe-residual"))}
    work, out = tmp_path / "work", tmp_path / "out"
    tasks = [arg for e in machine_entries() for arg in ("--task", e.task.id)]
    steps = [
        ["generate", str(SAMPLE), *[f"--predecessor={n}=script:{PREDECESSORS / n}" for n in ("drafter", "patcher", "skimmer")],
         "--out", str(work), "--backend", "docker", *tasks],
        ["filter", str(work)],
        ["review", str(work), "--accept-all-as", "machine-test"],
        ["build", str(work), "--out", str(out), "--repeats", "1"],  # stability: test_stage_iv_stability
    ]
    pids: dict[str, int] = {}
    for step in steps:
        done, pids[step[0]] = _stage(step, env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Included" in done.stdout
    rebuilt = load_dataset(out)
    for entry in machine_entries():
        again = rebuilt.entry(entry.task.id)
        assert [s.id for s in again.states] == [s.id for s in entry.states]
        for old, new in zip(entry.states, again.states):
            assert new.commands_path.read_bytes() == old.commands_path.read_bytes()
            assert new.initial_tests == old.initial_tests
            assert new.raw["machine"] == old.raw["machine"]
            # what the predecessor changed on the machine, kept for Opened and Inspected
            assert new.machine_paths() == old.machine_paths() != set()
    # every run record carries the (null) fidelity of its clean start; the build cleaned up after itself
    # Each included state's machine.json is what Stage IV's second replay listed: no replay of its own.
    included = [c for c in json.loads((work / "table5.json").read_text())["candidates"] if c["state"]]
    assert included and {c["machine_changes_from"] for c in included} == {"stage iv second replay"}
    record = json.loads((work / "runs" / "artifact-http-server" / "drafter" / "1" / "record.json").read_text())
    assert "fidelity" in record and record["residualize"]["payload"] == "commands.jsonl"
    assert _leftovers("residualize-build", pids["build"]) == []
    assert _leftovers("residualize-generate", pids["generate"]) == []


@pytest.mark.slow
def test_oracle_and_noop_on_the_machine_track(sample_docker_run: SampleRun) -> None:
    """Read from the session's one run of the sample on docker (tests/samplerun.py): its machine
    items are what `pytest --agent=oracle --agent=noop -m machine --backend=docker` runs."""
    summary = sample_docker_run.summary
    machine = {agent: block["tracks"]["machine"] for agent, block in summary["agents"].items()}
    assert (machine["oracle"]["residual"], machine["oracle"]["clean"]) == (100.0, 100.0)
    assert (machine["noop"]["residual"], machine["noop"]["clean"]) == (0.0, 0.0)
    assert machine["oracle"]["n_states"] == 3 and summary["infra"]["unresolved"] == 0
    states = {(e.task.id, s.id): s for e in machine_entries() for s in e.states}
    tasks = {task for task, _ in states}
    records = [record for record in sample_docker_run.records if record["task"] in tasks]
    assert {(r["agent"], r["task"], r["state"]) for r in records} == {
        (agent, task, state) for agent in ("oracle", "noop") for task, state in [*states, *((t, None) for t in tasks)]}
    for record in records:
        if record["state"] is None:
            assert record["fidelity"] is None
            continue
        state = states[(record["task"], record["state"])]
        assert record["fidelity"] == state.raw["machine"]["fidelity"]
        if record["agent"] == "noop":
            # The service answered in every instance: replay restored the live process.
            assert record["tests"] == state.initial_tests, record["task"]
    assert _leftovers(sample_docker_run.run_id) == []

"""Handoff views in real containers: the agent finds the file at /tmp/swe-residual/handoff.md
(the scratch tmpfs, outside the repository), and it is gone from the final patch, the collect
steps and the verifier, in `shared` mode (the agent's own container) and `separate` mode."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from handoff_task import make_handoff_task

from swe_residual.agents import resolve_agent
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import DockerBackend, remove_cached_images
from swe_residual.trial.handoff.file import give_handoff
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item
from swe_residual.dataset.states.state import load_state
from swe_residual.dataset.task import Task, load_task

pytestmark = [*requires_docker, pytest.mark.slow]

AGENT = "module:scripted_agents:FollowsHandoff"


@pytest.fixture(params=["shared", "separate"])
def docker_task(request: pytest.FixtureRequest, tmp_path: Path, cache_dir: Path) -> Iterator[Task]:
    name = f"handoff-{secrets.token_hex(3)}"
    yield load_task(make_handoff_task(tmp_path / "data", name, environment_mode=request.param))
    remove_cached_images(name)


def test_trace_reaches_the_agent_in_its_container_and_never_the_grading(docker_task: Task, tmp_path: Path) -> None:
    state = load_state(docker_task, docker_task.path / "residual" / "drafter-1")
    with DockerBackend(run_id="handoff", progress=lambda line: None) as backend:
        records = {view: record_json(run_item(docker_task, state, resolve_agent(AGENT), backend,
                                  RunOptions(run_id="handoff", run_dir=tmp_path / "run", infra_retries=1, handoff=view)))
                   for view in ("blind", "trace")}
    assert (records["blind"]["outcome"], records["trace"]["outcome"]) == ("failure", "success"), records
    for record in records.values():
        assert record["rewards"]["handoff_seen"] == 0
        assert "handoff" not in record["final_patch"].lower()
    assert "max(low, min(value, high))" in records["trace"]["final_patch"]
    steps = json.loads((tmp_path / "run" / records["trace"]["trajectory"]).read_text())["steps"]
    assert steps[1]["command"] == "cat /tmp/swe-residual/handoff.md"
    assert steps[1]["output"].startswith("# Handoff: the previous agent's trajectory")


def test_a_file_left_behind_would_be_seen_by_a_shared_verifier(tmp_path: Path, cache_dir: Path) -> None:
    name = f"handoff-{secrets.token_hex(3)}"
    task = load_task(make_handoff_task(tmp_path / "data", name, environment_mode="shared"))
    state = load_state(task, task.path / "residual" / "drafter-1")
    try:
        with DockerBackend(run_id="handoff", progress=lambda line: None) as backend:
            with backend.start(task, state, StartSpec("handoff", "probe", 1)) as environment:
                given = give_handoff("structured", state, environment)
                assert given is not None and given.path == "/tmp/swe-residual/handoff.md"
                assert b'"handoff_seen": 1' in backend.run_verifier(environment, task).files["reward.json"]
                given.take_back()
                assert environment.exec("test -e /tmp/swe-residual/handoff.md").exit_code == 1
                assert b'"handoff_seen": 0' in backend.run_verifier(environment, task).files["reward.json"]
    finally:
        remove_cached_images(name)

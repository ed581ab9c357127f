"""`final_patch` and a state's patch leave out what the image itself put in the working tree
(issue 32): ignored files present at the clean start that the base commit does not hold (a
`pkg.egg-info/` from the Dockerfile's `pip install -e .`). They appear only when an agent
changes them, as changes to the file a fresh instance already has, so the patch applies there;
and Stage IV of a scripted predecessor on such a task keeps its state."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dockerneeded import docker_test, engine_needed  # noqa: F401 - engine_needed is autouse
from taskfactory import make_task

from swe_residual.agents.base import AgentResult, AgentSession
from swe_residual.agents.builtin import NoopAgent
from swe_residual.dataset.task import Task, load_task
from swe_residual.environments.base import StartSpec
from swe_residual.environments.local import LocalBackend
from swe_residual.residualize import filter as stage_ii
from swe_residual.residualize import reconstruct, review
from swe_residual.residualize.generate import generate
from swe_residual.residualize.predecessors import parse_predecessor
from swe_residual.dataset.states.state import load_state
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

EGG = "pkg.egg-info/PKG-INFO"  # in the repository directory (local) and made by the Dockerfile (docker)
BUILT = "built.egg-info/PKG-INFO"  # made only by the Dockerfile's RUN step (docker)
PREDECESSOR = ("#!/bin/bash\nset -euo pipefail\n# step 1: fix the lower bound\n"
               "sed -i 's/    return value$/    return max(low, value)/' calc.py\n")


class EditsTheEggInfo:
    """An agent whose only change is to an ignored, image-made file."""

    name = "edits-egg-info"

    def run(self, session: AgentSession) -> AgentResult:
        session.exec(f"echo 'Version: 2' >> {EGG}")
        return AgentResult(message="Done.")


def make_ignoring_task(root: Path, task_id: str) -> Path:
    task = make_task(root, task_id)
    repo = task / "environment" / "repo"
    (repo / ".gitignore").write_text("*.egg-info/\n")
    (repo / EGG).parent.mkdir()
    (repo / EGG).write_text("Name: pkg\n")
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"RUN mkdir built.egg-info && echo x > {BUILT}\n")
    return task


def _run(task: Task, agent: Any, backend: Any, run_dir: Path) -> dict[str, Any]:
    return record_json(run_item(task, None, agent, backend, RunOptions(run_id="clean-start", run_dir=run_dir, infra_retries=0)))


def _check_captures(task: Task, backend: Any, tmp_path: Path) -> None:
    noop = _run(task, NoopAgent, backend, tmp_path / "noop")
    assert noop["outcome"] == "failure" and noop["final_patch"] == ""
    edited = _run(task, EditsTheEggInfo, backend, tmp_path / "edit")
    patch = edited["final_patch"]
    assert f"diff --git a/{EGG} b/{EGG}" in patch and "+Version: 2" in patch
    # A change to the file the clean start has, not a new file: it applies to a fresh instance.
    assert "new file mode" not in patch and BUILT not in patch and "calc.py" not in patch
    state_dir = task.path / "residual" / "edits-1"
    state_dir.mkdir(parents=True)
    (state_dir / "changes.patch").write_text(patch)
    (state_dir / "state.toml").write_text('schema = 1\ntrack = "repo"\npredecessor = "edits"\npatch = "changes.patch"\n')
    state = load_state(task, state_dir)
    environment = backend.start(task, state, StartSpec("clean-start", "edits-1", 1))
    try:
        assert environment.read_file(EGG) == b"Name: pkg\nVersion: 2\n"
    finally:
        environment.close()


def _check_stage_iv(dataset: Path, root: Path, backend: Any) -> None:
    scripts = root / "predecessors" / "drafter"
    scripts.mkdir(parents=True)
    (scripts / f"{next(p.name for p in dataset.iterdir())}.sh").write_text(PREDECESSOR)
    work = root / "work"
    generate(dataset, [parse_predecessor(f"drafter=script:{scripts}")], work, backend=backend, timeout_sec=120,
             progress=lambda _: None)
    stage_ii.filter_runs(work, progress=lambda _: None)
    review.write_packets(work, progress=lambda _: None)
    review.collect(work, accept_all_as="tests", progress=lambda _: None)
    patch = next(work.glob("runs/*/drafter/1/changes.patch")).read_text()
    assert "calc.py" in patch and "egg-info" not in patch
    built = reconstruct.build(work, root / "out", backend=backend, progress=lambda _: None)
    (candidate,) = built["candidates"]
    assert candidate["category"] == "included", candidate["detail"]


def test_local_capture_leaves_out_ignored_files_of_the_base_repository(tmp_path: Path) -> None:
    task = load_task(make_ignoring_task(tmp_path / "data", "egg"))
    backend = LocalBackend(cache_dir=tmp_path / "cache")
    try:
        _check_captures(task, backend, tmp_path)
    finally:
        backend.close()


@pytest.mark.slow
def test_local_stage_iv_of_a_scripted_predecessor_on_a_task_with_ignored_files(tmp_path: Path) -> None:
    dataset = tmp_path / "data"
    make_ignoring_task(dataset, "egg")
    backend = LocalBackend(cache_dir=tmp_path / "cache")
    try:
        _check_stage_iv(dataset, tmp_path, backend)
    finally:
        backend.close()


@pytest.fixture
def docker_task(tmp_path: Path) -> Iterator[Path]:
    from swe_residual.environments.docker import remove_cached_images
    from swe_residual.environments.docker.base_image import ensure_base_image

    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    task_id = f"egg-{secrets.token_hex(3)}"
    yield make_ignoring_task(tmp_path / "data", task_id)
    remove_cached_images(task_id)


@docker_test
@pytest.mark.slow
def test_docker_capture_leaves_out_what_the_dockerfile_made(tmp_path: Path, docker_task: Path) -> None:
    from swe_residual.environments.docker import DockerBackend

    task = load_task(docker_task)
    with DockerBackend(cache_dir=tmp_path / "cache", progress=lambda _: None, run_id="clean-start") as backend:
        _check_captures(task, backend, tmp_path)
        # Recorded once per image: the second capture read it from the cache.
        assert len(list((backend.cache_dir / "clean-start").glob("*/tree"))) == 1


@docker_test
@pytest.mark.slow
def test_docker_stage_iv_of_a_scripted_predecessor_on_a_task_with_image_made_files(tmp_path: Path,
                                                                                   docker_task: Path) -> None:
    from swe_residual.environments.docker import DockerBackend

    with DockerBackend(cache_dir=tmp_path / "cache", progress=lambda _: None, run_id="clean-start") as backend:
        _check_stage_iv(docker_task.parent, tmp_path, backend)

"""The oracle discards inherited work only on the repository track (README, Agents): on the
machine track it runs solve.sh on top of the state even when the workdir is a git repository
(Terminal-Bench's sanitize-git-repo), as Harbor's oracle does."""

from __future__ import annotations

import secrets
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from taskfactory import make_machine_task

from swe_residual.agents.builtin import OracleAgent
from swe_residual.dataset.task import load_task
from swe_residual.environments.docker import DockerBackend, remove_cached_images
from swe_residual.environments.docker.base_image import ensure_base_image
from swe_residual.dataset.states.state import load_state
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

pytestmark = [*requires_docker, pytest.mark.slow]

# The workdir is a git repository with one commit; the predecessor edits a tracked file and adds
# an untracked one; solve.sh finishes the work only when both are still there (a reset would
# remove them), the way a Terminal-Bench solve.sh builds on the machine it finds.
DOCKERFILE_GIT = ("RUN cd /app && git init -q && echo secret > config.txt && git add config.txt "
                  "&& git -c user.name=t -c user.email=t@t commit -qm base\n")
SOLVE = textwrap.dedent("""\
    #!/bin/bash
    set -e
    grep -q edited /app/config.txt
    test -e /app/notes.txt
    touch /app/solved
    """)
COMMANDS = [{"command": "echo edited > /app/config.txt && echo kept > /app/notes.txt"}]


@pytest.fixture
def task_dir(tmp_path: Path) -> Iterator[Path]:
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    task_id = f"oracle-machine-git-{secrets.token_hex(3)}"
    task = make_machine_task(tmp_path, task_id, COMMANDS, tmux=False)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("WORKDIR /app\n", "WORKDIR /app\n" + DOCKERFILE_GIT))
    (task / "solution" / "solve.sh").write_text(SOLVE)
    yield task
    remove_cached_images(task_id)


def test_oracle_runs_on_top_of_a_machine_state_whose_workdir_is_a_git_repository(tmp_path: Path,
                                                                                   task_dir: Path) -> None:
    task = load_task(task_dir)
    assert task.track == "machine"
    state = load_state(task, task_dir / "residual" / "terminus-1")
    with DockerBackend(cache_dir=tmp_path / "cache", progress=lambda _: None, run_id="oracle-tracks") as backend:
        record = record_json(run_item(task, state, OracleAgent, backend,
                          RunOptions(run_id="oracle-tracks", run_dir=tmp_path / "run", infra_retries=0)))
    # A reset before solve.sh would have restored config.txt and removed notes.txt: solve.sh's
    # `set -e` would then fail (agent_error), and the verifier would see no /app/solved.
    assert record["termination"] == "submitted", record.get("error") or record.get("message")
    assert record["outcome"] == "success" and record["reward"] == 1.0

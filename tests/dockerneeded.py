"""`requires_docker`: the marker for tests that need a Docker engine; `docker_world`: the set-up
the attack tests share.

Without an engine such a test is skipped, except under CI (`CI=true`), where a missing engine is
a broken machine and must fail the run, not pass it silently.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.docker import LABEL, DockerBackend, remove_cached_images
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

F = TypeVar("F", bound=Callable[..., Any])

ENGINE_ANSWERS = DockerBackend.available()
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _check_engine() -> None:
    if not ENGINE_ANSWERS and IN_CI:
        pytest.fail("CI=true but no Docker engine answers: docker tests must run in CI", pytrace=False)


# Under CI the tests are not skipped; an autouse fixture of each module calls `engine_needed()`.
requires_docker = [
    pytest.mark.docker,
    pytest.mark.skipif(not ENGINE_ANSWERS and not IN_CI, reason="no Docker engine answers"),
]


def docker_test(function: F) -> F:
    """`requires_docker` on one test function (a module's `engine_needed` still has to be imported)."""
    for mark in reversed(requires_docker):
        function = mark(function)
    return function


@pytest.fixture(autouse=True)
def engine_needed() -> None:
    """Fails a docker test at once under CI when the engine does not answer."""
    _check_engine()


def containers_of(run_id: str) -> list[str]:
    """The containers, running or not, that carry this run's label: none may be left by a test."""
    listed = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}.run={run_id}"],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


@dataclass
class World:
    """Tasks written under one directory, a docker backend labelled with its own run id, and the
    options every item of a module runs with (the attack tests' shared set-up)."""

    ids: dict[str, str]  # short name -> task id (unique per run: parallel runs never share images)
    entries: dict[str, Any]  # task id -> dataset entry
    backend: Any
    options: RunOptions
    records: dict[Any, dict[str, Any]] = field(default_factory=dict)

    def run(self, name: str, agent: Any, state: str | None = None) -> dict[str, Any]:
        """One item of task `name`, from its clean start or the state `state`; no container of
        the item may be left afterwards."""
        entry = self.entries[self.ids[name]]
        chosen = next(s for s in entry.states if s.id == state) if state else None
        record = record_json(run_item(entry.task, chosen, agent, self.backend, self.options))
        assert containers_of(self.options.run_id) == []
        return record


@contextmanager
def docker_world(root: Path, ids: dict[str, str], *, wrap: Callable[[Any], Any] = lambda backend: backend,
                 **backend_options: Any) -> Iterator[World]:
    """A `World` over the tasks already written in `root / "data"`; on exit its images are removed
    and no container of its run may be left."""
    entries = {entry.task.id: entry for entry in load_dataset(root / "data").entries}
    run_id = f"{root.name}-{secrets.token_hex(4)}"
    backend = DockerBackend(run_id=run_id, cache_dir=root / "cache", progress=lambda _: None, **backend_options)
    options = RunOptions(run_id=run_id, run_dir=root / "run", infra_retries=1)
    try:
        yield World(ids, entries, wrap(backend), options)
    finally:
        backend.close()
        for task_id in ids.values():
            remove_cached_images(task_id)
        assert containers_of(run_id) == []

"""`requires_docker`: the marker for tests that need a Docker engine.

Without an engine such a test is skipped, except under CI (`CI=true`), where a missing engine is
a broken machine and must fail the run, not pass it silently.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from swe_residual.environments.docker import LABEL, DockerBackend

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

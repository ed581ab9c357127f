"""Every bundled task passes Harbor's own `harbor lint` (harbor 0.25, its default rules).

Harbor lives in its own virtual environment (it needs Python >= 3.12), installed by
`scripts/setup-tests` at `${SWE_RESIDUAL_CACHE:-~/.cache/swe-residual}/harbor-venv`. Without it
these tests skip, except under CI (`CI=true`), where a missing Harbor is a failure.
`harbor lint TASK_DIR` exits 0 and prints nothing when the task passes, 1 with one line per
finding (`path [rule] message`), 2 when it could not lint at all.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from harbortool import harbor  # noqa: F401 - the fixture

DATASETS = REPO_ROOT / "datasets"
# A dataset with a manifest.toml holds published tasks as their authors wrote them (written by
# `swe-residual dataset build`, not committed): Harbor's findings on those are not this project's.
TASKS = sorted(path.parent for path in DATASETS.glob("*/*/task.toml")
               if not (path.parent.parent / "manifest.toml").is_file())


@pytest.mark.unit
def test_every_bundled_task_is_found() -> None:
    assert len(TASKS) >= 12 and all((task / "instruction.md").is_file() for task in TASKS)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=[f"{task.parent.name}/{task.name}" for task in TASKS])
def test_harbor_lint_passes(harbor: Path, task: Path) -> None:
    done = subprocess.run([str(harbor), "lint", str(task)], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stdout + done.stderr


def test_harbor_lint_fails_a_docker_network_spelling(harbor: Path, tmp_path: Path) -> None:
    """The check has teeth: the spelling the sample used before (Docker's "none") fails."""
    import shutil

    task = tmp_path / "lru-cache-ttl"
    shutil.copytree(DATASETS / "sample" / "lru-cache-ttl", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('network_mode = "no-network"', 'network_mode = "none"'))
    done = subprocess.run([str(harbor), "lint", str(task)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "[invalid-task-config] environment.network_mode" in done.stdout


@pytest.mark.slow
def test_conformance_tasks_lint_as_the_published_tasks_they_reproduce(harbor: Path, tmp_path: Path) -> None:
    """The project's DeepSWE- and Terminal-Bench-shaped tasks (tests/conformance.py) are tasks
    Harbor reads as it reads the published ones: the DeepSWE shape passes; the Terminal-Bench
    shape gets the one finding every published Terminal-Bench 2 task gets (a shared verifier)."""
    from conformance import write_deepswe_task, write_tb2_task

    deepswe = write_deepswe_task(tmp_path, "swe-residual-test/lint:1")
    tb2 = write_tb2_task(tmp_path)
    done = subprocess.run([str(harbor), "lint", str(deepswe)], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stdout + done.stderr
    done = subprocess.run([str(harbor), "lint", str(tb2)], capture_output=True, text=True, timeout=300)
    findings = [line.split(" ", 1)[1].split("]")[0] + "]" for line in done.stdout.strip().splitlines()]
    assert (done.returncode, findings) == (1, ["[shared-verifier]"]), done.stdout + done.stderr

"""What a shared-mode verifier runs with, chosen by the suite, and the check of its hidden tests
(DESIGN §7: an agent must never change what the verifier runs).

Environment: Python's user site is off (`PYTHONNOUSERSITE=1`), so a user-site `.pth` or
`usercustomize.py` the agent left does not change what the hidden tests import, and the
interactive-only start-up file is none. On the repo track the verifier's processes also get a
`HOME` of their own, fresh and empty (`PYTHONUSERBASE` in it), so nothing the agent left in its
home (a `.gitconfig`, a pip or cargo configuration) changes what the tests run. On the machine
track the home directory is part of the machine being graded (a Terminal-Bench test may read
the `~/.gitconfig` or `~/.ssh` the task asked for), so it stays the container's, as Harbor
leaves it. The task's own `[verifier.env]` comes after these (the task is trusted, the agent
is not), and the paths the verifier is told (TESTS_DIR, ...) last.

Hidden tests: each file copied in is hashed on the host (the task's tests/) and compared with
what the verifier's environment holds right after the copy and again after test.sh ran; a file
changed, replaced or gone is tampering (files test.sh adds, such as `__pycache__`, are not).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from swe_residual.dataset.task import Task

SUITE_PYTHON_ENV = {"PYTHONNOUSERSITE": "1", "PYTHONSTARTUP": "", "PYTHONINSPECT": ""}


def verifier_env(task: Task, home: str | None, paths: dict[str, str]) -> dict[str, str]:
    """The environment of test.sh: the suite's HOME (None: the container's own) and PYTHON*
    choices, the task's [verifier.env], then `paths`."""
    own_home = {"HOME": home, "PYTHONUSERBASE": f"{home}/.local"} if home is not None else {}
    return {**own_home, **SUITE_PYTHON_ENV, **task.config.verifier_env, **paths}


def test_digests(tests_dir: Path) -> dict[str, str]:
    """sha256 of every file of the task's tests/ (relative posix path -> digest), links as their text."""
    digests: dict[str, str] = {}
    for path in sorted(tests_dir.rglob("*")):
        relative = path.relative_to(tests_dir).as_posix()
        if path.is_symlink():
            digests[relative] = f"link:{os.readlink(path)}"
        elif path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                while block := handle.read(1024 * 1024):
                    digest.update(block)
            digests[relative] = digest.hexdigest()
    return digests


def changed_tests(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    """The hidden test files whose content differs from what was copied in, or that are gone."""
    return sorted(name for name, digest in expected.items() if found.get(name) != digest)


def tampering_note(changed: list[str]) -> str:
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return (f"tampering: the hidden test files changed while the verifier ran ({shown}); "
            "the verdict is a failure whatever the tests reported")


def toolchain_note(changed: list[str]) -> str:
    shown = "; ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return (f"tampering: the verifier's toolchain is not the clean image's ({shown}); the tests were not run "
            "and the verdict is a failure")

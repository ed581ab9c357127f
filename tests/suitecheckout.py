"""A checkout-like directory for pytester runs of the suite itself (as a user runs it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO_ROOT, TESTS_DIR


def make_checkout(root: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """The suite's conftest and test module under `root`; the suite and the test helpers
    importable; a private backend cache at `cache`."""
    shutil.copy(REPO_ROOT / "conftest.py", root / "conftest.py")
    (root / "residual_tests").mkdir(exist_ok=True)
    shutil.copy(REPO_ROOT / "residual_tests" / "test_starts.py", root / "residual_tests")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)]))
    monkeypatch.setenv("SWE_RESIDUAL_CACHE", str(cache))

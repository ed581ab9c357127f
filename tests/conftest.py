"""Fixtures for the project's own tests."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import matplotlib.figure  # noqa: F401
import pytest

# `pytester` restores sys.modules after each test that uses it, and numpy (under matplotlib,
# which draws the report's charts) cannot be imported twice in one process: import the
# plotting stack once here, before any snapshot is taken, so it is never dropped.
matplotlib.use("Agg")

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
sys.path.insert(0, str(TESTS_DIR))  # for `taskfactory`



@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private backend cache, so tests never depend on what an earlier run built."""
    path = tmp_path / "cache"
    monkeypatch.setenv("SWE_RESIDUAL_CACHE", str(path))
    return path

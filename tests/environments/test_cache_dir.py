"""The suite's cache directory: a user who cannot keep it there is told once, before any item runs
(the run as another user, end to end: tests/run/test_sample_dataset.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_residual.environments.cache import cache_dir_problem


@pytest.mark.unit
def test_a_cache_that_can_be_made_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWE_RESIDUAL_CACHE", raising=False)
    assert cache_dir_problem(tmp_path / "a" / "cache") is None
    assert (tmp_path / "a" / "cache").is_dir()


@pytest.mark.unit
def test_a_cache_that_cannot_be_made_names_the_path_and_the_variable(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")  # a file where a directory is needed fails even for root
    monkeypatch.setenv("SWE_RESIDUAL_CACHE", str(tmp_path / "file" / "cache"))
    problem = cache_dir_problem(tmp_path / "file" / "cache")
    assert problem == (f"SWE_RESIDUAL_CACHE {tmp_path / 'file' / 'cache'} cannot be made by this user: Not a "
                       "directory; set SWE_RESIDUAL_CACHE to a directory of this user's")

"""Harbor itself, for the tests that check the suite against it (installed by scripts/setup-tests
into its own virtual environment: Harbor needs Python >= 3.12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def harbor_venv() -> Path:
    cache = os.environ.get("SWE_RESIDUAL_CACHE") or str(Path.home() / ".cache" / "swe-residual")
    return Path(cache) / "harbor-venv"


def harbor_bin_dir() -> Path:
    """Harbor's venv bin/; a missing Harbor skips, except under CI (`CI=true`), where it fails."""
    bin_dir = harbor_venv() / "bin"
    if not (os.access(bin_dir / "harbor", os.X_OK) and os.access(bin_dir / "python", os.X_OK)):
        message = f"Harbor is not installed at {bin_dir.parent}: run scripts/setup-tests"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: required)")
        pytest.skip(message)
    return bin_dir


@pytest.fixture(scope="module")
def harbor() -> Path:
    """The `harbor` executable."""
    return harbor_bin_dir() / "harbor"


@pytest.fixture(scope="module")
def harbor_bin() -> Path:
    return harbor_bin_dir()

"""The bundled tasks anyone can run (issue 47): every sample task starts FROM the public
debian:bookworm-slim with the same first lines, which are the base image's whole Dockerfile (so
the builder's layer cache shares them), and the Debian images the suite can stand in for."""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT

from swe_residual.environments.docker.base_image import (
    BASE_PACKAGES, base_dockerfile, debian_release, recipe_digest, stand_in_digest,
)


@pytest.mark.unit
def test_every_sample_task_starts_with_the_base_images_lines() -> None:
    header = base_dockerfile()
    dockerfiles = sorted((REPO_ROOT / "datasets" / "sample").glob("*/environment/Dockerfile"))
    assert len(dockerfiles) >= 12
    for dockerfile in dockerfiles:
        assert dockerfile.read_text().startswith(header), dockerfile
    assert header.startswith("FROM debian:bookworm-slim\n")
    assert f"--no-install-recommends \\\n    {' '.join(BASE_PACKAGES)} \\\n" in header


@pytest.mark.unit
def test_the_debian_images_a_stand_in_is_made_for() -> None:
    assert [debian_release(name) for name in ("debian:bookworm-slim", "debian:12", "debian:13.1-slim",
                                              "docker.io/library/debian:trixie", "debian:latest", "ubuntu:24.04",
                                              "python:3.13-slim-bookworm")] == \
        ["bookworm", "bookworm", "trixie", "trixie", None, None, None]
    # Each release has its own recipes; a stand-in made otherwise is made again.
    assert stand_in_digest("bookworm") != stand_in_digest("trixie")
    assert recipe_digest("bookworm") != recipe_digest("trixie")

"""The base image of another Debian release (docs/real-tasks.md): `swe-residual build-base
--release trixie` makes `swe-residual-base:trixie` by the same recipe, from the mirror the
machine's apt configuration names for its own release."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_residual.cli.main import build_parser
from swe_residual.environments.docker.base_image import (
    BASE_IMAGE, base_image_name, debian_mirror, parse_deb822, recipe_digest)


@pytest.mark.unit
def test_each_release_has_its_own_tag_and_recipe() -> None:
    assert base_image_name() == BASE_IMAGE == "swe-residual-base:bookworm"
    assert base_image_name("trixie") == "swe-residual-base:trixie"
    # The release is part of the recipe: each image is current for its own release only, and the
    # default release's recipe is the one it always was.
    assert recipe_digest() == recipe_digest("bookworm") != recipe_digest("trixie")


@pytest.mark.unit
def test_a_bookworm_machine_bootstraps_trixie_from_its_own_archive(tmp_path: Path) -> None:
    sources = parse_deb822("Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
                           "Components: main\nSigned-By: /k.gpg\n\nTypes: deb\nURIs: http://mirror.invalid/security\n"
                           "Suites: bookworm-security\nComponents: main\n", tmp_path / "debian.sources")
    mirror = debian_mirror("trixie", sources)
    assert (mirror.uri, mirror.suite, mirror.signed_by) == ("http://mirror.invalid/debian", "trixie", "/k.gpg")


@pytest.mark.unit
def test_build_base_takes_a_release() -> None:
    assert build_parser().parse_args(["build-base", "--release", "trixie"]).release == "trixie"
    assert build_parser().parse_args(["build-base"]).release is None  # the sample tasks' release

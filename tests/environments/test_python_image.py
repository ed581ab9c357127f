"""The image with a CPython compiled from source (docs/real-tasks.md): `swe-residual build-base
--release bookworm --python 3.13` finds Debian's source package python3.13 in a suite's Sources
index, verifies its upstream tarball against the index, and compiles it as the official python
images are (the compile itself is not run here: it takes many minutes)."""

from __future__ import annotations

import dataclasses
import hashlib
import lzma
from pathlib import Path

import pytest

from swe_residual.cli.main import build_parser
from swe_residual.dataset.errors import InfraError
from swe_residual.environments.docker.base_image import deb822_stanzas
from swe_residual.environments.docker.python_image import (
    BUILD_PACKAGES, PythonSource, choose_source, compare_versions, download_source, find_python_source,
    orig_tarball, python_dockerfile, python_image_name, python_recipe_digest,
)

MIRROR = "http://mirror.invalid/debian"


def _entry(version: str, upstream: str, digest: str, *, extra: str = "") -> str:
    """A Sources stanza in the archive's layout (folded checksum lines, other fields left out)."""
    return (f"Package: python3.13\nBinary: python3.13, python3.13-venv\nVersion: {version}\n{extra}"
            "Directory: pool/main/p/python3.13\n"
            "Files:\n"
            f" 0123 4298 python3.13_{version}.dsc\n"
            f" 4567 22856016 python3.13_{upstream}.orig.tar.xz\n"
            "Checksums-Sha256:\n"
            f" {'d' * 64} 4298 python3.13_{version}.dsc\n"
            f" {digest} 22856016 python3.13_{upstream}.orig.tar.xz\n"
            f" {'a' * 64} 963 python3.13_{upstream}.orig.tar.xz.asc\n"
            f" {'b' * 64} 299640 python3.13_{version}.debian.tar.xz\n")


SOURCES = "\n".join([
    "Package: python3-defaults\nVersion: 3.13.5-1\nDirectory: pool/main/p/python3-defaults\n"
    "Checksums-Sha256:\n " + "c" * 64 + " 10 python3-defaults_3.13.5-1.tar.gz\n",
    _entry("3.13.15-1", "3.13.15", "1" * 64),
    _entry("3.13.18-1", "3.13.18", "2" * 64),
    _entry("3.13.20-1", "3.13.20", "3" * 64, extra="Extra-Source-Only: yes\n"),
    _entry("3.13.9-1", "3.13.9", "4" * 64),
])


@pytest.mark.unit
def test_the_newest_entry_with_an_upstream_tarball_is_chosen() -> None:
    stanzas = deb822_stanzas(SOURCES)
    assert [s["package"] for s in stanzas] == ["python3-defaults"] + ["python3.13"] * 4
    assert orig_tarball(stanzas[1]) == ("python3.13_3.13.15.orig.tar.xz", "1" * 64, 22856016)
    assert orig_tarball(stanzas[0]) is None
    # 3.13.18 beats 3.13.9 (numbers, not text); 3.13.20 is only kept for another package's build.
    assert choose_source(stanzas, "python3.13", "sid") == PythonSource(
        "python3.13", "3.13.18-1", "sid", "pool/main/p/python3.13", "python3.13_3.13.18.orig.tar.xz", "2" * 64, 22856016)
    assert choose_source(stanzas, "python3.12", "sid") is None


@pytest.mark.unit
@pytest.mark.parametrize(("left", "right", "order"), [
    ("3.13.18-1", "3.13.9-1", 1), ("3.13.5-2+deb13u5", "3.13.5-2", 1), ("3.14.0~rc1-1", "3.14.0-1", -1),
    ("1:3.0-1", "3.9-1", 1), ("3.13.5-2", "3.13.5-2", 0), ("3.13.5a-1", "3.13.5-1", 1),
])
def test_versions_compare_as_debian_orders_them(left: str, right: str, order: int) -> None:
    assert compare_versions(left, right) == order
    assert compare_versions(right, left) == -order


@pytest.mark.unit
def test_the_tarball_and_its_version_as_python_spells_it() -> None:
    source = PythonSource("python3.14", "3.14.0~rc1-1", "sid", "pool/main/p/python3.14",
                          "python3.14_3.14.0~rc1.orig.tar.xz", "0" * 64, 1)
    assert source.upstream == "3.14.0rc1"
    assert source.url(MIRROR + "/") == f"{MIRROR}/pool/main/p/python3.14/python3.14_3.14.0~rc1.orig.tar.xz"
    assert python_image_name("3.13", "bookworm") == "swe-residual-python:3.13-bookworm"


@pytest.mark.unit
def test_the_first_suite_carrying_the_package_is_used() -> None:
    """trixie's index lacks python3.11 here and forky's cannot be read: sid's entry is taken."""
    indexes = {f"{MIRROR}/dists/trixie/main/source/Sources.xz": lzma.compress(SOURCES.encode()),
               f"{MIRROR}/dists/sid/main/source/Sources.xz": lzma.compress(SOURCES.replace("3.13", "3.11").encode())}
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url.split("/dists/")[1].split("/")[0])
        if url not in indexes:
            raise OSError("HTTP Error 404: Not Found")
        return indexes[url]

    found = find_python_source("3.11", MIRROR, ("trixie", "forky", "sid"), fetch, progress=lambda _: None)
    assert (found.suite, found.version, found.filename) == ("sid", "3.11.18-1", "python3.11_3.11.18.orig.tar.xz")
    assert asked == ["trixie", "forky", "sid"]
    with pytest.raises(InfraError, match=r"no Debian suite .* carries source package python3\.10: trixie \(no "
                                         r"python3\.10\); forky \(index unreadable: HTTP Error 404"):
        find_python_source("3.10", MIRROR, ("trixie", "forky"), fetch, progress=lambda _: None)


@pytest.mark.unit
def test_the_tarball_is_checked_against_the_index_and_kept(tmp_path: Path) -> None:
    data = b"upstream tarball"
    source = PythonSource("python3.13", "3.13.5-2", "trixie", "pool/main/p/python3.13",
                          "python3.13_3.13.5.orig.tar.xz", hashlib.sha256(data).hexdigest(), len(data))
    fetched: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return data

    path = download_source(source, MIRROR, lambda _: None, fetch, tmp_path)
    assert path.read_bytes() == data and fetched == [source.url(MIRROR)]
    assert download_source(source, MIRROR, lambda _: None, fetch, tmp_path) == path and len(fetched) == 1
    tampered = dataclasses.replace(source, sha256="f" * 64)
    with pytest.raises(InfraError, match="is not the f{64} of trixie's Sources index"):
        download_source(tampered, MIRROR, lambda _: None, fetch, tmp_path / "other")


@pytest.mark.unit
def test_the_build_is_configured_as_the_official_images_are() -> None:
    dockerfile = python_dockerfile("swe-residual-base:bookworm", "3.13.5")
    lines = dockerfile.splitlines()
    assert lines[0] == "FROM swe-residual-base:bookworm"
    assert "ENV PATH=/usr/local/bin:$PATH LANG=C.UTF-8" in lines and "ENV PYTHON_VERSION=3.13.5" in lines
    assert lines[-1] == 'CMD ["python3"]'
    run = dockerfile.split("RUN ", 1)[1]
    for option in ("--enable-shared", "--enable-loadable-sqlite-extensions", "--with-ensurepip"):
        assert option in run
    # No PGO/LTO: the official images' slowest options, hours on 2 cores.
    assert "--enable-optimizations" not in run and "--with-lto" not in run
    # The interpreter finds libpython beside it: make's `$$` is the linker's `$ORIGIN`.
    assert "-rpath,'\\$\\$ORIGIN/../lib'" in run
    # The compilers go again; what /usr/local links against stays; the short names are linked.
    assert "apt-get purge -y --auto-remove" in run and "xargs -r apt-mark manual" in run
    # A debootstrapped base keeps apt's defaults: Suggests would keep gcc, and the .debs would stay.
    assert "-o APT::AutoRemove::SuggestsImportant=false" in run and "apt-get clean" in run
    assert "rm -rf /var/lib/apt/lists/*" in run
    for short, long in (("python", "python3"), ("pip", "pip3"), ("python-config", "python3-config")):
        assert f"ln -s {long} /usr/local/bin/{short}" in run
    # What the purge must keep is found from what the interpreter and its modules load.
    assert "ldd /usr/local/bin/python${PYTHON_VERSION%.*}" in run
    assert {"gcc", "libssl-dev", "libsqlite3-dev", "libffi-dev", "uuid-dev", "libgdbm-dev"} <= set(BUILD_PACKAGES)


@pytest.mark.unit
def test_the_recipe_names_release_and_minor_version_not_the_point_release() -> None:
    digest = python_recipe_digest("3.13", "bookworm")
    assert digest == python_recipe_digest("3.13", "bookworm")
    assert len({digest, python_recipe_digest("3.13", "trixie"), python_recipe_digest("3.11", "bookworm")}) == 3


@pytest.mark.unit
def test_build_base_takes_a_python_version() -> None:
    args = build_parser().parse_args(["build-base", "--release", "bookworm", "--python", "3.13"])
    assert (args.release, args.python) == ("bookworm", "3.13")
    assert build_parser().parse_args(["build-base"]).python is None

"""A CPython X.Y built from source on a swe-residual-base:RELEASE, as the official `python:` images are.

Published tasks start `FROM python:3.13-slim-bookworm`: Debian bookworm with CPython 3.13 built
from source into /usr/local. Nothing can be pulled here, and bookworm's own python3 is 3.11. So
the same is made from what the machine's Debian mirror serves: the upstream tarball Debian's
source package `pythonX.Y` carries (`pythonX.Y_<version>.orig.tar.xz`), found in the `Sources`
index of a suite that has it, verified against the index's SHA-256, downloaded on this machine
and compiled in a docker build on the release's base image (`swe-residual-python:X.Y-RELEASE`).

How it is configured follows the official images: prefix /usr/local, a shared libpython with the
interpreter finding it through an rpath `$ORIGIN/../lib`, loadable SQLite extensions, pip from
ensurepip, the short names (python, pip, pydoc, idle, python-config) linked in /usr/local/bin,
the compilers and -dev packages removed again, the runtime libraries kept. Unlike them: no
profile-guided optimisation or link-time optimisation (they take most of an hour on 2 cores),
and the base's own Debian python3 stays in /usr/bin.

The image is labelled with a hash of its recipe (the base's recipe, the Python minor version,
the build steps): an image with the same label, built on the current base image, is reused
without asking the mirror anything.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
import re
import shutil
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from swe_residual.dataset.errors import InfraError
from swe_residual.environments.docker.base_image import (
    RECIPE_LABEL, Progress, _cache_dir, base_image_name, debian_mirror, deb822_stanzas, ensure_base_image,
    image_labels, recipe_digest,
)

PYTHON_REPOSITORY = "swe-residual-python"
# Bump when the build procedure changes in a way the fields of the recipe do not show.
PYTHON_RECIPE_VERSION = 2
PYTHON_LABEL = "swe-residual.python"
SOURCE_LABEL = "swe-residual.python.source-sha256"
BASE_ID_LABEL = "swe-residual.python.base-id"
# Where a source package is looked for: the releases first (newest first: their uploads are
# the stable ones), then testing and unstable. A suite the mirror does not serve is skipped.
SOURCE_SUITES = ("trixie", "bookworm", "forky", "sid")
# What compiling every standard module needs (tkinter aside); the names exist in bookworm and trixie.
BUILD_PACKAGES = (
    "dpkg-dev", "gcc", "libc6-dev", "make", "pkg-config", "xz-utils",
    "libbz2-dev", "libffi-dev", "libgdbm-compat-dev", "libgdbm-dev", "liblzma-dev", "libncurses-dev",
    "libreadline-dev", "libsqlite3-dev", "libssl-dev", "uuid-dev", "zlib1g-dev",
)
CONFIGURE_OPTIONS = (
    "--enable-loadable-sqlite-extensions", "--enable-option-checking=fatal", "--enable-shared", "--with-ensurepip",
)
TARBALL = "python.tar.xz"  # its name in the build context
BUILD_TIMEOUT_SEC = 7200  # the engine is silent for minutes at a time while the image is committed
FETCH_TIMEOUT_SEC = 120

Fetch = Callable[[str], bytes]


@dataclass(frozen=True)
class PythonSource:
    """The upstream tarball of one Debian source package entry."""

    package: str  # python3.13
    version: str  # Debian's: 3.13.5-2+deb13u5
    suite: str  # where the entry was found
    directory: str  # relative to the mirror: pool/main/p/python3.13
    filename: str  # python3.13_3.13.5.orig.tar.xz
    sha256: str
    size: int

    @property
    def upstream(self) -> str:
        """The upstream version, as Python spells it (Debian's `~rc1` is Python's `rc1`)."""
        return self.filename.split("_", 1)[1].removesuffix(".orig.tar.xz").replace("~", "")

    def url(self, mirror_uri: str) -> str:
        return f"{mirror_uri.rstrip('/')}/{self.directory}/{self.filename}"


def python_image_name(minor: str, release: str) -> str:
    """The tag of the image with CPython `minor` (3.13) built on Debian `release`."""
    return f"{PYTHON_REPOSITORY}:{minor}-{release}"


# -- the Sources index ---------------------------------------------------------------------------
def _order(char: str) -> int:
    # dpkg's order of a version's non-digit characters: ~ first, then the end, letters, the rest.
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(left: str, right: str) -> int:
    """dpkg's comparison of an upstream version or a revision: alternating non-digit and digit runs."""
    while left or right:
        left_text = re.match(r"\D*", left).group()  # type: ignore[union-attr]
        right_text = re.match(r"\D*", right).group()  # type: ignore[union-attr]
        for index in range(max(len(left_text), len(right_text))):
            a = _order(left_text[index]) if index < len(left_text) else 0
            b = _order(right_text[index]) if index < len(right_text) else 0
            if a != b:
                return -1 if a < b else 1
        left, right = left[len(left_text):], right[len(right_text):]
        left_digits = re.match(r"\d*", left).group()  # type: ignore[union-attr]
        right_digits = re.match(r"\d*", right).group()  # type: ignore[union-attr]
        if int(left_digits or 0) != int(right_digits or 0):
            return -1 if int(left_digits or 0) < int(right_digits or 0) else 1
        left, right = left[len(left_digits):], right[len(right_digits):]
    return 0


def compare_versions(left: str, right: str) -> int:
    """Debian's version order (epoch, upstream version, revision): -1, 0 or 1."""
    def split(version: str) -> tuple[int, str, str]:
        epoch, _, rest = version.rpartition(":") if ":" in version else ("0", "", version)
        upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch or 0), upstream, revision

    left_epoch, left_upstream, left_revision = split(left)
    right_epoch, right_upstream, right_revision = split(right)
    if left_epoch != right_epoch:
        return -1 if left_epoch < right_epoch else 1
    return _compare_part(left_upstream, right_upstream) or _compare_part(left_revision, right_revision)


def orig_tarball(stanza: dict[str, str]) -> tuple[str, str, int] | None:
    """(file name, SHA-256, size) of an entry's `.orig.tar.xz`, from its Checksums-Sha256 field."""
    words = stanza.get("checksums-sha256", "").split()
    for index in range(0, len(words) - 2, 3):
        digest, size, name = words[index:index + 3]
        if name.endswith(".orig.tar.xz"):
            return name, digest, int(size)
    return None


def choose_source(stanzas: list[dict[str, str]], package: str, suite: str) -> PythonSource | None:
    """The newest entry of `package` with an upstream tarball. Entries kept only for another
    package's sake (Extra-Source-Only) are skipped: the suite does not build them."""
    candidates: list[PythonSource] = []
    for stanza in stanzas:
        if stanza.get("package") != package or stanza.get("extra-source-only", "no").lower() == "yes":
            continue
        tarball = orig_tarball(stanza)
        if tarball is None or "directory" not in stanza:
            continue
        name, digest, size = tarball
        candidates.append(PythonSource(package, stanza.get("version", ""), suite, stanza["directory"], name, digest, size))
    if not candidates:
        return None
    by_version = functools.cmp_to_key(lambda a, b: compare_versions(a.version, b.version))
    return max(candidates, key=by_version)


# -- the mirror ----------------------------------------------------------------------------------
def _ssl_context() -> ssl.SSLContext:
    """The machine's trust for an https mirror: the CA bundle its pip and tools are pointed at
    (a proxy's CA may be in it), else the system's."""
    from swe_residual.environments.machine_trust import host_pip_config

    bundle = host_pip_config()[1]
    return ssl.create_default_context(cafile=str(bundle) if bundle else None)


def fetch_url(url: str) -> bytes:
    """The body at `url` (apt's mirror, reached as apt reaches it; urllib honours http_proxy)."""
    context = _ssl_context() if url.startswith("https:") else None
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_SEC, context=context) as response:
        return response.read()


def find_python_source(minor: str, mirror_uri: str, suites: tuple[str, ...] = SOURCE_SUITES,
                       fetch: Fetch = fetch_url, progress: Progress = print) -> PythonSource:
    """The entry of source package `python<minor>` in the first suite whose Sources index has it."""
    package = f"python{minor}"
    looked: list[str] = []
    for suite in suites:
        url = f"{mirror_uri.rstrip('/')}/dists/{suite}/main/source/Sources.xz"
        try:
            text = lzma.decompress(fetch(url)).decode("utf-8", errors="replace")
        except (urllib.error.URLError, OSError, lzma.LZMAError) as exc:
            looked.append(f"{suite} (index unreadable: {exc})")
            continue
        found = choose_source(deb822_stanzas(text), package, suite)
        if found is not None:
            progress(f"source package {package} {found.version} found in {suite}'s Sources index")
            return found
        looked.append(f"{suite} (no {package})")
    raise InfraError(f"no Debian suite of {mirror_uri} carries source package {package}: " + "; ".join(looked),
                     stage="build")


def download_source(source: PythonSource, mirror_uri: str, progress: Progress = print,
                    fetch: Fetch = fetch_url, cache: Path | None = None) -> Path:
    """The verified tarball, downloaded once per machine (kept under the cache by its own name)."""
    cache = cache or _cache_dir() / "python-source"
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / source.filename
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == source.sha256:
        progress(f"{source.filename} already downloaded ({path})")
        return path
    url = source.url(mirror_uri)
    progress(f"downloading {url} ({source.size / 1e6:.1f} MB)")
    data = fetch(url)
    digest = hashlib.sha256(data).hexdigest()
    if digest != source.sha256:
        raise InfraError(f"{url}: SHA-256 {digest} is not the {source.sha256} of {source.suite}'s Sources index",
                         stage="build")
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(path)
    return path


# -- the image -----------------------------------------------------------------------------------
def python_recipe_digest(minor: str, release: str) -> str:
    """Hash of what goes into the image, the base's recipe included (not the point release:
    an image built once is reused without asking the mirror)."""
    recipe = {"version": PYTHON_RECIPE_VERSION, "base": recipe_digest(release), "python": minor,
              "packages": sorted(BUILD_PACKAGES), "configure": list(CONFIGURE_OPTIONS),
              "dockerfile": python_dockerfile("BASE", "VERSION")}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def python_dockerfile(base_image: str, version: str) -> str:
    """The build, from the tarball in the context: configured as the official images are,
    without PGO/LTO; the build packages purged again, the libraries Python links kept."""
    packages = " ".join(BUILD_PACKAGES)
    options = " ".join(CONFIGURE_OPTIONS)
    minor = "${PYTHON_VERSION%.*}"  # 3.13.5 -> 3.13, by the shell, from the image's ENV
    # The shared libraries the interpreter and its extension modules load, each named by file
    # (`*/libssl.so.3`: dpkg records /lib or /usr/lib, whichever the package ships), and the
    # packages holding them marked as wanted, so the purge of the build packages keeps them.
    keep_runtime = (
        f"ldd /usr/local/bin/python{minor} /usr/local/lib/libpython{minor}.so.1.0 "
        f"/usr/local/lib/python{minor}/lib-dynload/*.so "
        r"| sed -n 's#.*=> /[^ ]*/\([^/ ]*\) (.*#*/\1#p' | sort -u "
        r"| xargs -r dpkg-query --search 2>/dev/null | sed 's/: .*//; s/, /\n/g' | sort -u "
        "| xargs -r apt-mark manual"
    )
    steps = [
        'wanted="$(apt-mark showmanual)"',
        "apt-get update",
        f"apt-get install -y --no-install-recommends {packages}",
        "mkdir /usr/src/python",
        f"tar -xJf /usr/src/{TARBALL} --strip-components=1 -C /usr/src/python",
        f"rm /usr/src/{TARBALL}",
        "cd /usr/src/python",
        f'./configure --build="$(dpkg-architecture -qDEB_BUILD_GNU_TYPE)" {options}',
        # Debian's hardening flags for the compiler and linker; binaries stripped; the
        # interpreter finds libpython beside itself (../lib) wherever /usr/local is.
        'make -j "$(nproc)" EXTRA_CFLAGS="$(dpkg-buildflags --get CFLAGS)" '
        "LDFLAGS=\"$(dpkg-buildflags --get LDFLAGS) -Wl,--strip-all -Wl,-rpath,'\\$\\$ORIGIN/../lib'\"",
        "make install",
        "cd /",
        "rm -rf /usr/src/python",
        # Python's own test suite and the static library are not in the official images.
        f"rm -rf /usr/local/lib/python{minor}/test /usr/local/lib/python{minor}/idlelib/idle_test "
        "/usr/local/lib/libpython*.a",
        "find /usr/local -name __pycache__ -type d -prune -exec rm -rf {} +",
        "ldconfig",
        "apt-mark auto $(apt-mark showmanual) > /dev/null",
        "apt-mark manual $wanted > /dev/null",
        keep_runtime,
        # Suggests too: a debootstrapped system keeps apt's default (Suggests are important), and
        # perl suggests make, apt dpkg-dev, dpkg-dev's library gcc, which would all stay.
        "apt-get purge -y --auto-remove -o APT::AutoRemove::RecommendsImportant=false "
        "-o APT::AutoRemove::SuggestsImportant=false",
        # No docker-clean apt configuration either: the downloaded packages go by hand.
        "apt-get clean",
        "rm -rf /var/lib/apt/lists/*",
        # The short names the official images have.
        *(f"ln -s {name}3{suffix} /usr/local/bin/{name}{suffix}"
          for name, suffix in (("python", ""), ("pip", ""), ("pydoc", ""), ("idle", ""), ("python", "-config"))),
        f"python{minor} -c 'import ssl, sqlite3, ctypes, lzma, bz2, zlib, readline, uuid, dbm.gnu, curses'",
        "python --version",
        "pip --version",
    ]
    run = "RUN set -eux; \\\n    " + "; \\\n    ".join(steps)
    return "\n".join([
        f"FROM {base_image}",
        "ENV PATH=/usr/local/bin:$PATH LANG=C.UTF-8",
        # The base sets it for the sample tasks; the official images write bytecode (empty = unset).
        "ENV PYTHONDONTWRITEBYTECODE=",
        f"ENV PYTHON_VERSION={version}",
        f"COPY {TARBALL} /usr/src/{TARBALL}",
        run,
        'CMD ["python3"]',
        "",
    ])


def ensure_python_image(minor: str, *, release: str, rebuild: bool = False, progress: Progress = print,
                        client: Any = None) -> str:
    """Build (or reuse) `python_image_name(minor, release)`; return its image id.

    The release's base image is built first when missing (`ensure_base_image`). An image whose
    recipe label matches, built on the base image there is now, is reused unless `rebuild`.
    """
    if not re.fullmatch(r"\d+\.\d+", minor):
        raise InfraError(f"--python {minor}: expected a minor version such as 3.13", stage="build")
    base_id = ensure_base_image(release=release, progress=progress, client=client)
    image = python_image_name(minor, release)
    digest = python_recipe_digest(minor, release)
    with FileLock(str(_cache_dir() / f"python-image-{minor}-{release}.lock")):
        client = client or _build_client()
        found = image_labels(image, client)
        if found and not rebuild and found[1].get(RECIPE_LABEL) == digest and found[1].get(BASE_ID_LABEL) == base_id:
            progress(f"{image} is up to date ({found[0][7:19]}, Python {found[1].get(PYTHON_LABEL)}, recipe {digest})")
            return found[0]
        mirror = debian_mirror(release)
        source = find_python_source(minor, mirror.uri, progress=progress)
        tarball = download_source(source, mirror.uri, progress)
        labels = {RECIPE_LABEL: digest, "swe-residual.kind": "python", PYTHON_LABEL: source.upstream,
                  SOURCE_LABEL: source.sha256, BASE_ID_LABEL: base_id}
        started = time.monotonic()
        image_id = _build(client, image, base_image_name(release), source.upstream, tarball, labels, progress)
        if found and found[0] != image_id:
            from swe_residual.environments.docker.engine import remove_images

            remove_images(client, [found[0]])  # no longer tagged: it would linger dangling
        size = (image_size(client, image_id) or 0) / 1e6
        progress(f"built {image} ({image_id[7:19]}, Python {source.upstream}) in "
                 f"{time.monotonic() - started:.0f}s, {size:.0f} MB")
        return image_id


def _build_client() -> Any:
    from swe_residual.environments.docker.engine import connect

    return connect(timeout_sec=BUILD_TIMEOUT_SEC)


def image_size(client: Any, image_id: str) -> int | None:
    """The image's size in bytes, as the engine reports it."""
    from swe_residual.environments.docker.engine import inspect_image

    found = inspect_image(client, image_id)
    return found.get("Size") if found else None


# The build prints thousands of compiler lines: the steps, and a line now and then, are enough.
PROGRESS_EVERY_SEC = 15.0


def _build(client: Any, image: str, base_image: str, version: str, tarball: Path, labels: dict[str, str],
           progress: Progress) -> str:
    from swe_residual.environments.docker.engine import engine_errors

    context = Path(tempfile.mkdtemp(prefix="swe-residual-python-"))
    try:
        shutil.copyfile(tarball, context / TARBALL)
        (context / "Dockerfile").write_text(python_dockerfile(base_image, version), encoding="utf-8")
        progress(f"compiling Python {version} in a build FROM {base_image} (several minutes)")
        image_id = ""
        tail: list[str] = []
        partial = ""  # the engine streams pieces of lines (configure's `checking X... ` then `yes`)
        last = time.monotonic()
        with engine_errors(f"building {image}", stage="build"):
            for chunk in client.api.build(path=str(context), tag=image, labels=labels, rm=True, forcerm=True,
                                          decode=True):
                lines = (partial + chunk.get("stream", "")).split("\n")
                partial = lines.pop()
                for line in lines:
                    tail = (tail + [line])[-30:]
                    if line.startswith("Step ") or time.monotonic() - last > PROGRESS_EVERY_SEC:
                        progress(f"  {line[:160]}")
                        last = time.monotonic()
                if "aux" in chunk and "ID" in chunk["aux"]:
                    image_id = chunk["aux"]["ID"]
                if "error" in chunk:
                    raise InfraError(f"building {image} failed: {chunk['error'].strip()}\n" + "\n".join(tail),
                                     stage="build")
    finally:
        shutil.rmtree(context, ignore_errors=True)
    if not image_id:
        raise InfraError(f"building {image} gave no image id", stage="build")
    return image_id

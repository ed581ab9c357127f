"""The base image that sample tasks start FROM, and the Debian stand-in it is built on offline.

The sample tasks start `FROM debian:bookworm-slim` and install what they need in their first
RUN; `swe-residual-base:bookworm` is those same first lines built once (`base_dockerfile`), so
the builder's layer cache shares them with every sample task and the suite's own test tasks
start FROM the base directly. Where a registry answers, `debian:bookworm-slim` is pulled and
nothing here needs root.

Where no registry answers (the machines this suite is built on), `debian:RELEASE-slim` is made
the way Debian's own images are: `debootstrap --variant=minbase` into a directory, then a tar
of it imported through the engine's API, tagged with the public name and labelled a stand-in
(`swe-residual.stand-in`, inherited by every image built on it). The Debian mirror is read from
the machine's apt configuration at run time and stays in the image's sources.list, so a
Dockerfile's `apt-get install` reaches the mirror the host uses. Only this step needs root.

Other releases are built the same way under their own tag (`swe-residual-base:trixie` on
`debian:trixie-slim`). A Python the release does not ship is compiled on its base by
python_image.py (`swe-residual-python:3.13-bookworm`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from swe_residual.environments.cache import default_cache_dir
from swe_residual.dataset.errors import InfraError
from swe_residual.environments.docker.pulls import (
    STAND_IN_HOW_LABEL, STAND_IN_LABEL, PullRefused, RegistryUnreachable, pull_image, remove_if_untagged, stand_in_of,
)

BASE_REPOSITORY = "swe-residual-base"
BASE_RELEASE = "bookworm"
BASE_IMAGE = f"{BASE_REPOSITORY}:{BASE_RELEASE}"
BASE_VARIANT = "minbase"
# What every sample task needs: the interpreter and pytest for the verifier, git and patch for
# the states, procps for `ps`/`pkill` in agents' hands, CA certificates for tasks that go
# online. `timeout` (used to kill timed-out commands inside containers) is in coreutils,
# which minbase always has.
BASE_PACKAGES = ("python3", "python3-pytest", "git", "patch", "procps", "ca-certificates")
# What Debian's official images set, given to a debootstrapped stand-in for one.
STAND_IN_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["bash"]',
)
# What makes Debian's official images small, given to the stand-in for one as its own
# configuration: apt keeps no downloaded packages or caches, fetches no translations and keeps
# its indexes compressed; dpkg leaves out documentation, manual pages and translations (copyright
# files kept), as the `-slim` images do.
STAND_IN_FILES = {
    "etc/apt/apt.conf.d/swe-residual-clean": (
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
        '/var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
        '/var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
        'Acquire::Languages "none";\nAcquire::GzipIndexes "true";\nAcquire::CompressionTypes::Order:: "gz";\n'),
    "etc/dpkg/dpkg.cfg.d/swe-residual-slim": (
        "path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n"
        "path-exclude /usr/share/man/*\npath-exclude /usr/share/groff/*\npath-exclude /usr/share/info/*\n"
        "path-exclude /usr/share/locale/*\npath-exclude /usr/share/lintian/*\npath-exclude /usr/share/linda/*\n"),
}
# Debian's version numbers, for `debian:12-slim`.
DEBIAN_VERSIONS = {"12": "bookworm", "13": "trixie"}
# Bump when the build procedure changes in a way the fields above do not show.
RECIPE_VERSION = 2
RECIPE_LABEL = "swe-residual.recipe"
BASE_FROM_LABEL = "swe-residual.base.from-id"  # the id of the debian:RELEASE-slim the base was built on


APT_SOURCE_FILES = (Path("/etc/apt/sources.list"),)
APT_SOURCE_DIR = Path("/etc/apt/sources.list.d")
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class AptSource:
    """One (URI, suite) pair of the machine's apt configuration."""

    uri: str
    suite: str
    components: tuple[str, ...]
    signed_by: str | None
    origin: Path


def deb822_stanzas(text: str) -> list[dict[str, str]]:
    """The stanzas of a deb822 text (apt's `.sources`, an archive's `Sources` index): field
    names in lower case, a folded field's lines joined by spaces."""
    stanzas: list[dict[str, str]] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        current: str | None = None
        for line in stanza.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0] in " \t" and current:  # folded continuation line
                fields[current] += " " + line.strip()
                continue
            key, sep, value = line.partition(":")
            if not sep:
                continue
            current = key.strip().lower()
            fields[current] = value.strip()
        if fields:
            stanzas.append(fields)
    return stanzas


def parse_deb822(text: str, origin: Path) -> list[AptSource]:
    """Sources from a deb822 `.sources` file (stanzas separated by blank lines)."""
    sources: list[AptSource] = []
    for fields in deb822_stanzas(text):
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        signed_by = fields.get("signed-by") or None
        components = tuple(fields.get("components", "").split())
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                sources.append(AptSource(uri, suite, components, signed_by, origin))
    return sources


def parse_one_line(text: str, origin: Path) -> list[AptSource]:
    """Sources from a one-line-style `sources.list`: `deb [opts] URI suite comp...`."""
    sources: list[AptSource] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue  # deb-src and blank lines
        rest = line[4:].strip()
        options: dict[str, str] = {}
        if rest.startswith("["):
            inside, _, rest = rest[1:].partition("]")
            for option in inside.split():
                key, _, value = option.partition("=")
                options[key] = value
        parts = rest.split()
        if len(parts) < 2:
            continue
        sources.append(AptSource(parts[0], parts[1], tuple(parts[2:]), options.get("signed-by"), origin))
    return sources


def apt_sources(files: Iterable[Path] | None = None) -> list[AptSource]:
    """Every enabled binary source of the machine's apt configuration, in apt's reading order."""
    if files is None:
        listed = list(APT_SOURCE_FILES)
        if APT_SOURCE_DIR.is_dir():
            listed += sorted(APT_SOURCE_DIR.glob("*.list")) + sorted(APT_SOURCE_DIR.glob("*.sources"))
        files = listed
    sources: list[AptSource] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        parser = parse_deb822 if path.suffix == ".sources" else parse_one_line
        sources += parser(text, path)
    return sources


def debian_mirror(release: str = BASE_RELEASE, sources: list[AptSource] | None = None) -> AptSource:
    """The apt source to bootstrap `release` from.

    Prefer an entry naming `release` itself; otherwise the machine may run another Debian
    release, and its main archive (a suite without `-updates`/`-security`) serves `release` too.
    """
    sources = apt_sources() if sources is None else sources
    exact = [s for s in sources if s.suite == release]
    if exact:
        return exact[0]
    archives = [s for s in sources if "-" not in s.suite and "/" not in s.suite and "security" not in s.uri]
    if archives:
        first = archives[0]
        return AptSource(first.uri, release, first.components, first.signed_by, first.origin)
    looked = ", ".join(str(p) for p in (*APT_SOURCE_FILES, APT_SOURCE_DIR))
    raise InfraError(
        f"no Debian mirror found in the apt configuration ({looked}): need a `deb URI {release} main` "
        "line or a deb822 stanza with URIs:/Suites:",
        stage="build",
    )


def base_dockerfile(release: str = BASE_RELEASE) -> str:
    """The base image's Dockerfile: the first lines every sample task's Dockerfile has (on the
    same FROM, the builder's layer cache shares them), so the base is those tasks' common part."""
    return (f"FROM {slim_image_name(release)}\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\\n"
            f"    {' '.join(BASE_PACKAGES)} \\\n"
            "    && rm -rf /var/lib/apt/lists/*\n"
            "ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1\n")


def slim_image_name(release: str = BASE_RELEASE) -> str:
    """Debian's public image the base of `release` starts FROM."""
    return f"debian:{release}-slim"


def recipe_digest(release: str = BASE_RELEASE) -> str:
    """Hash of what goes into the base image (not of where it is downloaded from)."""
    recipe = {"version": RECIPE_VERSION, "release": release, "dockerfile": base_dockerfile(release)}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def debian_release(reference: str) -> str | None:
    """The Debian release a public `debian:` image names (`debian:bookworm-slim`, `debian:12`),
    or None for another image."""
    name = reference.split("@", 1)[0].removeprefix("docker.io/").removeprefix("library/")
    repository, _, tag = name.partition(":")
    if repository != "debian":
        return None
    word = (tag or "latest").split("-", 1)[0]
    release = DEBIAN_VERSIONS.get(word.split(".", 1)[0], word)
    return release if re.fullmatch(r"[a-z]+", release) and release not in ("latest", "stable") else None


def _client() -> Any:
    # Imported here: the docker backend's package imports this module for BASE_IMAGE.
    from swe_residual.environments.docker.engine import default_client

    return default_client()


def image_labels(reference: str, client: Any = None) -> tuple[str, dict[str, str]] | None:
    """(image id, labels) of an image of `client`'s engine (default: the environment's), or None."""
    from swe_residual.environments.docker.engine import inspect_image

    found = inspect_image(client or _client(), reference)
    if found is None:
        return None
    return found["Id"], (found.get("Config") or {}).get("Labels") or {}


def _cache_dir() -> Path:
    path = default_cache_dir() / "docker"
    path.mkdir(parents=True, exist_ok=True)
    return path


def base_image_name(release: str = BASE_RELEASE) -> str:
    """The tag of the base image of a Debian release."""
    return f"{BASE_REPOSITORY}:{release}"


def engine_key_of(client: Any) -> str:
    """What names an engine in the pull locks: the URL its client talks to."""
    return str(getattr(getattr(client, "api", None), "base_url", "") or "default")


# (engine, reference) -> image id, for a stand-in kept because no registry answered: asked once
# per process, not before every task build.
_KEPT_STAND_INS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Unpulled:
    """Neither the engine (but for a stand-in) nor a registry gave the image: the registry's answer."""

    answer: str


def own_or_pulled(reference: str, client: Any, progress: Progress) -> str | Unpulled:
    """`reference`'s id when the engine has it (not a stand-in) or a registry gives it; else the
    registry's answer. A registry that refuses an image of which no stand-in exists raises
    PullRefused; with a stand-in there, it stays usable."""
    found = image_labels(reference, client)
    if found is not None and not found[1].get(STAND_IN_LABEL):
        return found[0]
    try:
        pulled = pull_image(client, reference, engine_key=engine_key_of(client), lock_dir=_cache_dir(),
                            progress=progress, replace_stand_in=True)
        return str(pulled["Id"])
    except RegistryUnreachable as exc:
        return Unpulled(exc.answer)
    except PullRefused as exc:
        if found is None:
            raise
        return Unpulled(exc.answer)


def ensure_debian_image(reference: str, *, progress: Progress = print, client: Any = None,
                        source: str = "") -> str:
    """Id of the public Debian image `reference` (`debian:bookworm-slim`): the engine's own
    when it is not a stand-in, else pulled, else (no registry answers) a debootstrapped stand-in
    tagged with that name. A stand-in already there is replaced when a registry answers.
    `source` names what asked for it, for the errors (a Dockerfile, the base image)."""
    release = debian_release(reference)
    if release is None:
        raise InfraError(f"{reference} is not a Debian image with a release in its tag", stage="build")
    client = client or _client()
    key = (engine_key_of(client), reference)
    if key in _KEPT_STAND_INS:
        return _KEPT_STAND_INS[key]
    got = own_or_pulled(reference, client, progress)
    if isinstance(got, str):
        return got
    answer = got.answer
    with FileLock(str(_cache_dir() / f"stand-in-{release}.lock")):
        from swe_residual.environments.docker.engine import inspect_image

        now = inspect_image(client, reference)  # another worker may have made it meanwhile
        current = now is not None and stand_in_of(now) and \
            ((now.get("Config") or {}).get("Labels") or {}).get(RECIPE_LABEL) == stand_in_digest(release)
        if current:
            image_id = str(now["Id"])  # type: ignore[index]
        else:
            progress(f"no registry answers for {reference} ({answer[:200]}): making a stand-in from Debian's "
                     "packages (debootstrap)")
            image_id = _debootstrap_stand_in(reference, release, progress, client, answer, source)
            if now is not None and now["Id"] != image_id:
                remove_if_untagged(client, now["Id"])  # an older stand-in
    progress(f"no registry answers ({answer[:120]}): using a stand-in for {reference}: {stand_in_how(release)}")
    _KEPT_STAND_INS[key] = image_id
    return image_id


def stand_in_digest(release: str) -> str:
    """Hash of how a Debian stand-in is made: a stand-in made otherwise is made again."""
    recipe = {"version": RECIPE_VERSION, "release": release, "variant": BASE_VARIANT,
              "changes": list(STAND_IN_CHANGES), "files": STAND_IN_FILES}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def stand_in_how(release: str, mirror: str = "") -> str:
    """The short account a Debian stand-in carries (`swe-residual.stand-in.how`)."""
    return (f"debootstrap --variant={BASE_VARIANT} of Debian {release}"
            + (f" from {mirror}" if mirror else "") + ", the mirror kept in its apt sources")


def ensure_base_image(*, rebuild: bool = False, progress: Progress = print, image: str | None = None,
                      release: str = BASE_RELEASE, report_current: bool = True, client: Any = None) -> str:
    """Build (or reuse) `image` (default: `base_image_name(release)`): `base_dockerfile(release)`
    on `debian:RELEASE-slim` (pulled, else its stand-in); return its image id.

    Reuses an existing image whose recipe label matches, built on the Debian image there is
    now, unless `rebuild`. One build per machine at a time (file lock), so xdist workers and
    parallel runs wait for the first one. `client` is the engine to build on (default: the
    environment's, DOCKER_HOST or the local socket). A build always reports its progress;
    finding the image current does only when `report_current` (the docker backend checks before
    every task image build: once said is enough).
    """
    image = image or base_image_name(release)
    digest = recipe_digest(release)
    client = client or _client()
    slim_id = ensure_debian_image(slim_image_name(release), progress=progress, client=client,
                                  source=f"the base image {image}")
    # One lock per release: building one release does not hold up the check of another. The
    # default release keeps the lock's first name, which other checkouts on the machine use.
    lock_name = "base-image.lock" if release == BASE_RELEASE else f"base-image-{release}.lock"
    with FileLock(str(_cache_dir() / lock_name)):
        found = image_labels(image, client)
        if found and not rebuild and found[1].get(RECIPE_LABEL) == digest and found[1].get(BASE_FROM_LABEL) == slim_id:
            if report_current:
                progress(f"base image {image} is up to date ({found[0][7:19]}, recipe {digest})")
            return found[0]
        previous = found[0] if found else None
        started = time.monotonic()
        image_id = _build_on_slim(image, release, digest, slim_id, progress, client)
        if previous and previous != image_id:
            # The tag moved to the new image: drop the old one so it does not linger dangling
            # (fails harmlessly if some task image still builds on it).
            from swe_residual.environments.docker.engine import remove_images

            remove_images(client, [previous])
        progress(f"built {image} ({image_id[7:19]}) in {time.monotonic() - started:.0f}s")
        return image_id


def _build_on_slim(image: str, release: str, digest: str, slim_id: str, progress: Progress, client: Any) -> str:
    """The base's Dockerfile built by the engine's classic builder; the labels go last (a LABEL
    step after the shared lines, which the sample tasks' builds then find in the cache)."""
    import io

    from swe_residual.environments.docker.engine import engine_errors

    progress(f"building {image} on {slim_image_name(release)}: {' '.join(BASE_PACKAGES)} from the Debian mirror")
    from swe_residual.environments.docker.rebuild import label_instruction

    labels = {RECIPE_LABEL: digest, "swe-residual.kind": "base", BASE_FROM_LABEL: slim_id}
    # The labels last, as one step after the shared lines (which the sample tasks' builds then find in the cache).
    dockerfile = io.BytesIO((base_dockerfile(release) + label_instruction(labels) + "\n").encode())
    tail: list[str] = []
    with engine_errors(f"building {image}", stage="build"):
        for chunk in client.api.build(fileobj=dockerfile, tag=image, rm=True, forcerm=True, decode=True):
            tail = (tail + str(chunk.get("stream") or "").splitlines())[-30:]
            if "error" in chunk:
                raise InfraError(f"building {image} failed: {str(chunk['error']).strip()}\n" + "\n".join(tail),
                                 stage="build")
    found = image_labels(image, client)
    if not found:
        raise InfraError(f"{image} is missing right after its build", stage="build")
    return found[0]


def _ensure_debootstrap(progress: Progress) -> str:
    found = shutil.which("debootstrap")
    if found:
        return found
    if os.geteuid() != 0:
        raise InfraError("debootstrap is not installed and we are not root: `apt-get install debootstrap`", stage="build")
    progress("installing debootstrap with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", "debootstrap"]):
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise InfraError(f"`{' '.join(args)}` failed: {done.stderr.strip()[-800:]}", stage="build")
    found = shutil.which("debootstrap")
    if not found:
        raise InfraError("debootstrap is still missing after apt-get install", stage="build")
    return found


def _debootstrap_stand_in(image: str, release: str, progress: Progress, client: Any, answer: str,
                          source: str) -> str:
    """`image` made by debootstrap (minbase, nothing more) and labelled a stand-in for itself."""
    if os.geteuid() != 0:
        wanted = f" (for {source})" if source else ""
        raise InfraError(
            f"{image}{wanted} is not on this engine and no registry answers ({answer[:300]}); a stand-in for it "
            "is made from Debian's packages by debootstrap, which needs root. Either give the engine pull access "
            f"to a registry that has {image} (or `docker load` it), or run `swe-residual build-base` as root once "
            "on this machine (it makes the stand-in)", stage="build")
    debootstrap = _ensure_debootstrap(progress)
    mirror = debian_mirror(release)
    progress(f"bootstrapping Debian {mirror.suite} ({BASE_VARIANT}) from {mirror.uri} (found in {mirror.origin})")
    work = Path(tempfile.mkdtemp(prefix="swe-residual-base-"))
    root = work / "root"
    try:
        args = [debootstrap, f"--variant={BASE_VARIANT}"]
        keyring = mirror.signed_by if mirror.signed_by and Path(mirror.signed_by).is_file() else None
        if keyring is None and DEFAULT_KEYRING.is_file():
            keyring = str(DEFAULT_KEYRING)
        if keyring:
            args.append(f"--keyring={keyring}")
        args += [mirror.suite, str(root), mirror.uri]
        _stream(args, progress)
        _trim_root(root)
        for relative, text in STAND_IN_FILES.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        progress("importing the root file system into docker")
        how = stand_in_how(release, mirror.uri)
        changes = [*STAND_IN_CHANGES, f"LABEL {STAND_IN_LABEL}={image}", f'LABEL {STAND_IN_HOW_LABEL}="{how}"',
                   "LABEL swe-residual.kind=stand-in", f"LABEL {RECIPE_LABEL}={stand_in_digest(release)}"]
        _import_root(root, image, changes, client)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = image_labels(image, client)
    if not found:
        raise InfraError(f"{image} is missing right after its import", stage="build")
    return found[0]


def _import_root(root: Path, image: str, changes: list[str], client: Any) -> None:
    """`tar` of the root file system streamed into the engine's image import."""
    from swe_residual.environments.docker.engine import engine_errors

    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(root), "-c", "."], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert tar.stdout is not None and tar.stderr is not None
    repository, _, tag = image.partition(":")
    try:
        with engine_errors(f"importing the root file system as {image}", stage="build"):
            client.api.import_image(src=tar.stdout, repository=repository, tag=tag or None,
                                       changes=changes, stream_src=True)
    finally:
        tar.stdout.close()
        tar_err = tar.stderr.read()
        tar.stderr.close()
        code = tar.wait()
    if code != 0:
        raise InfraError(f"tar of the root file system failed: {tar_err.decode(errors='replace')[-500:]}", stage="build")


def _stream(args: list[str], progress: Progress) -> None:
    """Run a long command, passing on a progress line now and then (debootstrap's I: lines)."""
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    tail: list[str] = []
    assert process.stdout is not None
    last = 0.0
    for line in process.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-30:]
        # debootstrap prints one line per package; a line every few seconds is enough.
        if line.startswith(("I: Retrieving Release", "I: Base system installed")) or time.monotonic() - last > 10:
            progress(f"  {line}")
            last = time.monotonic()
    if process.wait() != 0:
        raise InfraError(f"{Path(args[0]).name} failed:\n" + "\n".join(tail), stage="build")


def _trim_root(root: Path) -> None:
    """Drop what an image does not need: downloaded .debs, apt lists, device nodes, logs."""
    for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "var/log/*.log", "dev/*"):
        for path in root.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    # etc/apt/sources.list stays: a task Dockerfile may `apt-get install` at build time.

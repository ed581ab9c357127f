"""`ubuntu:RELEASE` as the engine has it, pulled, or (no registry answers) a stand-in made by debootstrap.

Terminal-Bench 2 tasks start FROM `ubuntu:24.04` (dna-insert, extract-elf, polyglot-c-py, ...). A
machine with a registry pulls it. Offline, the stand-in is made as Ubuntu's own image is: Ubuntu's
packages bootstrapped (`debootstrap --variant=minbase`) into a directory, imported through the
engine as a tar, tagged with the public name and labelled a stand-in, then brought up to the
release's updates and security pocket as the published image is (it is rebuilt every few weeks).
Like the published image it has procps and no python3: a recorded `python3: command not found`
recurs, and dpkg's count of installed files is the image's own.

What no code here names:
- the mirror: `swe-residual build-base --release noble --mirror URL`, else
  SWE_RESIDUAL_UBUNTU_MIRROR, else an apt source of the machine whose suite is the release (an
  Ubuntu host's own). It stays in the image's apt sources for every pocket (release, -updates,
  -backports, -security), so a Dockerfile's `apt-get install` reaches it.
- the archive's signing keys: `--keyring FILE`, else Ubuntu's keyring where an Ubuntu host (or
  the `ubuntu-keyring` package) puts it. Debian's packages here do not carry it; a machine without
  it is told where to get it.

Debian's debootstrap may predate the release (bookworm's knows no noble): every Ubuntu release
since gutsy is bootstrapped by the same script, so its `gutsy` script stands in for a missing one.
Only the debootstrap step needs root.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from filelock import FileLock

from swe_residual.dataset.errors import InfraError
from swe_residual.environments.docker.base_image import (
    BASE_VARIANT, RECIPE_LABEL, STAND_IN_FILES, AptSource, Progress, _cache_dir, _client, _ensure_debootstrap,
    _import_root, _stream, _trim_root, apt_sources, image_labels, own_or_pulled,
)
from swe_residual.environments.docker.ubuntu_releases import UBUNTU_RELEASES, UbuntuImage, ubuntu_release
from swe_residual.environments.docker.pulls import (
    STAND_IN_HOW_LABEL, STAND_IN_LABEL, remove_if_untagged,
    stand_in_of,
)

MIRROR_ENV = "SWE_RESIDUAL_UBUNTU_MIRROR"
KEYRING_ENV = "SWE_RESIDUAL_UBUNTU_KEYRING"
# Where Ubuntu (and Debian's ubuntu-keyring package, where a release carries it) puts the keys.
DEFAULT_KEYRING = Path("/usr/share/keyrings/ubuntu-archive-keyring.gpg")
DEBOOTSTRAP_SCRIPTS = Path("/usr/share/debootstrap/scripts")
# Every Ubuntu release since 7.10 is bootstrapped by this script (debootstrap links the newer names to it).
UBUNTU_SCRIPT = "gutsy"
# What Ubuntu's published image has beyond debootstrap's minbase (its package list, docker-library's
# repo-info for ubuntu:24.04): minbase has the rest, procps among them.
IMAGE_EXTRAS = {"noble": ("libdb5.3t64", "unminimize"), "jammy": ()}
COMPONENTS = ("main", "restricted", "universe", "multiverse")
POCKETS = ("", "-updates", "-backports", "-security")
# What the published image sets (its PATH, its command); its apt and dpkg configuration are the
# Debian stand-in's files (base_image.STAND_IN_FILES: no docs, manual pages or translations,
# which Ubuntu's `unminimize` puts back).
STAND_IN_CHANGES = ("ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 'CMD ["/bin/bash"]')
# The published image (23.04 and later) has a user `ubuntu`, uid and gid 1000, with a home.
USER_LINE = "useradd --create-home --uid 1000 --user-group --shell /bin/bash ubuntu"
# Bump when the way the stand-in is made changes.
RECIPE_VERSION = 1


def image_for_release(release: str) -> UbuntuImage:
    """`ubuntu:24.04` for `noble` (the name Dockerfiles use), or a clear error."""
    for version, name in UBUNTU_RELEASES.items():
        if name == release:
            return UbuntuImage(f"ubuntu:{version}", name)
    raise InfraError(f"no Ubuntu release {release!r} known: one of {', '.join(UBUNTU_RELEASES.values())}",
                     stage="build")


def is_ubuntu_release(release: str) -> bool:
    return release in UBUNTU_RELEASES.values()


def ubuntu_mirror(release: str, mirror: str | None = None, sources: list[AptSource] | None = None) -> str:
    """The Ubuntu mirror to bootstrap `release` from: given, else the environment's, else the
    machine's apt source for that suite (an Ubuntu host's)."""
    if mirror:
        return mirror.rstrip("/")
    if os.environ.get(MIRROR_ENV):
        return os.environ[MIRROR_ENV].rstrip("/")
    sources = apt_sources() if sources is None else sources
    # Ubuntu's own archive before a PPA or a vendor's repository for the same suite (apt reads
    # sources.list.d's *.list files, where those usually are, before ubuntu.sources).
    for source in sorted((s for s in sources if s.suite == release),
                         key=lambda s: Path(s.signed_by or "").name != DEFAULT_KEYRING.name):
        return source.uri.rstrip("/")
    raise InfraError(
        f"no Ubuntu mirror for {release}: this machine's apt sources name none (no suite {release}). Give one: "
        f"`swe-residual build-base --release {release} --mirror URL` or {MIRROR_ENV}=URL (an Ubuntu archive "
        "mirror, the URL an Ubuntu host's sources list gives)", stage="build")


def ubuntu_keyring(keyring: str | None = None) -> Path:
    """The keyring that verifies the Ubuntu archive: given, else the environment's, else Ubuntu's own path."""
    given = keyring or os.environ.get(KEYRING_ENV)
    path = Path(given) if given else DEFAULT_KEYRING
    if path.is_file():
        return path
    raise InfraError(
        f"no Ubuntu archive keyring at {path}: debootstrap verifies the mirror's Release file with it. Copy "
        f"an Ubuntu machine's {DEFAULT_KEYRING} (from its ubuntu-keyring package) here, or give "
        f"`--keyring FILE` / {KEYRING_ENV}=FILE", stage="build")


def debootstrap_script(release: str, scripts: Path = DEBOOTSTRAP_SCRIPTS) -> Path:
    """debootstrap's script for `release`, else its Ubuntu script (an older debootstrap)."""
    own = scripts / release
    return own if own.exists() else scripts / UBUNTU_SCRIPT


def sources_text(mirror: str, release: str) -> str:
    """The image's apt sources (deb822, as Ubuntu 24.04 writes them): every pocket from the one mirror."""
    suites = " ".join(release + pocket for pocket in POCKETS)
    return (f"Types: deb\nURIs: {mirror}/\nSuites: {suites}\nComponents: {' '.join(COMPONENTS)}\n"
            "Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n")


def stand_in_digest(release: str) -> str:
    """Hash of how the stand-in is made (not of the mirror): one made otherwise is made again."""
    recipe = {"version": RECIPE_VERSION, "release": release, "variant": BASE_VARIANT, "changes": list(STAND_IN_CHANGES),
              "files": STAND_IN_FILES, "pockets": list(POCKETS), "components": list(COMPONENTS), "user": USER_LINE,
              "extras": list(IMAGE_EXTRAS.get(release, ()))}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def stand_in_how(release: str, mirror: str) -> str:
    return (f"debootstrap --variant={BASE_VARIANT} of Ubuntu {release} from {mirror}, brought up to "
            f"{release}-updates and {release}-security, the mirror kept in its apt sources")


def ensure_ubuntu_image(reference: str, *, mirror: str | None = None, keyring: str | None = None,
                        rebuild: bool = False, progress: Progress = print, client: Any = None,
                        source: str = "") -> str:
    """Id of `reference` (`ubuntu:24.04`): the engine's own when it is not a stand-in, else pulled,
    else a stand-in (one made before is kept while no registry answers; made when missing, or
    when `rebuild`). `source` names what asked for it, for the errors."""
    image = ubuntu_release(reference)
    if image is None:
        raise InfraError(f"{reference} is not an Ubuntu image the suite knows ({', '.join(UBUNTU_RELEASES)})",
                         stage="build")
    client = client or _client()
    got = own_or_pulled(reference, client, progress)
    if isinstance(got, str):
        return got
    answer = got.answer
    with FileLock(str(_cache_dir() / f"stand-in-ubuntu-{image.release}.lock")):
        from swe_residual.environments.docker.engine import inspect_image

        now = inspect_image(client, reference)  # another worker may have made it meanwhile
        labels = ((now or {}).get("Config") or {}).get("Labels") or {}
        if now is not None and stand_in_of(now) and labels.get(RECIPE_LABEL) == stand_in_digest(image.release) \
                and not rebuild:
            progress(f"no registry answers ({answer[:120]}): using the stand-in for {reference}: "
                     f"{labels.get(STAND_IN_HOW_LABEL, '')}")
            return str(now["Id"])
        if os.geteuid() != 0:
            wanted = f" (for {source})" if source else ""
            raise InfraError(
                f"{reference}{wanted} is not on this engine and no registry answers ({answer[:300]}); its stand-in is "
                f"made from Ubuntu's packages by debootstrap, which needs root: run `{image.build_command}` as root "
                f"once on this machine, `docker load` the image, or give the engine a registry", stage="build")
        progress(f"no registry answers for {reference} ({answer[:200]}): making a stand-in from Ubuntu's packages")
        image_id = _debootstrap_ubuntu(image, ubuntu_mirror(image.release, mirror), ubuntu_keyring(keyring),
                                       progress, client)
        if now is not None and now["Id"] != image_id:
            remove_if_untagged(client, now["Id"])
        return image_id


def _debootstrap_ubuntu(image: UbuntuImage, mirror: str, keyring: Path, progress: Progress, client: Any) -> str:
    """debootstrap of the release into a directory, imported, then its updates applied in a build."""
    debootstrap = _ensure_debootstrap(progress)
    script = debootstrap_script(image.release)
    progress(f"bootstrapping Ubuntu {image.release} ({BASE_VARIANT}) from {mirror} (script {script.name}, "
             f"keys {keyring})")
    work = Path(tempfile.mkdtemp(prefix="swe-residual-ubuntu-"))
    root = work / "root"
    imported = f"{image.reference.partition(':')[0]}:swe-residual-bootstrap-{image.release}"
    try:
        _stream([debootstrap, f"--variant={BASE_VARIANT}", f"--keyring={keyring}", "--components=main,universe",
                 image.release, str(root), mirror, str(script)], progress)
        _trim_root(root)
        (root / "etc/apt/sources.list").unlink(missing_ok=True)
        (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/apt/sources.list.d/ubuntu.sources").write_text(sources_text(mirror, image.release),
                                                                    encoding="utf-8")
        (root / "usr/share/keyrings").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(keyring, root / "usr/share/keyrings/ubuntu-archive-keyring.gpg")
        for relative, text in STAND_IN_FILES.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        progress("importing the root file system into docker")
        _import_root(root, imported, list(STAND_IN_CHANGES), client)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    try:
        return _upgrade(image, imported, mirror, progress, client)
    finally:
        from swe_residual.environments.docker.engine import remove_images

        remove_images(client, [imported])


def _upgrade(image: UbuntuImage, imported: str, mirror: str, progress: Progress, client: Any) -> str:
    """The bootstrapped release brought up to its updates (one build step), labelled a stand-in."""
    from swe_residual.environments.docker.engine import engine_errors
    from swe_residual.environments.docker.rebuild import label_instruction

    labels = {STAND_IN_LABEL: image.reference, STAND_IN_HOW_LABEL: stand_in_how(image.release, mirror),
              "swe-residual.kind": "stand-in", RECIPE_LABEL: stand_in_digest(image.release)}
    extras = " ".join(IMAGE_EXTRAS.get(image.release, ()))
    install = f" && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {extras}" if extras else ""
    dockerfile = (f"FROM {imported}\n"
                  f"RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get -y upgrade{install} "
                  f"&& rm -rf /var/lib/apt/lists/* && {USER_LINE}\n" + label_instruction(labels) + "\n")
    progress(f"applying {image.release}-updates and {image.release}-security")
    tail: list[str] = []
    with engine_errors(f"upgrading the stand-in for {image.reference}", stage="build"):
        for chunk in client.api.build(fileobj=io.BytesIO(dockerfile.encode()), tag=image.reference, rm=True,
                                      forcerm=True, decode=True):
            tail = (tail + str(chunk.get("stream") or "").splitlines())[-30:]
            if "error" in chunk:
                raise InfraError(f"upgrading the stand-in for {image.reference} failed: "
                                 f"{str(chunk['error']).strip()}\n" + "\n".join(tail), stage="build")
    found = image_labels(image.reference, client)
    if not found:
        raise InfraError(f"{image.reference} is missing right after its build", stage="build")
    progress(f"made a stand-in for {image.reference} ({found[0][7:19]}): {stand_in_how(image.release, mirror)}")
    return found[0]


"""A published task's image rebuilt offline: its own Dockerfile with the FROM replaced by a stand-in.

Real DeepSWE v1.1 and Terminal-Bench 2 tasks name images in registries a machine without
registry access cannot reach. Where no registry answers, this builds a stand-in tagged with the
task's `[environment] docker_image`: the task's own `environment/Dockerfile` with its FROM
replaced by a Debian base (plus a Python matching what the published base provided), every
other instruction kept as published, and the task's `environment/` directory as the build
context. The docker backend uses it as its offline route (named_images.py), labelled a
stand-in; `scripts/rebuild-task-image` is the same by hand, with its options.

The Debian release is the one a `python:` tag names (`3.13-slim-bookworm` -> bookworm: what the
Dockerfile apt-gets comes from that release); for a tag that names none, the one whose python3
has the tag's minor version (`python:3.13` -> trixie, `python:3.11*` -> bookworm; a version no
release has -> the nearest, a `deviation:`); `debian:13*` -> trixie; anything else -> bookworm.
A `release` argument chooses another. The bases are built by `swe-residual build-base --release RELEASE`.

When the release's python3 is not the tag's X.Y and Debian carries that version's source
(3.11, 3.13: the source package of the release that ships it), the stand-in is
`swe-residual-python:X.Y-RELEASE`: CPython X.Y compiled into /usr/local on that release's base as
the official image's is (`swe-residual build-base --release RELEASE --python X.Y`, about 16
minutes on 2 cores), python and pip in /usr/local/bin, no venv; a `deviation:` says it is
compiled from Debian's source package (upstream tarball, Debian's patches not applied) without
PGO/LTO. Otherwise Debian's python3 of the release in a venv at /opt/venv, first on PATH, or, with
`--python-home PREFIX`, a CPython installed on this machine copied in (local_python.py).

What the build cannot reach is brought in as files of the context, used only during the build
and deleted at its end (`/tmp/swe-residual-rebuild`):
- pip's index: the host's pip configuration (`pip config list`: index URLs, trusted hosts) and
  its CA bundle, written to a pip.conf the RUN steps see through PIP_CONFIG_FILE. No host name
  is written here: everything is read from the host at run time.
- GitHub clones: each `repos` entry (URL -> a local git repository) is mirrored into the
  context, and git is told (GIT_CONFIG_* variables) to read URL from it, so the Dockerfile's own
  `git clone URL` and its history surgery run unchanged.

The bases have procps (`ps`, `pkill`, `top`, `free`); the official `python:*-slim*` images have
none, so a stand-in for one purges it first (`dpkg --purge procps`, which would refuse if another
installed package depended on it; none does in swe-residual-base:bookworm, whose library
libproc2-0 stays): an agent's `ps` there prints `bash: ps: command not found` as on the
published image. A Dockerfile that installs procps itself gets it back from its own apt step.
The suite's own listings inside a container read /proc where there is no `ps`.

Terminal-Bench `tests/test.sh` downloads curl, uv and pytest at verification time; they are
pre-installed (curl from Debian, the `uvx -w` packages from PyPI into /opt/uvx-tools, a `uvx`
stand-in on PATH that runs the installed tool, an empty `$HOME/.local/bin/env`).

Images are labelled swe-residual.rebuild=1.
"""

from __future__ import annotations

import configparser
import json
import posixpath
import re
import shlex
import shutil
import subprocess
import tempfile
import tomllib
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors

from swe_residual.environments.docker import local_python
from swe_residual.environments.docker.pulls import STAND_IN_HOW_LABEL, STAND_IN_LABEL, remove_if_untagged
from swe_residual.environments.docker.ubuntu_releases import UBUNTU_RELEASES, ubuntu_release
from swe_residual.environments.docker.local_python import LocalPython
from swe_residual.environments.machine_trust import host_pip_config

Progress = Callable[[str], None]

BASE_REPOSITORY = "swe-residual-base"
# CPython X.Y compiled on swe-residual-base:RELEASE (`swe-residual build-base --python X.Y`).
PYTHON_REPOSITORY = "swe-residual-python"
DEFAULT_RELEASE = "bookworm"
# The python3 minor version of each Debian release a base can be built from, oldest first.
DEBIAN_PYTHON = {"bookworm": (3, 11), "trixie": (3, 13)}
# The versions whose source Debian's mirror carries (the source package pythonX.Y of the release
# that ships it): those a python:X.Y image can have compiled on another release.
SOURCE_PYTHON = frozenset(DEBIAN_PYTHON.values())
# Debian's version numbers, for `debian:13.0-slim`.
DEBIAN_VERSION = {"12": "bookworm", "13": "trixie"}
LABEL = "swe-residual.rebuild"
# Inside the build only; removed by the last step.
BUILD_DIR = "/tmp/swe-residual-rebuild"
CONTEXT_DIR = "_swe_residual_rebuild"
VENV = "/opt/venv"
UVX_TOOLS = "/opt/uvx-tools"
# An Ubuntu base has no Python: the tools' own CPython 3.13, from this image, in a folder off PATH.
UVX_PYTHON = "/opt/uvx-python"
UVX_PYTHON_VERSION, UVX_PYTHON_RELEASE = "3.13", "bookworm"
UVX_PYTHON_IMAGE = f"{PYTHON_REPOSITORY}:{UVX_PYTHON_VERSION}-{UVX_PYTHON_RELEASE}"
UVX_STAGE = "swe-residual-uvx"
CLONE_URL = re.compile(r"git\s+clone\s+(?:-\S+\s+)*(https://[^\s\"']+)")
# The official python:*-slim* images have no procps (ps, pkill, top, free); the bases this
# rebuild starts from install it (base_image.BASE_PACKAGES): a stand-in for a slim image
# removes it. dpkg, not apt: it refuses rather than removing a package that depends on procps.
PURGE_PROCPS = "dpkg --purge procps"
NO_PROCPS_NOTE = "procps purged (ps, pkill, top, free), as the published slim image has none"


class RebuildError(ValueError):
    """A task whose Dockerfile this rebuild cannot handle, or a base it knows no stand-in for."""


def log(message: str) -> None:
    """The script's progress: a line on stdout."""
    print(f"[rebuild] {message}", flush=True)


@dataclass(frozen=True)
class StandIn:
    """The base a published FROM is replaced by."""

    release: str  # the Debian release of swe-residual-base:RELEASE
    python_venv: bool  # the published base gives python3 + pip on PATH: a venv of Debian's python3
    deviations: tuple[str, ...] = ()  # how it differs beyond what the notes say of every stand-in
    # "3.13": the published base's Python is compiled from source into /usr/local on the release's
    # base, as the official image's is (swe-residual-python:3.13-RELEASE); no venv then.
    python_build: str = ""
    # --python-home: a CPython installed on this machine, copied in; the venv is made from it.
    local_python: LocalPython | None = None
    # "ubuntu:24.04": the published base itself (pulled, else its stand-in made from Ubuntu's
    # packages, ubuntu_image.py); `release` is then its code name and nothing is added to it.
    ubuntu: str = ""

    @property
    def image(self) -> str:
        if self.ubuntu:
            return self.ubuntu
        if self.python_build:
            return f"{PYTHON_REPOSITORY}:{self.python_build}-{self.release}"
        return f"{BASE_REPOSITORY}:{self.release}"

    @property
    def python(self) -> str:
        if self.ubuntu:
            return ""  # the published ubuntu image has no python3
        if self.local_python is not None:
            return self.local_python.minor
        return self.python_build or dotted(DEBIAN_PYTHON[self.release])

    @property
    def build_command(self) -> str:
        """What builds the stand-in's image."""
        if self.ubuntu:
            return f"swe-residual build-base --release {self.release} --mirror URL"
        return (f"swe-residual build-base --release {self.release}"
                + (f" --python {self.python_build}" if self.python_build else ""))


def dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def python_version(tag: str) -> tuple[int, int] | None:
    """The Python minor version a `python:` image's tag names (`3.13-slim-bookworm`), if any."""
    found = re.match(r"(\d+)\.(\d+)(?:[.-]|$)", tag)
    return (int(found.group(1)), int(found.group(2))) if found else None


def release_for_python(wanted: tuple[int, int] | None) -> str:
    """The release whose python3 is `wanted`, else the nearest; on a tie or with no version the
    newer (code runs forward across minor versions more often than backward)."""
    newest = list(DEBIAN_PYTHON)[-1]
    if wanted is None:
        return newest
    return min(reversed(DEBIAN_PYTHON), key=lambda release: abs(DEBIAN_PYTHON[release][1] - wanted[1])
               if DEBIAN_PYTHON[release][0] == wanted[0] else 1000)


def stand_in_for(base_from: str, release: str | None = None) -> StandIn:
    """Which base stands in for a published FROM, and how it deviates (no engine needed).

    `release` (`--release`) overrides the choice, for a task whose Dockerfile installs what the
    chosen release lacks or changed: trixie has no libgl1-mesa-glx, and its OpenSSL prints a
    subject as `CN=x` where bookworm's prints `CN = x`."""
    if release is not None and release not in DEBIAN_PYTHON:
        raise RebuildError(f"--release {release}: one of {', '.join(DEBIAN_PYTHON)}")
    name = base_from.split("@", 1)[0]
    repository, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
    repository = repository.removeprefix("docker.io/").removeprefix("library/")
    if repository == "python":
        return python_stand_in(base_from, tag, release)
    ubuntu = ubuntu_release(base_from) if repository == "ubuntu" else None
    if ubuntu is not None and release is None:
        return StandIn(ubuntu.release, False, (), ubuntu=ubuntu.reference)
    if repository == "ubuntu":
        own = DEFAULT_RELEASE
        deviations = [f"{base_from}: Debian {DEFAULT_RELEASE} stands in for Ubuntu"
                      + ("" if release else f" (the suite makes stand-ins of Ubuntu {', '.join(UBUNTU_RELEASES)})")]
    elif "mars-base" in repository:
        own, deviations = DEFAULT_RELEASE, []
    elif repository == "debian":
        version = tag.split("-", 1)[0].split(".", 1)[0]
        own = DEBIAN_VERSION.get(version, version if version in DEBIAN_PYTHON else "")
        deviations = [] if own else [f"{base_from}: no base of that Debian release here: Debian {DEFAULT_RELEASE}"]
        own = own or DEFAULT_RELEASE
    else:
        raise RebuildError(f"no stand-in known for base image {base_from!r}")
    if release and release != own:
        deviations.append(f"--release {release}: Debian {release} instead of {own}")
    return StandIn(release or own, "mars-base" in repository, tuple(deviations))


def python_stand_in(base_from: str, tag: str, release: str | None) -> StandIn:
    """A `python:` image. A tag that names its Debian release (`3.13-slim-bookworm`) keeps that
    release: what the Dockerfile apt-gets comes from it (trixie changes more than Python: no
    libgl1-mesa-glx, OpenSSL 3.5 prints a subject as `CN=x` where bookworm's prints `CN = x`, which
    a reference solution parses). A tag that names none (`3.11-slim`, `3.13`) gets the release
    whose python3 is its minor version. When the release's python3 is not the tag's version and
    Debian carries that version's source, the stand-in has it compiled into /usr/local as the
    official image has (swe-residual-python:X.Y-RELEASE); otherwise the release's python3."""
    wanted = python_version(tag)
    published_os = next((r for r in DEBIAN_PYTHON if tag.endswith(f"-{r}")), None)
    matched = published_os or release_for_python(wanted)
    chosen = release or matched
    have = dotted(DEBIAN_PYTHON[chosen])
    deviations: list[str] = []
    if wanted is not None and DEBIAN_PYTHON[chosen] != wanted and wanted in SOURCE_PYTHON:
        if chosen != matched:
            deviations.append(f"{base_from}: --release {chosen}: Debian {chosen} instead of {matched} "
                              f"(what the Dockerfile apt-gets comes from {chosen})")
        deviations.append(f"Python {dotted(wanted)} is compiled without PGO/LTO from Debian's source package "
                          f"python{dotted(wanted)} (Debian's point release, Debian's patches not applied); "
                          f"Debian {chosen}'s python3 {have} stays in /usr/bin")
        return StandIn(chosen, False, tuple(deviations), dotted(wanted))
    if wanted is None:
        deviations.append(f"{base_from} names no Python minor version: Debian {chosen}'s python3 ({have})"
                          + (", the newest here" if chosen == matched else f", by --release {chosen}"))
    elif DEBIAN_PYTHON[chosen] != wanted and chosen == published_os:
        # No Debian suite carries this version's source (SOURCE_PYTHON): it cannot be compiled here.
        deviations.append(f"{base_from} is Debian {published_os} with Python {dotted(wanted)} built from source; "
                          f"the stand-in keeps Debian {published_os} (what the Dockerfile apt-gets comes from it) "
                          f"with its python3 {have}")
    elif DEBIAN_PYTHON[chosen] != wanted and chosen == matched:
        shipped = ", ".join(f"{r} {dotted(v)}" for r, v in DEBIAN_PYTHON.items())
        deviations.append(f"{base_from} has Python {dotted(wanted)}, which no Debian release here ships "
                          f"({shipped}): the nearest, Debian {chosen}'s python3 {have}")
    elif DEBIAN_PYTHON[chosen] != wanted:
        deviations.append(f"{base_from} has Python {dotted(wanted)}; --release {chosen}: Debian {chosen}'s "
                          f"python3 {have} instead of {matched}'s {dotted(DEBIAN_PYTHON[matched])}")
    if published_os and published_os != chosen:
        # The official image is that release with Python built from source in /usr/local; the
        # same Python from another release moves the system packages a Dockerfile installs.
        deviations.append(f"{base_from} is Debian {published_os} with its own Python build; the stand-in is "
                          f"Debian {chosen} (for its python3): what the Dockerfile apt-gets comes from {chosen}")
    return StandIn(chosen, True, tuple(deviations))


@dataclass
class Instruction:
    keyword: str  # upper case
    text: str  # the whole logical instruction as written (continuation lines included)

    @property
    def args(self) -> str:
        return self.text.split(None, 1)[1] if len(self.text.split(None, 1)) > 1 else ""


@dataclass
class Plan:
    task_dir: Path
    tag: str
    dockerfile: list[Instruction]
    base_from: str
    stand_in: StandIn
    repos: dict[str, Path] = field(default_factory=dict)  # clone URL (no .git) -> local repo
    uvx_specs: list[str] = field(default_factory=list)  # what test.sh's uvx would install
    notes: list[str] = field(default_factory=list)


def parse_dockerfile(text: str) -> list[Instruction]:
    """Logical instructions; comments dropped, continuation lines kept as written."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        pending.append(line)
        if stripped.endswith("\\"):
            continue
        logical = "\n".join(pending)
        instructions.append(Instruction(logical.split(None, 1)[0].upper(), logical))
        pending = []
    if pending:
        logical = "\n".join(pending)
        instructions.append(Instruction(logical.split(None, 1)[0].upper(), logical))
    return instructions


def copy_sources(args: str) -> list[str]:
    """The sources of a COPY/ADD (its last word is the destination; --flags are not sources)."""
    text = args.replace("\\\n", " ").strip()
    if text.startswith("["):  # the JSON form: ["src", ..., "dest"]
        try:
            import json
            words = [str(w) for w in json.loads(text)]
        except ValueError:
            words = text.strip("[]").replace('"', " ").replace(",", " ").split()
    else:
        words = text.split()
    words = [w for w in words if not w.startswith("--")]
    return words[:-1]


def copies_whole_context(args: str) -> bool:
    """Whether a COPY/ADD copies the whole build context (`COPY . /app`), which would carry the
    rebuild's own files into the image; `COPY file .` copies one file into the WORKDIR."""
    return any(posixpath.normpath(source.rstrip("/") or "/") in (".", "/") or source in ("./", "*")
               for source in copy_sources(args))


def normalized_url(url: str) -> str:
    url = url.rstrip("/")
    return url[:-4] if url.endswith(".git") else url


def clone_urls(environment: Path) -> set[str]:
    """Every `git clone https://...` in the Dockerfile or a script of the build context."""
    found: set[str] = set()
    for path in environment.rglob("*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            text = path.read_text(encoding="utf-8", errors="replace")
            found |= {normalized_url(m) for m in CLONE_URL.findall(text)}
    return found


def uvx_specs(test_sh: Path) -> list[str]:
    """The packages `uvx -w X -w Y TOOL` in test.sh would install, TOOL included."""
    if not test_sh.is_file():
        return []
    text = test_sh.read_text(encoding="utf-8").replace("\\\n", " ")
    specs: list[str] = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True) if "uvx" in line else []
        if not words or words[0] != "uvx":
            continue
        rest = words[1:]
        with_specs: list[str] = []
        while rest and rest[0].startswith("-"):
            option = rest.pop(0)
            if option in ("-w", "--with") and rest:
                with_specs.append(rest.pop(0))
            elif option.startswith("--with="):
                with_specs.append(option.split("=", 1)[1])
            elif option in ("-p", "--python", "--from") and rest:
                rest.pop(0)
        tool = rest[0] if rest else ""
        named = [s for s in with_specs if re.split(r"[=<>!~\[ ]", s, maxsplit=1)[0] == tool]
        specs += with_specs + ([] if named or not tool else [tool])
    return list(dict.fromkeys(specs))


def published_without_procps(base_from: str) -> bool:
    """Whether the published base `base_from` lacks procps: the official `python:*-slim*` images."""
    name = base_from.split("@", 1)[0]
    repository, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
    return repository.removeprefix("docker.io/").removeprefix("library/") == "python" and "slim" in tag.split("-")


def base_prelude(plan: Plan, dockerfile_text: str, found_python: str = "") -> tuple[list[str], list[str]]:
    """Dockerfile lines standing in for the published base image, and the notes on what they make.
    `found_python` is what `python3 -V` printed in the base (when the engine was asked); without
    it the notes name the release's python3 by its minor version."""
    stand_in = plan.stand_in
    python = found_python or f"python3 {stand_in.python}"
    lines = [f"FROM {stand_in.image}", "ARG DEBIAN_FRONTEND=noninteractive"]
    notes = list(stand_in.deviations)
    if stand_in.ubuntu:
        notes.append(f"{plan.base_from} as published where a registry answers, else its stand-in (Ubuntu "
                     f"{stand_in.release}'s packages, debootstrap): nothing added to it (no python3, as published)")
        return lines, notes
    no_procps = published_without_procps(plan.base_from)
    # What the base has besides Python, as the published image has it.
    also = "python3-pytest, git, patch" + ("; " + NO_PROCPS_NOTE if no_procps else ", procps")
    if stand_in.python_build:
        # Python and pip in /usr/local/bin as in the official image: nothing to add but poetry.
        poetry = poetry_lines(dockerfile_text)
        lines += [*([f"RUN {PURGE_PROCPS}"] if no_procps else []), *poetry]
        version = found_python.removeprefix("Python ") or stand_in.python
        notes.append(f"{plan.base_from} -> {stand_in.image} (Debian {stand_in.release} + CPython {version} built "
                     f"from Debian's source package python{stand_in.python} (upstream tarball, Debian's patches not "
                     "applied), without PGO/LTO, in /usr/local with its pip and C headers, no venv"
                     + (", poetry from PyPI in its own venv at /opt/poetry, on PATH" if poetry else "")
                     + f"; the base also has {also})")
    elif stand_in.local_python is not None:
        lines += [*([f"RUN {PURGE_PROCPS}"] if no_procps else []),
                  *local_python.stand_in_lines(stand_in.local_python, f"{CONTEXT_DIR}/python", VENV),
                  *venv_path_lines(VENV), *poetry_lines(dockerfile_text)]
        notes.append(local_python.note(stand_in.local_python, plan.base_from, stand_in.image, VENV)
                     + (f"; {NO_PROCPS_NOTE}" if no_procps else ""))
    elif venv_prelude(plan):
        # Those bases give python3 + pip on PATH; Debian's python3 in a venv first on PATH does
        # the same without touching the system's packages. They also ship Python's C headers
        # (a test that builds an extension with setuptools needs Python.h): python3-dev.
        packages = "python3 python3-venv python3-pip python3-dev"
        # test.sh's uvx stand-in needs curl besides those: installed in this one apt step, so
        # that uvx_lines need not run apt again (an index fetch and a layer commit fewer).
        packages += " curl" if plan.uvx_specs else ""
        tools = ["pip"]
        lines += [
            # The venv in the apt step's layer: each step is a commit (seconds on fuse-overlayfs);
            # procps purged in it too, for a slim image.
            f"RUN . {BUILD_DIR}/net.sh; {PURGE_PROCPS + ' && ' if no_procps else ''}"
            f"apt-get update && apt-get install -y --no-install-recommends {packages} "
            f"&& rm -rf /var/lib/apt/lists/* && python3 -m venv {VENV}",
            *venv_path_lines(VENV),
        ]
        poetry = poetry_lines(dockerfile_text)
        tools += ["poetry"] if poetry else []
        lines += poetry
        notes.append(f"{plan.base_from} -> {stand_in.image} (Debian {stand_in.release}) + its {python} (with its C "
                     f"headers) in a venv at {VENV} (first on PATH), with {', '.join(tools)} from PyPI"
                     + (" (poetry in its own venv at /opt/poetry, on PATH)" if "poetry" in tools else "")
                     + (f"; {NO_PROCPS_NOTE}" if no_procps else ""))
    else:
        notes.append(f"{plan.base_from} -> {stand_in.image} (Debian {stand_in.release}; the base also has {python}, "
                     f"{also})")
    return lines, notes


def poetry_lines(dockerfile_text: str) -> list[str]:
    """poetry, when the Dockerfile calls it: the published base evidently has it (it is called
    without being installed). In a venv of its own: `poetry install` with virtualenvs.create=false
    installs into the running Python's environment, and doing so over poetry's own packages
    crashes it mid-install."""
    if not re.search(r"\bpoetry\b", dockerfile_text):
        return []
    return [f"RUN . {BUILD_DIR}/net.sh; python3 -m venv /opt/poetry && /opt/poetry/bin/pip install poetry "
            "&& ln -s /opt/poetry/bin/poetry /usr/local/bin/poetry"]


def probe_python(client: docker.DockerClient, image: str) -> str:
    """What `python3 -V` prints in `image` ("" when it cannot be run)."""
    try:
        output = client.containers.run(image, ["python3", "-V"], labels={LABEL: "1", "swe-residual": "1"},
                                       network_mode="none", remove=True, stdout=True, stderr=True)
    except docker.errors.DockerException:
        return ""
    return bytes(output).decode(errors="replace").strip()


def venv_path_lines(venv: str) -> list[str]:
    """`venv`'s bin first on PATH for every RUN step and container, login shells included: a
    Dockerfile's `RUN bash -lc ...` reads Debian's /etc/profile, which sets PATH anew (the
    published python:* base has its python in /usr/local/bin, on that PATH; the venv is not),
    then sources /etc/profile.d/*.sh, where the venv is put back first."""
    profile = [f'case ":$PATH:" in *":{venv}/bin:"*) ;; *) export PATH="{venv}/bin:$PATH" ;; esac',
               f'export VIRTUAL_ENV="{venv}"']
    return [f"ENV PATH={venv}/bin:$PATH VIRTUAL_ENV={venv}",
            "RUN printf '%s\\n' " + " ".join(shlex.quote(line) for line in profile)
            + " > /etc/profile.d/swe-residual-venv.sh"]


def uvx_lines(specs: list[str], debian_python: bool = True, apt_done: bool = False) -> list[str]:
    """The tools test.sh runs with `uvx`, preinstalled; the Pythons uv manages carry their C
    headers, so the stand-in's Python does too (python3-dev, for Debian's python3; a Python
    compiled into /usr/local has its headers and venv already). `apt_done`: the prelude's apt
    step installed these packages already (a venv stand-in: base_prelude)."""
    quoted = " ".join(shlex.quote(s) for s in specs)
    packages = "curl python3-venv python3-dev" if debian_python else "curl"
    apt = [] if apt_done else [
        f"RUN . {BUILD_DIR}/net.sh; apt-get update && apt-get install -y --no-install-recommends {packages} "
        "&& rm -rf /var/lib/apt/lists/*"]
    return [
        *apt,
        f"RUN . {BUILD_DIR}/net.sh; python3 -m venv {UVX_TOOLS} && {UVX_TOOLS}/bin/pip install {quoted} "
        f"&& install -m 0755 {BUILD_DIR}/uvx /usr/local/bin/uvx && mkdir -p /root/.local/bin "
        "&& touch /root/.local/bin/env",
    ]


def ubuntu_uvx_stage(specs: list[str]) -> list[str]:
    """For an Ubuntu base, which has no Python: a first build stage with the tools in a venv of
    CPython 3.13 (test.sh's `uvx -p 3.13`), compiled in /usr/local of its own image and copied to
    UVX_PYTHON, a folder off PATH, as uv keeps the Python it downloads."""
    quoted = " ".join(shlex.quote(s) for s in specs)
    return [f"FROM {UVX_PYTHON_IMAGE} AS {UVX_STAGE}", f"COPY {CONTEXT_DIR}/net/ {BUILD_DIR}/",
            f"RUN . {BUILD_DIR}/net.sh; cp -a /usr/local {UVX_PYTHON} && {UVX_PYTHON}/bin/python3 -m venv {UVX_TOOLS} "
            f"&& {UVX_TOOLS}/bin/pip install {quoted}"]


def ubuntu_uvx_lines() -> list[str]:
    """The first stage's Python and tools in the Ubuntu image, and the uvx stand-in. No curl:
    test.sh's own `apt-get install curl` runs at verification as published."""
    return [f"COPY --from={UVX_STAGE} {UVX_PYTHON} {UVX_PYTHON}", f"COPY --from={UVX_STAGE} {UVX_TOOLS} {UVX_TOOLS}",
            f"RUN install -m 0755 {BUILD_DIR}/uvx /usr/local/bin/uvx && mkdir -p /root/.local/bin "
            "&& touch /root/.local/bin/env"]


UVX_STANDIN = f"""#!/bin/sh
# Stand-in for uv's `uvx` (no network at verification time): the tools test.sh asks for were
# installed into {UVX_TOOLS} when the image was built; -p/--python and -w/--with are dropped.
# As uvx does, the tools' environment comes first on PATH (a test's `python3` is its Python).
while [ $# -gt 0 ]; do
  case "$1" in
    -p|--python|-w|--with|--from) shift 2 ;;
    --python=*|--with=*|--from=*|-q|--quiet|--offline|--no-cache) shift ;;
    *) break ;;
  esac
done
tool="$1"; shift
PATH="{UVX_TOOLS}/bin:$PATH"; export PATH
exec {UVX_TOOLS}/bin/"$tool" "$@"
"""


def net_script(has_ca: bool) -> str:
    lines = ["# Sourced by each RUN step of the rebuild: pip's index, then the local clones of GitHub repos."]
    lines.append(f"export PIP_CONFIG_FILE={BUILD_DIR}/pip.conf")
    if has_ca:
        for name in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
            lines.append(f"export {name}={BUILD_DIR}/ca.crt")
    lines.append(f"if [ -f {BUILD_DIR}/git/env.sh ]; then . {BUILD_DIR}/git/env.sh; fi")
    return "\n".join(lines) + "\n"


def git_script(repos: dict[str, Path]) -> str:
    lines = ["# git reads these URLs from the local mirrors next to this file."]
    # A submodule cloned from a local mirror goes through git's `file` transport, which git
    # refuses for submodules unless told (`transport 'file' not allowed`).
    pairs: list[tuple[str, str]] = [("protocol.file.allow", "always")]
    for index, url in enumerate(sorted(repos)):
        local = f"{BUILD_DIR}/git/{index}.git"
        # git uses the longest matching insteadOf, so both spellings of the URL are covered.
        pairs += [(f"url.{local}.insteadOf", url), (f"url.{local}.insteadOf", url + ".git")]
    if pairs:
        lines.append(f"export GIT_CONFIG_COUNT={len(pairs)}")
        for index, (key, value) in enumerate(pairs):
            lines.append(f"export GIT_CONFIG_KEY_{index}={shlex.quote(key)} GIT_CONFIG_VALUE_{index}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def fill_missing_blobs(mirror: Path, url: str, progress: Progress = log) -> list[str]:
    """Stand in for the blobs a fetched snapshot lacks (it keeps no file of 4 MiB or more).

    Without them `git clone` cannot check out and `git gc` cannot repack. Each missing object
    gets a loose object under its own id holding a short placeholder text (git does not re-hash
    objects it reads from a local repository), so the tree keeps its shape and every other file
    its real content. Only this temporary copy of the mirror is changed.
    """
    listed = subprocess.run(["git", "-C", str(mirror), "rev-list", "--objects", "--all", "--missing=print"],
                            capture_output=True, text=True, check=True).stdout
    missing = [line[1:].strip() for line in listed.splitlines() if line.startswith("?")]
    if not missing:
        return []
    paths: dict[str, str] = {}
    # Where they are: the commits that introduced them (raw diff lines `:mode mode old new M\tpath`).
    raw = subprocess.run(["git", "-C", str(mirror), "log", "--all", "--format=", "--raw", "--no-abbrev", "--no-renames"],
                         capture_output=True, text=True, check=True).stdout
    wanted = set(missing)
    for line in raw.splitlines():
        fields, _, path = line.partition("\t")
        parts = fields.split()
        if len(parts) >= 4 and parts[3] in wanted:
            paths.setdefault(parts[3], path)
    for oid in missing:
        content = (f"placeholder: {paths.get(oid, 'this file')} ({oid}) is missing from the local snapshot "
                   f"of {url}\n").encode()
        target = mirror / "objects" / oid[:2] / oid[2:]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(zlib.compress(b"blob %d\0" % len(content) + content))
    shown = ", ".join(sorted(set(paths.values()))[:5])
    progress(f"{len(missing)} object(s) missing from {url}'s snapshot, replaced by placeholder text: {shown}")
    return [f"{len(missing)} blob(s) missing from the fetched snapshot of {url} (files of 4 MiB or more) "
            f"hold a placeholder text instead: {shown}{' ...' if len(paths) > 5 else ''}"]


def pip_conf(settings: dict[str, str], has_ca: bool) -> str:
    config = configparser.ConfigParser()
    config["global"] = dict(settings)
    if has_ca:
        config["global"]["cert"] = f"{BUILD_DIR}/ca.crt"
    with tempfile.TemporaryFile("w+") as handle:
        config.write(handle)
        handle.seek(0)
        return handle.read()


def venv_prelude(plan: Plan) -> bool:
    """Whether base_prelude gives `plan` Debian's python3 in a venv: its one apt step then also
    installs what uvx_lines would install with apt (curl, python3-venv, python3-dev)."""
    stand_in = plan.stand_in
    return not stand_in.python_build and stand_in.local_python is None and stand_in.python_venv


def generated_dockerfile(plan: Plan, prelude: list[str]) -> str:
    out: list[str] = []
    seen_from = False
    # The build's own files serve RUN steps only: a Dockerfile with none gets none (each step
    # is a commit, seconds on fuse-overlayfs).
    # The purge of procps needs none of them.
    runs = any(instruction.keyword == "RUN" for instruction in plan.dockerfile) or plan.uvx_specs or plan.repos \
        or any(line.startswith("RUN ") and line != f"RUN {PURGE_PROCPS}" for line in prelude)
    ubuntu_uvx = bool(plan.stand_in.ubuntu and plan.uvx_specs)
    if ubuntu_uvx:
        out += ubuntu_uvx_stage(plan.uvx_specs)
    for instruction in plan.dockerfile:
        if instruction.keyword == "FROM":
            # The task-independent part first, so that its layers are shared by every rebuild.
            # Without RUN steps the prelude's ARG would be a step of its own, for nothing.
            out += [prelude[0], *([f"COPY {CONTEXT_DIR}/net/ {BUILD_DIR}/"] if runs else []),
                    *(line for line in prelude[1:] if runs or not line.startswith("ARG "))]
            if ubuntu_uvx:
                out += ubuntu_uvx_lines()
            elif plan.uvx_specs:
                out += uvx_lines(plan.uvx_specs, debian_python=not plan.stand_in.python_build,
                                 apt_done=venv_prelude(plan))
            if plan.repos:
                out.append(f"COPY {CONTEXT_DIR}/git/ {BUILD_DIR}/git/")
            seen_from = True
        elif instruction.keyword == "RUN" and not instruction.args.lstrip().startswith("["):
            # The published command, unchanged, after the build's network settings.
            out.append(f"RUN . {BUILD_DIR}/net.sh; " + instruction.text.split(None, 1)[1])
        elif seen_from or instruction.keyword == "ARG":
            out.append(instruction.text)
    if runs:  # before CMD/ENTRYPOINT is fine: RUN does not change WORKDIR or the command
        out.append(f"RUN rm -rf {BUILD_DIR}")
    return "\n".join(out) + "\n"


def make_plan(task_dir: Path, repo_args: list[str], release: str | None = None,
              python_home: Path | None = None) -> Plan:
    task = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    tag = (task.get("environment") or {}).get("docker_image")
    if not tag:
        raise RebuildError(f"{task_dir}/task.toml names no [environment] docker_image")
    environment = task_dir / "environment"
    text = (environment / "Dockerfile").read_text(encoding="utf-8")
    instructions = parse_dockerfile(text)
    froms = [i for i in instructions if i.keyword == "FROM"]
    if len(froms) != 1:
        raise RebuildError(f"{len(froms)} FROM lines; only single-stage Dockerfiles are handled")
    for instruction in instructions:
        if instruction.keyword in ("COPY", "ADD") and copies_whole_context(instruction.args):
            raise RebuildError("the Dockerfile copies the whole context, which would "
                             "include the rebuild's own files")
    repos: dict[str, Path] = {}
    upstream = (task.get("metadata") or {}).get("repository_url")
    for arg in repo_args:
        url, sep, path = arg.rpartition("=") if "=" in arg and "://" in arg.split("=", 1)[0] else ("", "", arg)
        url = normalized_url(url) if sep else (normalized_url(upstream) if upstream else "")
        if not url:
            raise RebuildError(f"--repo {arg}: give URL=PATH (the task names no repository_url)")
        repos[url] = Path(path).resolve()
        if not ((repos[url] / ".git").exists() or (repos[url] / "HEAD").is_file()):
            raise RebuildError(f"--repo {arg}: {repos[url]} is not a git repository (a work tree or a bare one)")
    missing = clone_urls(environment) - set(repos)
    if missing:
        raise RebuildError("the build clones " + ", ".join(sorted(missing)) +
                         " (unreachable here): bring it with the fetch tool and pass --repo URL=PATH")
    base_from = froms[0].args.split()[0]
    stand_in = stand_in_for(base_from, release)
    if python_home is not None:
        stand_in = with_local_python(stand_in, base_from, python_home)
    return Plan(task_dir, tag, instructions, base_from, stand_in, repos, uvx_specs(task_dir / "tests" / "test.sh"))


def with_local_python(stand_in: StandIn, base_from: str, python_home: Path) -> StandIn:
    """`stand_in` with the CPython installed at `python_home` as its Python, on the release's base."""
    if not (stand_in.python_venv or stand_in.python_build):
        raise RebuildError(f"--python-home: {base_from} gives no Python for one to stand in for")
    try:
        found = local_python.find_local_python(python_home)
    except local_python.LocalPythonError as exc:
        raise RebuildError(str(exc)) from None
    # Its deviation from the published Python is the prelude's note; the stand-in's other ones stay.
    kept = tuple(d for d in stand_in.deviations if "Python" not in d and "python3" not in d)
    return StandIn(stand_in.release, True, kept, local_python=found)


def prepare_context(plan: Plan, context: Path, found_python: str = "", progress: Progress = log) -> str:
    shutil.copytree(plan.task_dir / "environment", context, dirs_exist_ok=True)
    own = context / CONTEXT_DIR / "net"
    own.mkdir(parents=True)
    settings, bundle = host_pip_config()
    if bundle:
        shutil.copyfile(bundle, own / "ca.crt")
    progress(f"pip settings from the host: {', '.join(sorted(settings)) or 'none'}; "
        f"CA bundle: {'yes' if bundle else 'none (system certificates)'}")
    (own / "pip.conf").write_text(pip_conf(settings, bundle is not None), encoding="utf-8")
    (own / "net.sh").write_text(net_script(bundle is not None), encoding="utf-8")
    (own / "uvx").write_text(UVX_STANDIN, encoding="utf-8")
    git_dir = context / CONTEXT_DIR / "git"
    for index, url in enumerate(sorted(plan.repos)):
        progress(f"git clone {url} will read {plan.repos[url]}")
        mirror = git_dir / f"{index}.git"
        subprocess.run(["git", "clone", "--quiet", "--mirror", str(plan.repos[url]), str(mirror)], check=True)
        plan.notes += fill_missing_blobs(mirror, url, progress)
    if plan.repos:
        (git_dir / "env.sh").write_text(git_script(plan.repos), encoding="utf-8")
    if plan.stand_in.local_python is not None:
        progress(f"copying the CPython at {plan.stand_in.local_python.prefix} into the context")
        local_python.copy_installation(plan.stand_in.local_python, context / CONTEXT_DIR / "python")
    dockerfile_text = (plan.task_dir / "environment" / "Dockerfile").read_text(encoding="utf-8")
    prelude, notes = base_prelude(plan, dockerfile_text, found_python)
    plan.notes += notes
    if plan.uvx_specs and plan.stand_in.ubuntu:
        plan.notes.append(f"pre-installed what tests/test.sh's uvx downloads: CPython 3.13 ({UVX_PYTHON_IMAGE}'s, "
                          f"in {UVX_PYTHON}, off PATH), {', '.join(plan.uvx_specs)} (PyPI, in {UVX_TOOLS}), a uvx "
                          "stand-in at /usr/local/bin/uvx (drops -p/-w, runs the installed tool with its environment "
                          "first on PATH), an empty /root/.local/bin/env; not curl: test.sh installs it as published")
    elif plan.uvx_specs:
        plan.notes.append("pre-installed what tests/test.sh downloads: curl (Debian), "
                          f"{', '.join(plan.uvx_specs)} (PyPI, in {UVX_TOOLS}), a uvx stand-in at /usr/local/bin/uvx "
                          "(drops -p/-w, runs the installed tool), an empty /root/.local/bin/env")
    generated = generated_dockerfile(plan, prelude)
    (context / CONTEXT_DIR / "Dockerfile").write_text(generated, encoding="utf-8")
    return f"{CONTEXT_DIR}/Dockerfile"


# What a command prints when it failed, though its RUN step went on and exited 0 (a script
# without `set -e`, an `|| true`): git's and apt's and pip's error prefixes, the kernel's.
STEP_ERROR = re.compile(r"^(?:fatal|error): .*|^E: .*|^ERROR: .*|.*File name too long.*|.*transport '\w+' not allowed.*"
                        r"|.*: command not found$|.*No space left on device.*")
STEP_LINE = re.compile(r"^Step (\d+)/\d+ : (.*)$")
# Terminal colour and cursor sequences a step's tools print (curl's and apt's progress).
ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
TAIL_LINES, TAIL_CHARS = 30, 16_000


def output_tail(stream: str) -> str:
    """The last lines of a build's output as a person reads them: the engine streams some tools'
    output a character at a time, so lines are cut from the joined text, not per chunk, and
    colour sequences are dropped."""
    lines = [line.rstrip() for line in ESCAPE.sub("", stream).replace("\r\n", "\n").splitlines()]
    return "\n".join([line for line in lines if line][-TAIL_LINES:])


class StepWatch:
    """Reads the build's output as it streams: the error lines each RUN step printed."""

    def __init__(self) -> None:
        self.step = ""
        self.partial = ""
        self.errors: dict[str, list[str]] = {}

    def feed(self, text: str) -> None:
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self._line(line.rstrip("\r"))

    def _line(self, line: str) -> None:
        step = STEP_LINE.match(line)
        if step:
            self.step = f"step {step.group(1)} ({step.group(2)[:80]})"
        elif self.step.split("(", 1)[-1].startswith("RUN") and STEP_ERROR.match(line.strip()):
            self.errors.setdefault(self.step, []).append(line.strip()[:200])

    def deviations(self) -> list[str]:
        self.feed("\n")
        return [f"{step} exited 0 but printed {len(lines)} error line(s), so the image may lack what it makes: "
                + " | ".join(lines[:3]) + (" ..." if len(lines) > 3 else "")
                for step, lines in self.errors.items()]


class StageImages:
    """Reads the build's output as it streams: the image each stage but the last ended with."""

    STEP_ID = re.compile(r"^ ---> ([0-9a-f]{12,64})$")

    def __init__(self) -> None:
        self.partial = ""
        self.last_id = ""
        self.steps = 0
        self.ended: list[str] = []

    def feed(self, text: str) -> None:
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            step = STEP_LINE.match(line.rstrip("\r"))
            if step and step.group(2).upper().startswith("FROM ") and self.steps and self.last_id:
                self.ended.append(self.last_id)
            if step:
                self.steps += 1
            found = self.STEP_ID.match(line.rstrip("\r"))
            if found:
                self.last_id = found.group(1)

    def finished_stages(self) -> list[str]:
        return list(self.ended)


def label_instruction(labels: dict[str, str]) -> str:
    """All `labels` as one LABEL instruction. The classic builder turns the API's `labels` into
    one step per label (a container and a commit each, seconds on fuse-overlayfs): one line is one step."""
    return "LABEL " + " ".join(f"{key}={json.dumps(value)}" for key, value in labels.items())


def stand_in_how(plan: Plan) -> str:
    """How the image stands in for the published one, in a sentence (the stand-in label's)."""
    stand_in = plan.stand_in
    deviations = [*stand_in.deviations, *([local_python.note(stand_in.local_python, plan.base_from, stand_in.image, VENV)]
                                          if stand_in.local_python else [])]
    if stand_in.ubuntu:  # the FROM stays: the published base, or its own stand-in
        return (f"the task's environment/Dockerfile on {stand_in.image} as the engine has it (pulled, else its "
                f"stand-in from Ubuntu {stand_in.release}'s packages), nothing added but test.sh's uvx tools")
    return (f"the task's environment/Dockerfile with FROM {plan.base_from} replaced by {stand_in.image}"
            + (f"; {'; '.join(deviations)}" if deviations else ""))


def image_labels(plan: Plan, found_python: str) -> dict[str, str]:
    """What the image records of its rebuild: the task, the stand-in base and its Python, and
    that it stands in for the task's published image (the base's own stand-in label, inherited
    through FROM, would otherwise say it stands in for the base's public image)."""
    local = plan.stand_in.local_python
    return {STAND_IN_LABEL: plan.tag, STAND_IN_HOW_LABEL: stand_in_how(plan)[:1000],
            LABEL: "1", f"{LABEL}.task": plan.task_dir.name, f"{LABEL}.base": plan.stand_in.image,
            f"{LABEL}.python": local.version if local else found_python.removeprefix("Python ") or plan.stand_in.python,
            **({f"{LABEL}.python-home": local.prefix} if local else {})}


def build(client: docker.DockerClient, plan: Plan, context: Path, dockerfile: str, found_python: str, *,
          extra_labels: dict[str, str] | None = None, output: Callable[[str], None] | None = None,
          progress: Progress = log) -> str:
    """Build the generated Dockerfile under the task's tag; `output` receives the build's text."""
    previous = None
    try:
        previous = client.images.get(plan.tag).id
    except docker.errors.ImageNotFound:
        pass
    image_id = ""
    watch = StepWatch()
    streamed = ""  # the output's last characters, for the error's tail
    with (context / dockerfile).open("a", encoding="utf-8") as generated:
        generated.write(label_instruction({**image_labels(plan, found_python), **(extra_labels or {})}) + "\n")
    stages = StageImages()
    for chunk in client.api.build(path=str(context), dockerfile=dockerfile, tag=plan.tag, rm=True, forcerm=True,
                                  decode=True):
        if "stream" in chunk:
            if output is not None:
                output(chunk["stream"])
            streamed = (streamed + str(chunk["stream"]))[-TAIL_CHARS:]
            watch.feed(chunk["stream"])
            stages.feed(chunk["stream"])
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            raise RebuildError(f"build failed: {ESCAPE.sub('', chunk['error']).strip()}\n" + output_tail(streamed))
    for note in watch.deviations():
        plan.notes.append(note)
        progress(f"deviation: {note}")
    for stage_id in stages.finished_stages():
        # An earlier stage's image (the uvx tools' stage) is left untagged by the classic builder.
        remove_if_untagged(client, stage_id)
    if previous and previous != image_id:
        # The replaced image would be left dangling.
        try:
            client.images.remove(previous)
        except docker.errors.APIError:
            pass
    return image_id


def rebuild_image(client: docker.DockerClient, plan: Plan, *, extra_labels: dict[str, str] | None = None,
                  output: Callable[[str], None] | None = None, progress: Progress = log, probe: bool = True) -> str:
    """Build `plan` on its stand-in base, which must be on the engine; returns the image id.
    The plan's notes (its deviations) are said through `progress` and kept in `plan.notes`;
    `probe` asks the base its python3's version for them (one container)."""
    base = plan.stand_in.image
    try:
        client.images.get(base)
    except docker.errors.ImageNotFound:
        raise RebuildError(f"{base} is missing: build it with `{plan.stand_in.build_command}`") from None
    if plan.stand_in.ubuntu and plan.uvx_specs:
        try:
            client.images.get(UVX_PYTHON_IMAGE)
        except docker.errors.ImageNotFound:
            raise RebuildError(f"{UVX_PYTHON_IMAGE} (test.sh's uvx Python) is missing: build it with `swe-residual "
                               f"build-base --release {UVX_PYTHON_RELEASE} --python {UVX_PYTHON_VERSION}`") from None
    found_python = probe_python(client, base) if probe and not plan.stand_in.ubuntu else ""
    if found_python and plan.stand_in.local_python is None and not found_python.startswith(f"Python {plan.stand_in.python}."):
        expected = "" if plan.stand_in.python_build else f" of Debian {plan.stand_in.release}"
        plan.notes.append(f"{base}'s python3 is {found_python}, not the {plan.stand_in.python} expected{expected}")
    with tempfile.TemporaryDirectory(prefix="rebuild-task-") as tmp:
        context = Path(tmp) / "context"
        dockerfile = prepare_context(plan, context, found_python, progress)
        progress(f"building {plan.tag} for {plan.task_dir.name} FROM {base}")
        for note in plan.notes:
            progress(f"deviation: {note}")
        return build(client, plan, context, dockerfile, found_python, extra_labels=extra_labels, output=output,
                     progress=progress)

"""Machine track: the verifier's toolchain is the clean image's, or the verdict is tampering (issue 48).

On the machine track test.sh runs in the agent's machine, with what the agent left there. A
`python3` put earlier on the PATH can run the real pytest and then write the channel, the JUnit
file and the reward it likes. So before the verifier runs, what test.sh will call is compared,
through the engine's archive API (nothing in the container answers), with a never-started
container of the clean image:

- the commands the suite and test.sh start by name (`TOOL_NAMES`, and every `pythonX.Y` test.sh
  names), resolved along the container's configured PATH (as the engine reports it): the first
  match must sit where the clean image's does, and its bytes (links followed) must be the same;
- pytest itself: the `_pytest`, `pytest` and `pluggy` packages next to each interpreter checked
  (its prefix's site-packages and dist-packages): every file of the clean image's must be there
  with the same bytes, and no module may be added (compiled `.pyc` files added by a run of
  pytest are not counted).

A difference is a tampering failure naming the file. What is not the toolchain, so an honest
agent may change it: any other package of site-packages (pip install), files outside these
paths, and a command the clean image does not have at all (an agent installing `uv`); a name
found now where the clean image has none is not compared.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import posixpath
import re
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import docker

from swe_residual.environments.docker.archives import MODE_DIR, MODE_SYMLINK, ChunkReader, digest_files, path_stat
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, engine_errors, remove_containers
from swe_residual.environments.docker.exec import lost_or_failed
from swe_residual.environments.docker.hygiene import container_labels

# What the suite's own commands and a Python verifier start by name.
TOOL_NAMES = ("sh", "bash", "ls", "python3", "python", "pytest", "py.test")
PYTEST_PACKAGES = ("_pytest", "pytest", "pluggy")
_VERSIONED_PYTHON = re.compile(r"\bpython3\.\d+\b")
_INTERPRETER = re.compile(r"^python(\d(\.\d+)?)?$")


@dataclass(frozen=True)
class Resolved:
    """Where a name is first found on the PATH, the file it leads to, and that file's sha256."""

    entry: str
    real: str
    digest: str | None


@dataclass(frozen=True)
class Toolchain:
    commands: dict[str, Resolved]  # name -> where it resolves (absent: not on the PATH)
    packages: dict[str, dict[str, str]]  # package directory -> relative file -> sha256


def tool_names(test_sh: str) -> tuple[str, ...]:
    """The names checked for a task: TOOL_NAMES and the versioned interpreters its test.sh names."""
    return TOOL_NAMES + tuple(sorted(set(_VERSIONED_PYTHON.findall(test_sh)) - set(TOOL_NAMES)))


class _Reader:
    """Reads a container's files through the engine."""

    def __init__(self, client: docker.DockerClient, container_id: str) -> None:
        self.client, self.container_id = client, container_id

    def stat(self, path: str) -> dict | None:
        try:
            return path_stat(self.client, self.container_id, path)
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(self.client, self.container_id, exc, "reading the verifier's toolchain") from exc

    def follow(self, path: str) -> tuple[str, dict] | None:
        """`path` with its links followed, and its stat; None when it leads to nothing."""
        for _ in range(16):
            stat = self.stat(path)
            if stat is None:
                return None
            if not int(stat.get("mode", 0)) & MODE_SYMLINK:
                return path, stat
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), stat.get("linkTarget") or ""))
        return None

    def file_digest(self, path: str) -> str | None:
        try:
            chunks, _ = self.client.api.get_archive(self.container_id, path)
        except docker.errors.NotFound:
            return None
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(self.client, self.container_id, exc, "reading the verifier's toolchain") from exc
        reader = ChunkReader(chunks)
        try:
            with tarfile.open(fileobj=io.BufferedReader(reader, 1024 * 1024), mode="r|") as archive:
                for member in archive:
                    extracted = archive.extractfile(member) if member.isfile() else None
                    if extracted is None:
                        return None
                    digest = hashlib.sha256()
                    while block := extracted.read(1024 * 1024):
                        digest.update(block)
                    return digest.hexdigest()
        finally:
            reader.drain()
        return None

    def tree_digests(self, path: str) -> dict[str, str]:
        try:
            chunks, _ = self.client.api.get_archive(self.container_id, path)
        except docker.errors.NotFound:
            return {}
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(self.client, self.container_id, exc, "reading the verifier's toolchain") from exc
        return digest_files(chunks)


def read_toolchain(reader: _Reader, path_variable: str, names: tuple[str, ...],
                   package_dirs: tuple[str, ...] | None = None) -> Toolchain:
    """The toolchain as a container holds it. `package_dirs`: where to read pytest's packages
    (None: next to the interpreters found here)."""
    commands: dict[str, Resolved] = {}
    for name in names:
        for directory in [d for d in path_variable.split(":") if d.startswith("/")]:
            entry = posixpath.join(directory, name)
            found = reader.follow(entry)
            if found is None or int(found[1].get("mode", 0)) & MODE_DIR:
                continue
            commands[name] = Resolved(entry, found[0], reader.file_digest(found[0]))
            break
    if package_dirs is None:
        package_dirs = _package_dirs(reader, commands)
    packages = {directory: reader.tree_digests(directory) for directory in package_dirs}
    return Toolchain(commands, {directory: files for directory, files in packages.items() if files})


def _package_dirs(reader: _Reader, commands: dict[str, Resolved]) -> tuple[str, ...]:
    """pytest's package directories next to each interpreter: under its prefix (of the name on
    the PATH, a virtual environment's, and of the file it leads to), site- and dist-packages."""
    found: list[str] = []
    for name, resolved in commands.items():
        if not _INTERPRETER.match(name):
            continue
        version = posixpath.basename(resolved.real).removeprefix("python")
        versions = [f"python{version}"] if re.match(r"^\d\.\d+$", version) else []
        versions.append("python3")
        for binary in (resolved.entry, resolved.real):
            prefix = posixpath.dirname(posixpath.dirname(binary))
            for lib in versions:
                for kind in ("site-packages", "dist-packages"):
                    for package in PYTEST_PACKAGES:
                        directory = posixpath.join(prefix, "lib", lib, kind, package)
                        if directory not in found and (stat := reader.stat(directory)) is not None \
                                and int(stat.get("mode", 0)) & MODE_DIR:
                            found.append(directory)
    return tuple(found)


_REFERENCES: dict[tuple[str, str, tuple[str, ...]], Toolchain] = {}
_GUARD = threading.Lock()


def clean_toolchain(client: docker.DockerClient, image: str, path_variable: str, names: tuple[str, ...],
                    labels: dict[str, str]) -> Toolchain:
    """The clean image's toolchain, read once per image, PATH and names in this process."""
    key = (image, path_variable, names)
    with _GUARD:
        if key in _REFERENCES:
            return _REFERENCES[key]
    with _created(client, image, labels) as container_id:
        reference = read_toolchain(_Reader(client, container_id), path_variable, names)
    with _GUARD:
        _REFERENCES[key] = reference
    return reference


def toolchain_changes(reference: Toolchain, now: Toolchain) -> list[str]:
    """What of the toolchain is not the clean image's, one line per file."""
    changes: list[str] = []
    for name, clean in reference.commands.items():
        found = now.commands.get(name)
        if found is None:
            continue  # gone: the verifier fails on it, the canary says whose failure that is
        if found.entry != clean.entry:
            changes.append(f"{found.entry} is the first {name} on the PATH (the clean image's: {clean.entry})")
        elif found.real != clean.real:
            changes.append(f"{found.entry} leads to {found.real} (the clean image's to {clean.real})")
        elif found.digest != clean.digest:
            changes.append(f"{found.real} ({name}) is not the clean image's")
    for directory, files in reference.packages.items():
        held = now.packages.get(directory, {})
        changed = sorted(name for name, digest in files.items() if held.get(name) != digest)
        added = sorted(name for name in held if name not in files and not name.endswith(".pyc"))
        changes += [f"{directory}/{name} is not the clean image's" for name in changed]
        changes += [f"{directory}/{name} was added" for name in added]
    changes += [f"{directory} was added (pytest's packages are the clean image's)"
                for directory in now.packages if directory not in reference.packages]
    return changes


def check_toolchain(client: docker.DockerClient, container_id: str, image: str, path_variable: str,
                    test_sh: str, labels: dict[str, str]) -> list[str]:
    """The toolchain's differences from the clean image's (empty: none)."""
    names = tool_names(test_sh)
    reference = clean_toolchain(client, image, path_variable, names, labels)
    reader = _Reader(client, container_id)
    now = read_toolchain(reader, path_variable, names, ())
    # pytest's packages where the clean image has them, and next to the interpreters found now
    # (a pytest placed ahead of the image's, on an interpreter's own path, is one more).
    directories = tuple(dict.fromkeys([*reference.packages, *_package_dirs(reader, now.commands)]))
    now = Toolchain(now.commands, read_toolchain(reader, "", (), directories).packages)
    return toolchain_changes(reference, now)


@contextlib.contextmanager
def _created(client: docker.DockerClient, image: str, labels: dict[str, str]) -> Iterator[str]:
    """A container of `image`, created and never started (its files can be read), then removed."""
    with engine_errors(f"creating a container of {image[:19]} to read its toolchain"):
        container_id = client.api.create_container(image, command=["true"], entrypoint=[], labels=labels,
                                                   network_disabled=True)["Id"]
    try:
        yield container_id
    finally:
        try:
            remove_containers(client, [container_id])
        except ENGINE_EXCEPTIONS:
            pass


def tool_labels(run_id: str, token: str) -> dict[str, str]:
    return container_labels("tools", "toolchain", run_id, token)

"""Tar archives in and out of containers (the engine's archive API), and the helpers around them.

Writing a file puts a one-file tar into its directory; reading one gets the tar of that path.
The engine sees the container's own file system, not the mounts it holds: a tmpfs (the
harness's scratch directory) is invisible to it, so paths under a container's tmpfs mounts go
through an exec instead (see DockerEnvironment).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import posixpath
import shutil
import tarfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import docker

# Go's os.FileMode bits the engine reports in a path's stat.
MODE_DIR = 1 << 31
MODE_SYMLINK = 1 << 27
_STAT_HEADER = "X-Docker-Container-Path-Stat"


def path_stat(client: docker.DockerClient, container_id: str, path: str) -> dict[str, Any] | None:
    """The engine's stat of a path in a container (name, size, mode, linkTarget), None if absent.

    A HEAD request of the archive endpoint: the stat without transferring the content.
    """
    url = client.api._url("/containers/{0}/archive", container_id)
    response = client.api.head(url, params={"path": path})
    try:
        if response.status_code == 404:
            # Tell a missing path from a missing container: the caller inspects the container.
            return None
        client.api._raise_for_status(response)
        stat: dict[str, Any] = json.loads(base64.b64decode(response.headers[_STAT_HEADER]))
        return stat
    finally:
        response.close()


def is_dir(stat: dict[str, Any]) -> bool:
    return bool(int(stat.get("mode", 0)) & MODE_DIR)


def file_archive(name: str, data: bytes, mode: int = 0o644) -> bytes:
    """A tar holding one regular file owned by root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        info.mtime = int(time.time())
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def directory_archive(root: Path) -> bytes:
    """A tar of a directory's contents, owned by root (the container's user)."""
    buffer = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(root.iterdir()):
            archive.add(path, arcname=path.name, filter=as_root)
    return buffer.getvalue()


def rooted_archive(entries: list[tuple[str, Path]], files: dict[str, bytes] | None = None) -> bytes:
    """A tar to extract at `/`: each host file or directory at its absolute container path, and
    each of `files` (absolute container path -> bytes), with their parent directories, owned by
    root. One request places them all, wherever they go."""
    buffer = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        parents: set[str] = set()

        def add_parents(name: str) -> None:
            parent = posixpath.dirname(name)
            while parent and parent not in parents:
                parents.add(parent)
                info = tarfile.TarInfo(parent)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                archive.addfile(info)
                parent = posixpath.dirname(parent)

        for container_path, host in entries:
            name = posixpath.normpath(container_path).lstrip("/")
            add_parents(name)
            archive.add(host, arcname=name, filter=as_root)
        for container_path, data in sorted((files or {}).items()):
            name = posixpath.normpath(container_path).lstrip("/")
            add_parents(name)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def files_archive(files: dict[str, bytes]) -> bytes:
    """A tar of named files (relative paths), owned by root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class ChunkReader(io.RawIOBase):
    """A readable file over an iterator of byte chunks (an archive streamed by the engine)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def drain(self) -> None:
        # An archive response left unread holds the container's lock on the engine and
        # blocks every later call on that container: always read it to its end.
        for _ in self._chunks:
            pass


def untar_files(chunks: Iterable[bytes], max_file_bytes: int | None, *, strip_top: bool = False) -> dict[str, bytes]:
    """Regular files of a streamed tar (relative path -> bytes); files over `max_file_bytes`
    are skipped without being held in memory.

    `strip_top`: the archive of a directory `d` names its members `d/...`; drop that part.
    """
    files: dict[str, bytes] = {}
    reader = ChunkReader(chunks)
    try:
        with tarfile.open(fileobj=io.BufferedReader(reader, 1024 * 1024), mode="r|") as archive:
            for member in archive:
                if not member.isfile() or (max_file_bytes is not None and member.size > max_file_bytes):
                    continue
                name = member.name
                if strip_top:
                    name = name.split("/", 1)[1] if "/" in name else posixpath.basename(name)
                extracted = archive.extractfile(member)
                if extracted is not None:
                    files[posixpath.normpath(name)] = extracted.read()
    finally:
        reader.drain()
    return files


def extract_tree(chunks: Iterable[bytes], target: Path, *, skip_git: bool, max_file_bytes: int | None) -> list[str]:
    """Write a streamed tar of a directory `d` (members `d/...`) below `target`, as a work tree
    for the harness's git: directories, regular files (executable bit kept, readable by us),
    symbolic links (their text kept, never followed) and hard links (as copies). Devices, fifos
    and sockets are left out (git has no place for them), and with `skip_git` so is the top-level
    `.git`. Nothing is written outside `target`. Returns the files left out for their size."""
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    too_big: list[str] = []
    reader = ChunkReader(chunks)

    def local(name: str) -> Path | None:
        parts = posixpath.normpath(name).split("/", 1)
        if len(parts) < 2 or parts[1] == ".." or parts[1].startswith("../"):
            return None
        if skip_git and (parts[1] == ".git" or parts[1].startswith(".git/")):
            return None
        path = root / parts[1]
        # A member below a symbolic link extracted earlier would land outside: never written.
        return path if path.parent.resolve().is_relative_to(root) else None

    try:
        with tarfile.open(fileobj=io.BufferedReader(reader, 1024 * 1024), mode="r|") as archive:
            for member in archive:
                path = local(member.name)
                if path is None:
                    continue
                if member.isdir():
                    path.mkdir(parents=True, exist_ok=True)
                    path.chmod(0o755)
                    continue
                if not (member.isfile() or member.issym() or member.islnk()):
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.is_symlink() or path.is_file():
                    path.unlink()
                if member.issym():
                    os.symlink(member.linkname, path)
                elif member.islnk():
                    source = local(member.linkname)
                    if source is not None and source.is_file() and not source.is_symlink():
                        shutil.copyfile(source, path)
                        path.chmod(source.stat().st_mode & 0o777)
                elif max_file_bytes is not None and member.size > max_file_bytes:
                    too_big.append(member.name.split("/", 1)[-1])
                else:
                    extracted = archive.extractfile(member)
                    with open(path, "wb") as out:
                        if extracted is not None:
                            shutil.copyfileobj(extracted, out, 1024 * 1024)
                    path.chmod(0o755 if member.mode & 0o111 else 0o644)
    finally:
        reader.drain()
    return too_big


def digest_files(chunks: Iterable[bytes]) -> dict[str, str]:
    """sha256 of every regular file of a streamed tar of a directory `d` (members `d/...`),
    by path relative to `d`; symbolic links as `link:<target>`. Read as it streams, never held."""
    digests: dict[str, str] = {}
    reader = ChunkReader(chunks)
    try:
        with tarfile.open(fileobj=io.BufferedReader(reader, 1024 * 1024), mode="r|") as archive:
            for member in archive:
                parts = posixpath.normpath(member.name).split("/", 1)
                if len(parts) < 2:
                    continue
                if member.issym():
                    digests[parts[1]] = f"link:{member.linkname}"
                    continue
                if not member.isfile():
                    continue
                digest = hashlib.sha256()
                extracted = archive.extractfile(member)
                while extracted is not None and (block := extracted.read(1024 * 1024)):
                    digest.update(block)
                digests[parts[1]] = digest.hexdigest()
    finally:
        reader.drain()
    return digests

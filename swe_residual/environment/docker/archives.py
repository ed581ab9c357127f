"""Tar archives in and out of containers (the engine's archive API), and the helpers around them.

Writing a file puts a one-file tar into its directory; reading one gets the tar of that path.
The engine sees the container's own file system, not the mounts it holds: a tmpfs (the
harness's scratch directory) is invisible to it, so paths under a container's tmpfs mounts go
through an exec instead (see DockerEnvironment).
"""

from __future__ import annotations

import base64
import io
import json
import posixpath
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


def rooted_archive(entries: list[tuple[str, Path]]) -> bytes:
    """A tar to extract at `/`: each host file or directory at its absolute container path, with
    its parent directories, owned by root. One request places them all, wherever they go."""
    buffer = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        parents: set[str] = set()
        for container_path, host in entries:
            name = posixpath.normpath(container_path).lstrip("/")
            parent = posixpath.dirname(name)
            while parent and parent not in parents:
                parents.add(parent)
                info = tarfile.TarInfo(parent)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                archive.addfile(info)
                parent = posixpath.dirname(parent)
            archive.add(host, arcname=name, filter=as_root)
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

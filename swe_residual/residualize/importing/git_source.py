"""Files of a fetched git repository at one commit, read without a work tree.

A published dataset is rebuilt from the repositories it came from (the tasks' and the runs'):
each file is read with `git cat-file` from the commit the manifest names, so a bare clone, a
clone whose checkout failed (a snapshot that lacks some large blobs) or a repository checked out
at another commit all give the same bytes. The content checksum of a folder is SHA-256 over its
sorted `path NUL sha256(content) LF` lines, paths relative to the folder, so it names the content
whatever the repository's history.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from swe_residual.dataset.errors import ConfigError


@dataclass(frozen=True)
class TreeFile:
    path: str  # relative to the folder asked for
    mode: str  # git's: 100644, 100755, 120000
    blob: str


def _git(repo: Path, *args: str, data: bool = False) -> bytes:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise ConfigError(f"{repo}: git {' '.join(args)}: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def has_commit(repo: Path, commit: str) -> bool:
    result = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                            capture_output=True, check=False)
    return result.returncode == 0


def tree_files(repo: Path, commit: str, folder: str) -> list[TreeFile]:
    """Every file below `folder` at `commit` (sorted by path); an empty list when there is none."""
    listing = _git(repo, "ls-tree", "-r", "-z", commit, "--", folder.rstrip("/") + "/")
    files = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, _, name = item.decode("utf-8", errors="surrogateescape").partition("\t")
        mode, kind, blob = meta.split()
        if kind != "blob":
            continue  # a submodule: not part of the folder's files
        files.append(TreeFile(name[len(folder.rstrip("/")) + 1:], mode, blob))
    return sorted(files, key=lambda f: f.path)


def read_blob(repo: Path, blob: str) -> bytes:
    return _git(repo, "cat-file", "blob", blob, data=True)


def read_file(repo: Path, commit: str, path: str) -> bytes:
    return _git(repo, "cat-file", "blob", f"{commit}:{path}", data=True)


def folder_checksum(contents: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for path in sorted(contents):
        digest.update(path.encode("utf-8", errors="surrogateescape") + b"\0"
                      + hashlib.sha256(contents[path]).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def read_folder(repo: Path, commit: str, folder: str) -> tuple[list[TreeFile], dict[str, bytes]]:
    """The folder's files and their bytes; a blob the repository lacks raises ConfigError."""
    files = tree_files(repo, commit, folder)
    if not files:
        raise ConfigError(f"{repo}: no files under {folder} at {commit[:12]}")
    return files, {f.path: read_blob(repo, f.blob) for f in files}


def write_folder(files: list[TreeFile], contents: dict[str, bytes], target: Path) -> None:
    for entry in files:
        path = target / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == "120000":
            path.symlink_to(contents[entry.path].decode("utf-8", errors="surrogateescape"))
            continue
        path.write_bytes(contents[entry.path])
        if entry.mode == "100755":
            path.chmod(0o755)

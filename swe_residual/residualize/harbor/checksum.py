"""Harbor's task checksum (`TrialResult.task_checksum`), computed here to tell which task a trial ran.

Harbor 0.25 writes into every trial's result.json the checksum of the task directory it ran
(`Task.checksum`): the `dirhash` protocol, SHA-256, over every file of the directory (symlinks
followed, directories without files left out), less `.harborignore` files and what their rules
exclude under `tests/` and `solution/`. The protocol, from dirhash's published specification:

    hash(file)      = sha256(file bytes)
    entry(file)     = "data:<hash(file)>" NUL "name:<file name>"
    entry(dir)      = "dirhash:<hash(dir)>" NUL "name:<dir name>"
    hash(dir)       = sha256(the sorted entries of its files and non-empty directories,
                             joined by NUL NUL, UTF-8)

The checksum is hash(task directory). `.harborignore` rules are gitignore patterns; a task
that has one under `tests/` or `solution/` cannot be checked here (None: its trials are
reported as unverifiable, never matched by a guess).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

IGNORE_FILE = ".harborignore"
SCOPES = ("tests", "solution")
MAX_DEPTH = 64


class Unverifiable(Exception):
    """Why a directory's Harbor checksum cannot be computed here."""


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _dir_hash(directory: Path, relative: tuple[str, ...], seen: frozenset[str], skip: frozenset[str]) -> str | None:
    """The directory's hash, or None when it holds no file (left out, as dirhash does)."""
    real = os.path.realpath(directory)
    if real in seen or len(relative) > MAX_DEPTH:
        raise Unverifiable(f"{directory}: a symbolic link cycle")
    seen = seen | {real}
    entries = []
    for child in sorted(directory.iterdir()):
        if child.name == IGNORE_FILE or (not relative and child.name in skip):
            continue
        if child.is_dir():  # follows symlinks, as dirhash does
            if relative + (child.name,) in {(scope,) for scope in SCOPES} and (child / IGNORE_FILE).exists():
                raise Unverifiable(f"{child / IGNORE_FILE}: .harborignore rules are not evaluated here")
            below = _dir_hash(child, relative + (child.name,), seen, skip)
            if below is not None:
                entries.append(f"dirhash:{below}\0name:{child.name}")
        elif child.is_file():
            entries.append(f"data:{_file_hash(child)}\0name:{child.name}")
    if not entries:
        return None
    return hashlib.sha256("\0\0".join(sorted(entries)).encode("utf-8")).hexdigest()


def task_checksum(directory: Path, *, without: tuple[str, ...] = ()) -> str:
    """Harbor's checksum of the task at `directory` (leaving out the top-level entries
    `without`, e.g. the suite's own `residual/`); Unverifiable when it cannot be computed."""
    try:
        found = _dir_hash(Path(directory), (), frozenset(), frozenset(without))
    except OSError as exc:
        raise Unverifiable(f"{directory}: {exc}") from exc
    if found is None:
        raise Unverifiable(f"{directory}: no file to hash")
    return found

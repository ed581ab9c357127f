"""What both backends share for their caches: where they live, and the content key of a directory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def default_cache_dir() -> Path:
    return Path(os.environ.get("SWE_RESIDUAL_CACHE", Path.home() / ".cache" / "swe-residual"))


def cache_dir_problem(path: Path) -> str | None:
    """Why this user cannot keep the suite's cache at `path` (None: it can). Every item takes its
    locks and keys there, so a cache another user made (root's, through a shared
    SWE_RESIDUAL_CACHE) would fail each item as infrastructure: said once, before any runs."""
    where = "SWE_RESIDUAL_CACHE" if "SWE_RESIDUAL_CACHE" in os.environ else "the default cache"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{where} {path} cannot be made by this user: {exc.strerror}; set SWE_RESIDUAL_CACHE to a " \
               "directory of this user's"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{where} {path} is not writable by this user (owner uid {path.stat().st_uid}, we are " \
               f"uid {os.getuid()}); set SWE_RESIDUAL_CACHE to a directory of this user's"
    return None


def tree_digest(root: Path) -> str:
    """Content hash of a directory (paths, modes, bytes), for cache keys."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        digest.update(os.fsencode(rel) + b"\0")  # a name's bytes, UTF-8 or not
        if path.is_symlink():
            digest.update(b"link:" + os.fsencode(os.readlink(path)))
        else:
            digest.update(oct(path.stat().st_mode & 0o111).encode())
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]

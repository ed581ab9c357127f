"""What a clean start holds beyond its base commit, recorded once per base.

A task's image may leave files in the working tree that the base commit does not hold: the
`*.egg-info/` that the Dockerfile's `pip install -e .` writes and `.gitignore` ignores, say.
They are the image's, not any agent's, so the captured patch (a record's `final_patch`, a
state's `changes.patch`) must not carry them, or a Residual State made from it could not be
applied to a fresh instance ("already exists"). The harness's git records the clean tree
once (environments/harness_git.py `record_clean_start`), in the cache directory beside the
base it belongs to (docker: per task image and base commit; local: per base repository), and
every capture of that base diffs against it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from swe_residual.environments.harness_git import CleanStartTree, record_clean_start

_NONE = "none"  # the clean tree is exactly the base commit: captures diff against the commit


def cached_clean_start(target: Path, base_git_dir: Path, base_commit: str,
                       clean_tree: Callable[[Path], Path]) -> CleanStartTree | None:
    """The clean start recorded in `target` (made once, under a lock shared by every process):
    `clean_tree(scratch)` gives the directory holding the clean working tree, `.git` aside."""
    if (target / "tree").is_file():
        return _read(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "tree").is_file():
            return _read(target)
        building = Path(tempfile.mkdtemp(prefix=f"{target.name[:24]}-", dir=target.parent))
        try:
            with tempfile.TemporaryDirectory(prefix="swe-residual-clean-start-") as scratch:
                recorded = record_clean_start(clean_tree(Path(scratch)), base_git_dir, base_commit, building / "store")
            paths = recorded.paths if recorded is not None else ()
            (building / "paths").write_bytes(b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths))
            (building / "tree").write_text(recorded.tree if recorded is not None else _NONE)
            shutil.rmtree(target, ignore_errors=True)
            building.rename(target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return _read(target)


def _read(target: Path) -> CleanStartTree | None:
    tree = (target / "tree").read_text().strip()
    if tree == _NONE:
        return None
    raw = (target / "paths").read_bytes()
    paths = tuple(p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p)
    return CleanStartTree(tree, target / "store" / "git" / "objects", paths)

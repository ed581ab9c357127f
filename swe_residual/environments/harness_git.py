"""The final state's patch, made by the harness's own `git` on the host (DESIGN §7).

Nothing of the agent's machine takes part: not its `git` (an agent can replace /usr/bin/git
or put a fake `git` first on the PATH), not its repository (it can corrupt `.git`, rewrite
its config or index), not its processes (stopped before). The backend hands over the final
working tree as a host directory (the local workspace itself; for docker, a copy exported
through the engine's archive API) and a trusted copy of the base repository's `.git` (the
cached base repository; for docker, exported once from the clean task image). A throwaway
repository borrows the base objects (`objects/info/alternates`), adds the whole tree
(untracked and ignored files too, `-f`) to its own index and diffs it against the base commit:
the same `git add -A -f . && git diff --cached --binary <base>` the patch always was, with
no configuration but ours (no system, global or repository config, no hooks).

`git` never adds a path named `.git`, so the agent's top-level repository is never part of
the patch; a nested repository is added as the gitlink git makes of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from swe_residual.errors import InfraError

CAPTURE_TIMEOUT_SEC = 300.0
# The configuration every capture runs with: the tree's bytes as they are, its modes and links.
_CONFIG = ("-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.fileMode=true",
           "-c", "core.symlinks=true", "-c", "core.quotePath=false", "-c", "core.hooksPath=/dev/null",
           "-c", "diff.noprefix=false", "-c", "diff.renames=false", "-c", "diff.external=",
           "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")


class CaptureFailed(Exception):
    """The harness's git could not read the final tree (an unreadable file the agent left, say):
    the attempt goes on without a patch, and the record says why. Engine failures while the tree
    is exported stay InfraError."""


def harness_git() -> str:
    """The harness's `git` (from the harness's own PATH, never an environment's)."""
    found = shutil.which("git")
    if found is None:
        raise InfraError("the harness needs git on its PATH to capture final states")
    return os.path.realpath(found)


def _git_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }


def tree_patch(worktree: Path, base_git_dir: Path, base_commit: str) -> str:
    """`git diff --cached --binary <base_commit>` of the whole of `worktree` (binary-safe text)."""
    git = harness_git()
    objects = (base_git_dir / "objects").resolve()
    if not objects.is_dir():
        raise InfraError(f"the base repository's objects are missing: {objects}")
    with tempfile.TemporaryDirectory(prefix="swe-residual-capture-") as scratch:
        root = Path(scratch)
        git_dir = root / "capture.git"
        env = _git_env(root)
        _run([git, "init", "-q", "--bare", str(git_dir)], env, root)
        (git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        base = [git, f"--git-dir={git_dir}", f"--work-tree={worktree}", *_CONFIG]
        _run([*base, "config", "core.bare", "false"], env, worktree)
        _run([*base, "add", "-A", "-f", "."], env, worktree)
        return _run([*base, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
                     base_commit], env, worktree)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=CAPTURE_TIMEOUT_SEC)
    except subprocess.TimeoutExpired as exc:
        raise CaptureFailed(f"`git {argv[-1]}` did not finish in {CAPTURE_TIMEOUT_SEC:g}s") from exc
    if done.returncode != 0:
        raise CaptureFailed(done.stderr.decode(errors="replace").strip()[-500:])
    return done.stdout.decode("utf-8", errors="surrogateescape")

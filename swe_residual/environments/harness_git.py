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

What the image itself put in the working tree and the base commit does not hold (an ignored
`pkg.egg-info/` from the Dockerfile's `pip install -e .`) is not the agent's: when the clean
start has such files, the diff is taken against the clean start's tree (the same `add -A -f`
of the clean tree, recorded once: environments/clean_start.py) instead of the base commit's, so
they appear only when the agent changed or removed them, and then as changes to the file the
fresh instance already has (the patch still applies there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from swe_residual.dataset.errors import InfraError

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


def tree_patch(worktree: Path, base_git_dir: Path, base_commit: str, clean_start: CleanStartTree | None = None) -> str:
    """`git diff --cached --binary <base_commit>` of the whole of `worktree` (binary-safe text);
    against `clean_start`'s tree instead when the clean start holds more than the base commit."""
    git = harness_git()
    objects = _base_objects(base_git_dir)
    stores = [objects] + ([clean_start.objects.resolve()] if clean_start is not None else [])
    with tempfile.TemporaryDirectory(prefix="swe-residual-capture-") as scratch:
        root = Path(scratch)
        base, env = _index_of(git, worktree, root, stores)
        against = clean_start.tree if clean_start is not None else base_commit
        return _run([*base, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
                     against], env, worktree)


@dataclass(frozen=True)
class CleanStartTree:
    """The tree of a clean start that holds more than its base commit, and the object store
    with what the base repository lacks of it (its new blobs and trees)."""

    tree: str
    objects: Path
    paths: tuple[str, ...]  # what differs from the base commit (added by the image, mostly)


def record_clean_start(clean_tree: Path, base_git_dir: Path, base_commit: str, store: Path) -> CleanStartTree | None:
    """`add -A -f` of the clean tree, as a capture does, kept in the bare repository `store`
    (created here); None when the clean tree is exactly the base commit (`store` then unused)."""
    git = harness_git()
    objects = _base_objects(base_git_dir)
    store.mkdir(parents=True, exist_ok=True)
    env = _git_env(store)
    git_dir = store / "git"
    _run([git, "init", "-q", "--bare", str(git_dir)], env, store)
    (git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    base = [git, f"--git-dir={git_dir}", f"--work-tree={clean_tree}", *_CONFIG]
    _run([*base, "config", "core.bare", "false"], env, clean_tree)
    _run([*base, "add", "-A", "-f", "."], env, clean_tree)
    listed = _run([*base, "diff", "--cached", "--name-only", "-z", "--no-renames", base_commit], env, clean_tree)
    paths = tuple(path for path in listed.split("\0") if path)
    if not paths:
        return None
    tree = _run([*base, "write-tree"], env, clean_tree).strip()
    return CleanStartTree(tree, git_dir / "objects", paths)


def _base_objects(base_git_dir: Path) -> Path:
    objects = (base_git_dir / "objects").resolve()
    if not objects.is_dir():
        raise InfraError(f"the base repository's objects are missing: {objects}")
    return objects


def _index_of(git: str, worktree: Path, root: Path, stores: list[Path]) -> tuple[list[str], dict[str, str]]:
    """A throwaway repository in `root` whose index holds all of `worktree` (`add -A -f`), with
    `stores` as its alternates; the git command prefix and environment to read it."""
    git_dir = root / "capture.git"
    env = _git_env(root)
    _empty_repository(git_dir, stores)
    base = [git, f"--git-dir={git_dir}", f"--work-tree={worktree}", *_CONFIG]
    _run([*base, "add", "-A", "-f", "."], env, worktree)
    return base, env


def _empty_repository(git_dir: Path, stores: list[Path]) -> None:
    """What `git init` makes, written directly: a capture runs once per item, and two git
    processes fewer are a tenth of a warm item's time. The layout (HEAD, objects/, refs/, a
    config of format version 0) is the one every git since 1.x recognises as a repository."""
    (git_dir / "objects" / "info").mkdir(parents=True)
    (git_dir / "refs" / "heads").mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/capture\n")
    (git_dir / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    (git_dir / "objects" / "info" / "alternates").write_text("".join(f"{store}\n" for store in stores))


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=CAPTURE_TIMEOUT_SEC)
    except subprocess.TimeoutExpired as exc:
        raise CaptureFailed(f"`git {argv[-1]}` did not finish in {CAPTURE_TIMEOUT_SEC:g}s") from exc
    if done.returncode != 0:
        raise CaptureFailed(done.stderr.decode(errors="replace").strip()[-500:])
    return done.stdout.decode("utf-8", errors="surrogateescape")

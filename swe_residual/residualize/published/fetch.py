"""`dataset build --fetch`: the repositories a manifest names, fetched at their commits into the cache.

Each repository gets one bare git repository under the suite's cache
(`~/.cache/swe-residual/sources/<owner>+<name>`, or `$SWE_RESIDUAL_CACHE/sources/...`), shared by
every source of the manifest naming it. A commit already there is not fetched again; a missing
one is fetched alone and shallow (`git fetch --depth 1 URL COMMIT`, which GitHub and any server
speaking git's protocol v2 allow), and when the server refuses a bare commit id (protocol v0
servers without `uploadpack.allowReachableSHA1InWant`) all its branches and tags are fetched in
full instead. The files are then read with `git cat-file` as from a clone made by hand
(git_source.py), so checksums are verified the same way.

git runs with the user's own configuration: a mirror or a proxy is reached with
`url.<base>.insteadOf` (in ~/.gitconfig, or GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n
for one command), credentials with git's credential helpers. It never prompts: a repository
asking for a password is an error, not a hang.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from swe_residual.dataset.errors import ConfigError
from swe_residual.environments.cache import default_cache_dir
from swe_residual.residualize.importing import git_source

SOURCES = "sources"
KEPT = "refs/swe-residual"  # one ref per commit a manifest named
# How many of git's last stderr lines name a failure (the rest is progress).
ANSWER_LINES = 4


def sources_cache(cache: Path | None = None) -> Path:
    return (cache or default_cache_dir()) / SOURCES


def clone_name(repository: str) -> str:
    """`https://github.com/owner/name(.git)` -> `owner+name`; any other URL or path: its last two parts."""
    path = urlsplit(repository).path if "://" in repository else repository.rpartition(":")[2]
    parts = [p for p in path.strip("/").removesuffix(".git").split("/") if p]
    if not parts:
        raise ConfigError(f"repository {repository!r}: no owner/name in it to name its copy in the cache")
    return "+".join(re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in parts[-2:])


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # No prompt for a username or password: a private or missing repository fails at once.
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, env=env)


def _answer(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    return " / ".join(lines[-ANSWER_LINES:]) or f"git exited with status {result.returncode}"


def _is_shallow(repo: Path) -> bool:
    return _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"


def fetch_commit(repository: str, commit: str, cache: Path | None = None) -> Path:
    """The cache's bare repository for `repository`, holding `commit` (fetched if missing)."""
    repo = sources_cache(cache) / clone_name(repository)
    if not (repo / "HEAD").is_file():
        repo.mkdir(parents=True, exist_ok=True)
        made = _git(repo, "init", "--bare", "-q")
        if made.returncode != 0:
            raise ConfigError(f"{repo}: git init: {_answer(made)}")
    if git_source.has_commit(repo, commit):
        return repo
    shallow = _git(repo, "fetch", "--quiet", "--no-tags", "--depth", "1", repository, commit)
    if shallow.returncode == 0 and git_source.has_commit(repo, commit):
        return _keep(repo, commit)
    # A server that refuses a bare commit id (or one unreachable: the full fetch says which):
    # every branch and tag, whole, then look for the commit among them.
    full = _git(repo, "fetch", "--quiet", "--no-tags", *(["--unshallow"] if _is_shallow(repo) else []),
                repository, "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
    if full.returncode != 0:
        raise ConfigError(f"{repository}: cannot be fetched: git says: {_answer(full)}")
    if not git_source.has_commit(repo, commit):
        raise ConfigError(f"{repository}: commit {commit} is not there (git says, asked for it alone: "
                          f"{_answer(shallow)}; none of its branches or tags holds it)")
    return _keep(repo, commit)


def _keep(repo: Path, commit: str) -> Path:
    """A ref on the commit: a commit fetched by its id alone is on no branch, and git's garbage
    collection (run by a later fetch) would otherwise delete it."""
    kept = _git(repo, "update-ref", f"{KEPT}/{commit}", commit)
    if kept.returncode != 0:
        raise ConfigError(f"{repo}: git update-ref: {_answer(kept)}")
    return repo


def fetch_sources(wanted: dict[str, tuple[str, str]], cache: Path | None = None,
                  progress: Callable[[str], None] = print) -> dict[str, Path]:
    """Each source NAME -> (repository, commit) fetched; NAME -> its bare repository in the cache."""
    fetched: dict[str, Path] = {}
    for name, (repository, commit) in wanted.items():
        repo = sources_cache(cache) / clone_name(repository)
        if (repo / "HEAD").is_file() and git_source.has_commit(repo, commit):
            progress(f"source {name}: {repository} at {commit[:12]} already in {repo}")
            fetched[name] = repo
            continue
        progress(f"source {name}: fetching {repository} at {commit[:12]} ...")
        started = time.monotonic()
        try:
            fetched[name] = fetch_commit(repository, commit, cache)
        except ConfigError as exc:
            raise ConfigError(f"source {name}: {exc}") from exc
        progress(f"source {name}: done in {time.monotonic() - started:.1f} s ({fetched[name]})")
    return fetched

"""`dataset build --fetch`: the repositories a manifest names, fetched at their commits into the cache.

Each repository gets one bare git repository under the suite's cache
(`~/.cache/swe-residual/sources/<owner>+<name>`, or `$SWE_RESIDUAL_CACHE/sources/...`), shared by
every source of the manifest naming it. A missing commit is fetched alone and shallow, with its
trees but not its files (`git fetch --depth 1 --filter=blob:none origin COMMIT`, which GitHub
allows); then the files under the paths the build reads (the task folders, trials and licence
it needs) are fetched in one request, and any other file git fetches by itself when it is read.
A commit fetched by an earlier run is kept by a ref (`refs/swe-residual/<commit>`) and asks no
server again. A server that refuses a bare commit id (git's protocol v0 without
`uploadpack.allowReachableSHA1InWant`) gets its branches and tags fetched whole instead; one
that ignores the filter sends the files at once. The files are then read with `git cat-file` as
from a clone made by hand (git_source.py), so checksums are verified the same way.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from swe_residual.dataset.errors import ConfigError
from swe_residual.environments.cache import default_cache_dir

SOURCES = "sources"
KEPT = "refs/swe-residual"  # one ref per commit a manifest named
# How many of git's last stderr lines name a failure (the rest is progress).
ANSWER_LINES = 4


def sources_cache(cache: Path | None = None) -> Path:
    return (cache or default_cache_dir()) / SOURCES


def clone_name(repository: str) -> str:
    """`https://github.com/owner/name(.git)` -> `owner+name`; any other URL or path: its last two parts."""
    path = urlsplit(repository).path if "://" in repository else repository.rpartition(":")[2]
    parts = [p for p in path.strip("/").removesuffix(".git").split("/") if p.strip(".")]  # no `..` out of the cache
    if not parts:
        raise ConfigError(f"repository {repository!r}: no owner/name in it to name its copy in the cache")
    return "+".join(re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in parts[-2:])


@dataclass(frozen=True)
class Wanted:
    """One source to fetch: its repository, its commit, and the paths the build reads there."""

    repository: str
    commit: str
    paths: tuple[str, ...]


def _git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # No prompt for a username or password: a private or missing repository fails at once. No
    # lazy fetch of a missing object by a command that only asks whether it is there.
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1")
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, env=env,
                          input=stdin)


def _answer(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    return " / ".join(lines[-ANSWER_LINES:]) or f"git exited with status {result.returncode}"


def _is_shallow(repo: Path) -> bool:
    return _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"


def _has_commit(repo: Path, commit: str) -> bool:
    return _git(repo, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


def _kept(repo: Path, commit: str) -> bool:
    """Fetched by an earlier run (its ref is there): asks no server."""
    return (repo / "HEAD").is_file() and bool(_git(repo, "for-each-ref", f"{KEPT}/{commit}").stdout.strip())


def _check(repo: Path, result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode != 0:
        raise ConfigError(f"{repo}: git {what}: {_answer(result)}")


def _repository(repository: str, cache: Path | None) -> Path:
    """The cache's bare repository for `repository`, its remote `origin` pointing there."""
    repo = sources_cache(cache) / clone_name(repository)
    if not (repo / "HEAD").is_file():
        repo.mkdir(parents=True, exist_ok=True)
        _check(repo, _git(repo, "init", "--bare", "-q"), "init")
    has_origin = _git(repo, "remote", "get-url", "origin").returncode == 0
    _check(repo, _git(repo, "remote", "set-url" if has_origin else "add", "origin", repository), "remote")
    return repo


def fetch_commit(repository: str, commit: str, cache: Path | None = None) -> Path:
    """The cache's bare repository for `repository`, holding `commit` (fetched if missing): the
    commit and its trees, not its files (`--filter=blob:none`, where the server allows it), which
    `prefetch` brings for the paths a build reads and git fetches by itself for any other read."""
    repo = _repository(repository, cache)
    if _kept(repo, commit):
        return repo
    shallow = _git(repo, "fetch", "--quiet", "--no-tags", "--filter=blob:none", "--depth", "1", "origin", commit)
    if shallow.returncode == 0 and _has_commit(repo, commit):
        return _keep(repo, commit)
    # A server that refuses a bare commit id (or one unreachable: the full fetch says which):
    # every branch and tag, whole, then look for the commit among them. Whole: such a server
    # refuses a file's id as well, so no file could be fetched later (the filter the first
    # attempt left in the repository's configuration is set aside).
    full = _git(repo, "-c", "remote.origin.partialclonefilter=", "fetch", "--quiet", "--no-tags",
                *(["--unshallow"] if _is_shallow(repo) else []),
                "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
    if full.returncode != 0:
        raise ConfigError(f"{repository}: cannot be fetched: git says: {_answer(full)}")
    if not _has_commit(repo, commit):
        raise ConfigError(f"{repository}: commit {commit} is not there (git says, asked for it alone: "
                          f"{_answer(shallow)}; none of its branches or tags holds it)")
    return _keep(repo, commit)


def _keep(repo: Path, commit: str) -> Path:
    """A ref on the commit: a commit fetched by its id alone is on no branch, and git's garbage
    collection (run by a later fetch) would otherwise delete it."""
    _check(repo, _git(repo, "update-ref", f"{KEPT}/{commit}", commit), "update-ref")
    return repo


def prefetch(repo: Path, commit: str, paths: tuple[str, ...]) -> int:
    """Fetch in one request the files under `paths` at `commit` the repository lacks (git would
    otherwise fetch each on its first read, one request a file); how many were fetched."""
    if not paths:
        return 0
    listing = _git(repo, "ls-tree", "-r", "-z", commit, "--", *paths)
    _check(repo, listing, "ls-tree")
    blobs = sorted({meta.split()[2] for meta, _, _ in (item.partition("\t") for item in listing.stdout.split("\0") if item)
                    if meta.split()[1] == "blob"})
    missing = _missing(repo, blobs)
    if not missing:
        return 0
    fetched = _git(repo, "-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags",
                   "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin", "origin",
                   stdin="".join(f"{blob}\n" for blob in missing))
    if fetched.returncode != 0:
        # A server that gives a branch's tip by its id but no file by its id (protocol v0 without
        # uploadpack.allowAnySHA1InWant): the commit again, this time with all its files.
        whole = _git(repo, "-c", "remote.origin.partialclonefilter=", "fetch", "--quiet", "--no-tags", "--refetch",
                     "--depth", "1", "origin", commit)
        if whole.returncode != 0 or _missing(repo, missing):
            raise ConfigError(f"{repo}: fetching {len(missing)} file(s) of {commit[:12]}: git says: "
                              f"{_answer(fetched)}; and for the whole commit: {_answer(whole)}")
    return len(missing)


def _missing(repo: Path, blobs: list[str]) -> list[str]:
    present = _git(repo, "cat-file", "--batch-check", stdin="".join(f"{blob}\n" for blob in blobs))
    return [line.split()[0] for line in present.stdout.splitlines() if line.endswith(" missing")]


def fetch_sources(wanted: dict[str, Wanted], cache: Path | None = None,
                  progress: Callable[[str], None] = print) -> dict[str, Path]:
    """Each source fetched, with the files under the paths it is read at; NAME -> its bare
    repository in the cache. A source whose commit and files are there already asks no server."""
    fetched: dict[str, Path] = {}
    for name, want in wanted.items():
        repo = sources_cache(cache) / clone_name(want.repository)
        started = time.monotonic()
        try:
            if _kept(repo, want.commit):
                files = prefetch(repo, want.commit, want.paths)
                progress(f"source {name}: {want.repository} at {want.commit[:12]} already in {repo}"
                         + (f" ({files} more file(s) fetched)" if files else ""))
            else:
                progress(f"source {name}: fetching {want.repository} at {want.commit[:12]} ...")
                repo = fetch_commit(want.repository, want.commit, cache)
                files = prefetch(repo, want.commit, want.paths)
                progress(f"source {name}: done in {time.monotonic() - started:.1f} s ({files} file(s); {repo})")
        except ConfigError as exc:
            raise ConfigError(f"source {name}: {exc}") from exc
        fetched[name] = repo
    return fetched

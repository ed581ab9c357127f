"""Reading a fix commit out of a real repository (GitPython): what it changed, split into the
project's source and its tests, the parent commit's tree, and diffs of any part of the fix.

Nothing here depends on the user's git configuration: diffs are made with every option that
shapes their bytes given explicitly, so the same commit always gives the same patches.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import git
from gitdb.exc import BadName, BadObject

from swe_residual.dataset.errors import ConfigError

# Pytest's default test module names: the changed test files the verifier runs.
TEST_MODULE_PREFIX, TEST_MODULE_SUFFIX = "test_", "_test.py"

# Options pinning every byte of `git diff` against configuration (diff.noprefix,
# diff.algorithm, diff.context, diff.renames, diff.relative, diff.orderFile, ...).
_DIFF_OPTIONS = (
    "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
    "--no-relative", "--diff-algorithm=myers", "--indent-heuristic", "-U3", "--inter-hunk-context=0",
    "--src-prefix=a/", "--dst-prefix=b/", "-O/dev/null",
)
_GIT_CONFIG = ("-c", "diff.suppressBlankEmpty=false", "-c", "core.quotePath=true")


@dataclass(frozen=True)
class ChangedPath:
    path: str
    status: str  # git's letter: A added, M modified, D deleted, T type changed
    is_test: bool

    @property
    def is_test_module(self) -> bool:
        """A test file pytest collects by default (and that the fix did not delete)."""
        name = PurePosixPath(self.path).name
        return (self.is_test and self.status != "D" and name.endswith(".py")
                and (name.startswith(TEST_MODULE_PREFIX) or name.endswith(TEST_MODULE_SUFFIX)))


@dataclass
class FixCommit:
    """One non-root commit of a repository, read through an open `git.Repo` (close it)."""

    repo: git.Repo = field(repr=False)
    location: Path  # the repository as given, made absolute
    sha: str
    parent_sha: str
    message: str
    date: str  # the fix's committer date, ISO 8601 with its offset
    changes: tuple[ChangedPath, ...]
    test_paths: tuple[str, ...]  # --tests, normalized

    @property
    def source_changes(self) -> list[ChangedPath]:
        return [change for change in self.changes if not change.is_test]

    @property
    def test_changes(self) -> list[ChangedPath]:
        return [change for change in self.changes if change.is_test]

    def diff(self, paths: list[str]) -> bytes:
        """The fix's diff (parent -> fix) restricted to `paths`; empty for no paths."""
        if not paths:
            return b""
        pathspecs = [f":(literal){path}" for path in paths]
        output = self.repo.git.execute(
            ["git", *_GIT_CONFIG, "diff", *_DIFF_OPTIONS, self.parent_sha, self.sha, "--", *pathspecs],
            stdout_as_string=False, strip_newline_in_stdout=False,
        )
        assert isinstance(output, bytes)
        return output

    def export_parent(self, target: Path) -> list[str]:
        """Write the parent commit's tree into `target` (blobs as stored, modes and symlinks
        kept); returns the submodules that could not be exported."""
        skipped = []
        for item in self.repo.commit(self.parent_sha).tree.traverse():
            if isinstance(item, git.Submodule):  # a gitlink: another repository's commit
                skipped.append(str(item.path))
            elif isinstance(item, git.Blob):
                _write_blob(target / str(item.path), item.data_stream.read(), item.mode)
        return skipped

    def write_fix_file(self, path: str, target: Path) -> None:
        """The fix's version of `path` at `target`, mode kept."""
        blob = self.repo.commit(self.sha).tree / path
        _write_blob(target, blob.data_stream.read(), blob.mode)

    def close(self) -> None:
        self.repo.close()


def _write_blob(target: Path, data: bytes, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(mode):
        os.symlink(data.decode("utf-8", errors="surrogateescape"), target)
        return
    target.write_bytes(data)
    target.chmod(0o755 if mode & 0o111 else 0o644)


def normalize_test_paths(paths: list[str]) -> tuple[str, ...]:
    """Repository-relative POSIX paths, without `./` or a trailing slash."""
    normalized = []
    for raw in paths:
        text = raw.replace("\\", "/").strip()
        if text.startswith("/"):
            raise ConfigError(f"--tests {raw}: give paths relative to the repository's root")
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise ConfigError(f"--tests {raw}: give paths inside the repository")
        normalized.append("/".join(parts))
    return tuple(dict.fromkeys(normalized))


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(root == "" or path == root or path.startswith(root + "/") for root in roots)


def _changed_paths(repo: git.Repo, parent: str, fix: str, test_paths: tuple[str, ...]) -> tuple[ChangedPath, ...]:
    output = repo.git.execute(
        ["git", "diff", "--name-status", "-z", "--no-renames", "--no-relative", "--no-ext-diff", parent, fix],
        stdout_as_string=False, strip_newline_in_stdout=False,
    )
    assert isinstance(output, bytes)
    fields = output.decode("utf-8", errors="surrogateescape").split("\0")
    changes = []
    for status, path in zip(fields[0::2], fields[1::2]):
        if status:
            changes.append(ChangedPath(path, status[0], _under(path, test_paths)))
    return tuple(sorted(changes, key=lambda change: change.path))


def open_fix(location: str | Path, fix: str, tests: list[str]) -> FixCommit:
    """Open the repository at `location` and read `fix`; ConfigError (exit 2) for a path that
    is no repository, a revision that names no commit, a root commit, or --tests matching
    nothing the fix changed."""
    location = Path(location).absolute()
    try:
        repo = git.Repo(location)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ConfigError(f"{location}: not a git repository") from None
    try:
        try:
            commit = repo.commit(fix)
        except (BadName, BadObject, ValueError, git.GitCommandError):
            raise ConfigError(f"{fix}: no such commit in {location}") from None
        if not commit.parents:
            raise ConfigError(f"{commit.hexsha}: a root commit has no parent to start from: "
                              "give a commit whose parent is the state before the fix")
        test_paths = normalize_test_paths(tests)
        changes = _changed_paths(repo, commit.parents[0].hexsha, commit.hexsha, test_paths)
        if not any(change.is_test for change in changes):
            raise ConfigError(f"--tests {' '.join(tests)}: matches none of the {len(changes)} file(s) "
                              f"{commit.hexsha[:12]} changes ({', '.join(c.path for c in changes[:5])})")
        if not any(not change.is_test for change in changes):
            raise ConfigError(f"{commit.hexsha[:12]} changes only files under --tests: no source change to "
                              "make the solution of")
        if not any(change.is_test_module for change in changes):
            raise ConfigError(f"{commit.hexsha[:12]} adds or changes no test module ({TEST_MODULE_PREFIX}*.py or "
                              f"*{TEST_MODULE_SUFFIX}) under --tests {' '.join(tests)}: nothing for the verifier "
                              "to run")
        message = commit.message if isinstance(commit.message, str) else commit.message.decode("utf-8", "replace")
        return FixCommit(repo=repo, location=location, sha=commit.hexsha, parent_sha=commit.parents[0].hexsha,
                         message=message, date=commit.committed_datetime.isoformat(), changes=changes,
                         test_paths=test_paths)
    except BaseException:
        repo.close()
        raise

"""`swe-residual import commit`: a fix commit of a real repository becomes a task (issue 14).

The repository is made here: `textstats`, a text-statistics package over two files, and a fix
commit that changes both (contractions are one word in words.py; an empty text's summary in
report.py no longer divides by zero) plus its tests (two test files extended, one added). The
import with --left-out must give a task every tool accepts (`validate`, `harbor lint`), that
the oracle solves and noop fails from every start, with one state per source file failing
exactly the tests that need that file, on the local backend and on the docker backend, and
the same bytes when imported again.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from harbortool import harbor  # noqa: F401 - the fixture: Harbor required under CI=true

from swe_residual.agents import resolve_agent
from swe_residual.environments.registry import make_backend
from swe_residual.cli.main import main
from swe_residual.dataset.load import TaskEntry, load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.local import LocalBackend, default_cache_dir
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

# Unique per run: the docker images named after the task are removed at the end.
TASK_ID = f"textstats-{secrets.token_hex(3)}"
FIX_DATE = "2024-03-02T11:30:00+01:00"

WORDS = '''\
"""Splitting text into words."""

import string


def words(text):
    """The words of `text`, lower-cased, without surrounding punctuation."""
    found = []
    for token in text.split():
        for piece in token.split("'"):
            piece = piece.strip(string.punctuation).lower()
            if piece:
                found.append(piece)
    return found
'''
WORDS_FIXED = '''\
"""Splitting text into words."""

import string


def words(text):
    """The words of `text`, lower-cased, without surrounding punctuation.

    Contractions stay one word: "don't" is one word, not "don" and "t".
    """
    found = []
    for token in text.split():
        word = token.strip(string.punctuation).lower()
        if word:
            found.append(word)
    return found
'''
REPORT = '''\
"""A summary of a text's words."""

from textstats.words import words


def summary(text):
    found = words(text)
    return {
        "words": len(found),
        "unique": len(set(found)),
        "average_length": sum(len(word) for word in found) / len(found),
    }
'''
REPORT_FIXED = '''\
"""A summary of a text's words."""

from textstats.words import words


def summary(text):
    found = words(text)
    average = sum(len(word) for word in found) / len(found) if found else 0.0
    return {"words": len(found), "unique": len(set(found)), "average_length": average}
'''
TEST_WORDS = '''\
from textstats.words import words


def test_splits_on_whitespace():
    assert words("one two\\tthree\\nfour") == ["one", "two", "three", "four"]


def test_strips_punctuation_and_case():
    assert words("Hello, World!") == ["hello", "world"]
'''
TEST_WORDS_ADDED = '''

def test_keeps_contractions():
    assert words("Don't stop") == ["don't", "stop"]
'''
TEST_REPORT = '''\
from textstats.report import summary


def test_counts():
    assert summary("a b a") == {"words": 3, "unique": 2, "average_length": 1.0}
'''
TEST_REPORT_ADDED = '''

def test_empty_text():
    assert summary("") == {"words": 0, "unique": 0, "average_length": 0.0}
'''
TEST_CONTRACTIONS = '''\
from textstats.report import summary
from textstats.words import words


def test_contraction_counts_once():
    assert summary("it's fine")["words"] == 2


def test_plain_words():
    assert words("plain words") == ["plain", "words"]
'''
CLI = "#!/usr/bin/env python3\nimport sys\n\nfrom textstats.report import summary\n\nprint(summary(sys.stdin.read()))\n"
MESSAGE = ("Count contractions as one word; summary of an empty text\n\n"
           "words() split \"don't\" in two, and summary(\"\") divided by zero.\n")

F2P = ["tests.test_contractions.test_contraction_counts_once", "tests.test_report.test_empty_text",
       "tests.test_words.test_keeps_contractions"]
P2P = ["tests.test_contractions.test_plain_words", "tests.test_report.test_counts",
       "tests.test_words.test_splits_on_whitespace", "tests.test_words.test_strips_punctuation_and_case"]
# Each state fails exactly the tests that need the file it leaves out.
LEFT_OUT = {
    "left-out-textstats-words-py": ("textstats/words.py", {"tests.test_contractions.test_contraction_counts_once",
                                                           "tests.test_words.test_keeps_contractions"}),
    "left-out-textstats-report-py": ("textstats/report.py", {"tests.test_report.test_empty_text"}),
}


def git(repo: Path, *args: str, date: str = FIX_DATE) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.org", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def make_source_repo(repo: Path) -> Path:
    """The base commit, then the fix: two source files and three test files."""
    repo.mkdir(parents=True)
    write(repo, {"textstats/__init__.py": '"""Text statistics."""\n', "textstats/words.py": WORDS,
                 "textstats/report.py": REPORT, "bin/textstats": CLI, ".gitignore": "__pycache__/\n",
                 "tests/test_words.py": TEST_WORDS, "tests/test_report.py": TEST_REPORT})
    (repo / "bin" / "textstats").chmod(0o755)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "textstats: words and summary", date="2024-03-01T10:00:00+01:00")
    write(repo, {"textstats/words.py": WORDS_FIXED, "textstats/report.py": REPORT_FIXED,
                 "tests/test_words.py": TEST_WORDS + TEST_WORDS_ADDED,
                 "tests/test_report.py": TEST_REPORT + TEST_REPORT_ADDED,
                 "tests/test_contractions.py": TEST_CONTRACTIONS})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", MESSAGE)
    return repo


def swe_residual(*argv: str) -> tuple[int, str]:
    """The command line, in this process: (exit status, stdout + stderr)."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(list(argv))
    return code, output.getvalue()


def import_into(source: Path, out: Path, *extra: str) -> tuple[int, str]:
    return swe_residual("import", "commit", str(source), "main", "--tests", "tests/", "--out", str(out),
                        "--left-out", "--task-id", TASK_ID, *extra)


@pytest.fixture(scope="module")
def source_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_source_repo(tmp_path_factory.mktemp("source") / "textstats")


@pytest.fixture(scope="module")
def imported(source_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dataset")
    code, output = import_into(source_repo, out, "--backend", "local")
    assert code == 0, output
    yield out
    # The local backend's cached base repositories of this run's task.
    for path in (default_cache_dir() / "local").glob(f"{TASK_ID}-*"):
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def entry(dataset: Path) -> TaskEntry:
    loaded = load_dataset(dataset)
    assert not loaded.task_errors and len(loaded.entries) == 1
    assert not loaded.entries[0].state_errors
    return loaded.entries[0]


@pytest.mark.slow
def test_the_task_holds_the_base_the_solution_and_the_hidden_tests(imported: Path, source_repo: Path) -> None:
    task = imported / TASK_ID
    config = json.loads((task / "tests" / "config.json").read_text())
    assert (config["f2p_node_ids"], config["p2p_node_ids"]) == (F2P, P2P)
    assert config["test_files"] == ["tests/test_contractions.py", "tests/test_report.py", "tests/test_words.py"]
    repo = task / "environment" / "repo"
    # The base is the parent commit: its tests at their old version, the new test file absent.
    assert (repo / "textstats" / "words.py").read_text() == WORDS
    assert (repo / "tests" / "test_words.py").read_text() == TEST_WORDS
    assert not (repo / "tests" / "test_contractions.py").exists()
    assert os.access(repo / "bin" / "textstats", os.X_OK)
    overlay = task / "tests" / "overlay" / "tests"
    assert (overlay / "test_contractions.py").read_text() == TEST_CONTRACTIONS
    assert (overlay / "test_report.py").read_text() == TEST_REPORT + TEST_REPORT_ADDED
    solution = (task / "solution" / "solution.patch").read_text()
    assert [line for line in solution.splitlines() if line.startswith("diff --git")] == [
        "diff --git a/textstats/report.py b/textstats/report.py",
        "diff --git a/textstats/words.py b/textstats/words.py"]
    assert (task / "instruction.md").read_text() == MESSAGE
    metadata = tomllib.loads((task / "task.toml").read_text())["metadata"]
    fix = git(source_repo, "rev-parse", "main")
    assert metadata["base_commit_hash"] == config["base_commit"]
    assert (metadata["source_repo"], metadata["fix_commit"], metadata["fix_date"]) == (str(source_repo), fix, FIX_DATE)
    assert metadata["source_base_commit"] == git(source_repo, "rev-parse", "main~1")
    assert metadata["imported_by"] == f"swe-residual import commit {source_repo} {fix} --tests tests --left-out " \
                                      f"--task-id {TASK_ID}"
    assert sorted(path.name for path in (task / "residual").iterdir()) == sorted(LEFT_OUT)
    for state_id, (left_out, failing) in LEFT_OUT.items():
        state = tomllib.loads((task / "residual" / state_id / "state.toml").read_text())
        assert state["predecessor"] == "left-out" and state["patch"] == "changes.patch"
        provenance = state["provenance"]
        assert (provenance["left_out_file"], provenance["fix_commit"], provenance["date"]) == (left_out, fix, FIX_DATE)
        assert provenance["imported_by"] == metadata["imported_by"]
        assert state["validation"]["reward"] == 0.0
        assert {t for t, s in state["validation"]["tests"].items() if s != "passed"} == failing
        assert left_out not in (task / "residual" / state_id / "changes.patch").read_text()


@pytest.mark.slow
def test_validate_accepts_it(imported: Path) -> None:
    code, output = swe_residual("validate", str(imported))
    assert code == 0, output
    assert output.count("patch applies to the base") == len(LEFT_OUT)


@pytest.mark.slow
def test_harbor_lint_accepts_it(harbor: Path, imported: Path) -> None:  # noqa: F811 - the fixture
    done = subprocess.run([str(harbor), "lint", str(imported / TASK_ID)], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stdout + done.stderr


def check_every_start(dataset: Path, backend: Any, run_dir: Path) -> None:
    """Oracle solves and noop fails every start; each state fails exactly its file's tests."""
    task_entry = entry(dataset)
    task = task_entry.task
    options = RunOptions(run_id=f"import-{secrets.token_hex(3)}", run_dir=run_dir, infra_retries=0)
    for state in (None, *task_entry.states):
        label = "clean" if state is None else state.id
        solved = record_json(run_item(task, state, resolve_agent("oracle"), backend, options))
        assert (solved["outcome"], solved["reward"]) == ("success", 1.0), (label, solved.get("message"))
        assert set(solved["tests"].values()) == {"passed"}
        left = record_json(run_item(task, state, resolve_agent("noop"), backend, options))
        assert (left["outcome"], left["reward"]) == ("failure", 0.0), (label, left.get("message"))
        failing = {test for test, status in left["tests"].items() if status != "passed"}
        assert failing == (set(F2P) if state is None else LEFT_OUT[state.id][1]), label


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", ["local", pytest.param("docker", marks=requires_docker)])
def test_oracle_solves_and_noop_fails_every_start(imported: Path, tmp_path: Path, backend_name: str) -> None:
    """On both backends, the base commit is the one task.toml records, and every start holds."""
    task = entry(imported).task
    backend: Any
    if backend_name == "local":
        backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    else:
        backend = make_backend("docker", f"import-{secrets.token_hex(3)}")
        # Each state's snapshot is not verified on its own first: the noop run on it below is
        # that same check (the untouched state must fail), with its per-test statuses.
        backend.validate_state = None
    try:
        environment = backend.start(task, None, StartSpec("import-test", "base", 1))
        try:
            assert environment.base_commit == task.config.base_commit
        finally:
            environment.close()
        check_every_start(imported, backend, tmp_path / "run")
    finally:
        backend.close()
        if backend_name == "docker":
            from swe_residual.environments.docker import remove_cached_images

            remove_cached_images(TASK_ID)


@pytest.mark.slow
def test_importing_twice_gives_the_same_bytes(imported: Path, source_repo: Path, tmp_path: Path) -> None:
    code, output = import_into(source_repo, tmp_path / "again", "--backend", "local")
    assert code == 0, output

    def files(root: Path) -> dict[str, tuple[bytes, bool]]:
        return {path.relative_to(root).as_posix(): (path.read_bytes(), os.access(path, os.X_OK))
                for path in sorted(root.rglob("*")) if path.is_file()}

    first, second = files(imported), files(tmp_path / "again")
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []


def small_repo(repo: Path, base: dict[str, str], fix: dict[str, str]) -> Path:
    """A repository of two commits: `base`, then `fix` written over it."""
    repo.mkdir()
    write(repo, base)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    write(repo, fix)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fix")
    return repo


@pytest.fixture
def local_cache_cleanup() -> Iterator[list[str]]:
    """Task ids whose local-backend base repositories are removed afterwards."""
    task_ids: list[str] = []
    yield task_ids
    for task_id in task_ids:
        for path in (default_cache_dir() / "local").glob(f"{task_id}-*"):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


TEST_CALC = "from calc import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


@pytest.mark.slow
def test_a_state_that_passes_anyway_is_dropped(tmp_path: Path, local_cache_cleanup: list[str]) -> None:
    """helpers.py's change is needed by no test: the fix without it passes, so it is no state."""
    task_id = f"calc-{secrets.token_hex(3)}"
    local_cache_cleanup.append(task_id)
    repo = small_repo(tmp_path / "calc", {
        "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        "helpers.py": '"""Helpers."""\n', "tests/test_calc.py": TEST_CALC,
    }, {
        "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        "helpers.py": '"""Helpers of calc."""\n',
        "tests/test_calc.py": TEST_CALC + "\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    })
    out = tmp_path / "out"
    code, output = swe_residual("import", "commit", str(repo), "HEAD", "--tests", "tests", "--out", str(out),
                                "--left-out", "--task-id", task_id, "--backend", "local")
    assert code == 0, output
    assert "dropped left-out-helpers-py (leaves out helpers.py): the verifier passes on it anyway" in output
    assert sorted(path.name for path in (out / task_id / "residual").iterdir()) == ["left-out-calc-py"]
    config = json.loads((out / task_id / "tests" / "config.json").read_text())
    assert config["f2p_node_ids"] == ["tests.test_calc.test_add"]
    assert config["p2p_node_ids"] == ["tests.test_calc.test_mul"]


def test_nothing_failing_before_the_fix_is_no_task(tmp_path: Path, local_cache_cleanup: list[str]) -> None:
    local_cache_cleanup.append("calc-refactor")
    repo = small_repo(tmp_path / "calc", {
        "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_calc.py": TEST_CALC,
    }, {
        "calc.py": "def add(a, b):\n    return sum((a, b))\n\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_calc.py": TEST_CALC + "\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    })
    code, output = swe_residual("import", "commit", str(repo), "HEAD", "--tests", "tests", "--out",
                                str(tmp_path / "out"), "--task-id", "calc-refactor", "--backend", "local")
    assert code == 2
    assert "nothing to import" in output and "no test fails before the fix" in output
    assert not (tmp_path / "out" / "calc-refactor").exists()


def test_clear_errors_for_what_cannot_be_imported(source_repo: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    cases = [
        ((str(tmp_path), "HEAD", "--tests", "tests"), "not a git repository"),
        ((str(source_repo), "0123456789abcdef", "--tests", "tests"), "no such commit"),
        ((str(source_repo), "main~1", "--tests", "tests"), "a root commit has no parent"),
        ((str(source_repo), "main", "--tests", "spec", "docs"), "matches none of the 5 file(s)"),
        ((str(source_repo), "main", "--tests", "tests", "textstats"), "changes only files under --tests"),
        ((str(source_repo), "main", "--tests", "tests", "--instruction", os.devnull), "the request is empty"),
    ]
    for argv, message in cases:
        code, output = swe_residual("import", "commit", *argv, "--out", out, "--backend", "local")
        assert (code, message in output) == (2, True), (argv, output)
    assert not (tmp_path / "out").exists()

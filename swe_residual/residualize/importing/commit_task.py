"""Writing the Harbor task of a fix commit: the parent's tree as the base repository, the
fix's source changes as the solution, its test changes as hidden tests laid over the
repository at verification, and the provenance in task.toml.

The layout (docs/importing.md, "3. Fix commits"):

    <task>/task.toml                  [metadata]: repo_dir, base_commit_hash, provenance
    <task>/instruction.md             --instruction FILE, or the fix commit's message
    <task>/environment/Dockerfile     the template (kept when the task is imported again)
    <task>/environment/repo/          the parent commit's tree (hidden tests at their old version)
    <task>/solution/solution.patch    the fix minus its test files; solve.sh applies it
    <task>/tests/test.sh              the verifier (commit_templates.TEST_SH)
    <task>/tests/config.json          test modules to run, f2p/p2p ids, deleted test files
    <task>/tests/overlay/<path>       the fix's version of each test file it adds or changes
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.residualize.importing import commit_templates
from swe_residual.residualize.importing.commit_source import FixCommit
from swe_residual.dataset.values import Track

REPO_DIR = "environment/repo"
WORKDIR = "/app"
OVERLAY_DIR = "overlay"


@dataclass(frozen=True)
class TaskSpec:
    """What the user chose: the task's id, its request, and the command that imported it."""

    task_id: str
    instruction: str
    command: str


def toml_string(value: str) -> str:
    # JSON string escapes are TOML basic-string escapes (as swe_residual.residualize.tomlwrite).
    return json.dumps(value, ensure_ascii=False)


def base_commit_hash(repo_dir: Path) -> tuple[str, list[str]]:
    """The base commit both backends make of `repo_dir`, and the files it leaves out.

    Made by the local backend's own function on a copy, so it cannot drift from what the
    backends build; the docker template runs the same `git add -A` and commit. Files the
    repository's own .gitignore matches are not in that commit (git skips them there too).
    """
    import git

    from swe_residual.environments.local import _commit_base  # the backends' base commit, not a copy

    with tempfile.TemporaryDirectory(prefix="swe-residual-import-base-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(repo_dir, copy, symlinks=True)
        head = _commit_base(copy)
        with git.Repo(copy) as repo:
            committed = {str(item.path) for item in repo.commit(head).tree.traverse() if isinstance(item, git.Blob)}
    exported: set[str] = set()
    for directory, subdirs, files in os.walk(repo_dir):  # symlinked directories are not entered
        names = files + [name for name in subdirs if (Path(directory) / name).is_symlink()]
        exported.update((Path(directory) / name).relative_to(repo_dir).as_posix() for name in names)
    return head, sorted(exported - committed)


def default_instruction(fix: FixCommit) -> str:
    message = fix.message.strip()
    if not message:
        return f"Make the change of commit {fix.sha} (its message is empty: write the request here).\n"
    return message + "\n"


def user_plugins(task_dir: Path) -> list[str]:
    """config.json's `pytest_plugins` as the user left it (none when absent or unreadable)."""
    try:
        plugins = json.loads((task_dir / "tests" / "config.json").read_text(encoding="utf-8"))["pytest_plugins"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [name for name in plugins if isinstance(name, str)] if isinstance(plugins, list) else []


def write_config(task_dir: Path, fix: FixCommit, base_commit: str, f2p: list[str], p2p: list[str],
                 plugins: list[str] | None = None) -> None:
    """tests/config.json: what test.sh runs and what must pass (f2p/p2p as in the sample).

    `pytest_plugins` (module names, none by default) is the user's to fill: test.sh loads no
    installed plugin it does not name. Without `plugins`, the list already there is kept.
    """
    config_path = task_dir / "tests" / "config.json"
    if plugins is None:
        plugins = user_plugins(task_dir)
    config: dict[str, Any] = {
        "base_commit": base_commit,
        "f2p_node_ids": sorted(f2p),
        "p2p_node_ids": sorted(p2p),
        "grade": "junit",
        "test_files": [change.path for change in fix.test_changes if change.is_test_module],
        "deleted_test_files": [change.path for change in fix.test_changes if change.status == "D"],
        "pytest_plugins": plugins,
    }
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n",
                           encoding="utf-8")


def _metadata(fix: FixCommit, spec: TaskSpec, base_commit: str) -> str:
    subject = fix.message.strip().splitlines()[0] if fix.message.strip() else f"Fix commit {fix.sha[:12]}"
    fields = {
        "task_id": spec.task_id,
        "display_title": subject,
        "category": "bug_fix",
        "language": "python",
        "track": Track.REPO,
        "repo_dir": REPO_DIR,
        "workdir": WORKDIR,
        "base_commit_hash": base_commit,
        "source_repo": str(fix.location),
        "source_base_commit": fix.parent_sha,
        "fix_commit": fix.sha,
        "fix_date": fix.date,
        "imported_by": spec.command,
    }
    lines = [f"{key} = {toml_string(value)}" for key, value in fields.items()]
    lines.append("tests = [" + ", ".join(toml_string(path) for path in fix.test_paths) + "]")
    return "\n".join(lines)


def _write_executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def write_task(fix: FixCommit, spec: TaskSpec, task_dir: Path, progress: Any = print) -> str:
    """Write the whole task into `task_dir` (replaced; what the user set up there is kept: the
    Dockerfile with the project's dependencies, config.json's pytest_plugins); returns its
    base commit hash. config.json gets empty f2p/p2p lists: the caller measures them and
    writes them back."""
    dockerfile = task_dir / "environment" / "Dockerfile"
    kept = dockerfile.read_bytes() if dockerfile.is_file() else None
    plugins = user_plugins(task_dir)
    shutil.rmtree(task_dir, ignore_errors=True)
    repo_dir = task_dir / REPO_DIR
    repo_dir.mkdir(parents=True)
    for path in fix.export_parent(repo_dir):
        progress(f"warning: submodule {path} is not exported (the base repository lacks it)")
    base_commit, left_out = base_commit_hash(repo_dir)
    for path in left_out:
        progress(f"warning: {path} is tracked but matched by the repository's .gitignore: it is not in the "
                 "base commit, and changes to it are not graded")
    template = commit_templates.DOCKERFILE.encode("utf-8")
    if kept is not None and kept != template:
        progress(f"kept your {dockerfile}")
    dockerfile.write_bytes(kept if kept is not None else template)
    (task_dir / "instruction.md").write_text(spec.instruction, encoding="utf-8")
    solution = task_dir / "solution"
    solution.mkdir()
    (solution / "solution.patch").write_bytes(fix.diff([change.path for change in fix.source_changes]))
    _write_executable(solution / "solve.sh", commit_templates.SOLVE_SH)
    tests = task_dir / "tests"
    _write_executable(tests / "test.sh", commit_templates.TEST_SH)
    for change in fix.test_changes:
        if change.status != "D":
            fix.write_fix_file(change.path, tests / OVERLAY_DIR / change.path)
    write_config(task_dir, fix, base_commit, [], [], plugins)
    description = f"Imported from fix commit {fix.sha[:12]} of {fix.location.name}."
    (task_dir / "task.toml").write_text(commit_templates.TASK_TOML.format(
        name=toml_string(f"swe-residual-import/{spec.task_id}"), description=toml_string(description),
        metadata=_metadata(fix, spec, base_commit), base_commit=base_commit,
    ), encoding="utf-8")
    return base_commit

"""Writing one exported Harbor task directory: a Clean Start or a Residual State.

A Clean Start is the task as it is, minus what only the suite reads (`residual/`). A Residual
State is the same task whose environment/Dockerfile ends with the state's layers
(harbor/export_states.py). Two things change with it, each for a reason Harbor's model gives:

- `[environment] docker_image` is commented out (Harbor would start that prebuilt image and
  never build the Dockerfile); the Dockerfile starts FROM it instead.
- A separate verifier without an image of its own is built by Harbor from environment/, which
  now holds the state. The suite grades in the task's CLEAN image (the verifier applies the
  agent's whole diff against the base commit to it), so the export gives the verifier its own
  tests/Dockerfile: the original environment with the tests bundled at /tests, which is what
  Harbor expects of a tests/Dockerfile.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from swe_residual.residualize.harbor.export_states import PATCH_NAME, NotExportable, machine_layer, repo_layer
from swe_residual.residualize.harbor.export_toml import edit_task_toml, metadata_keys, read_toml_text
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.task import Task
from swe_residual.dataset.values import Track

SUITE_ONLY = ("residual",)  # the suite's states: not part of a Harbor task
# Caches a local run may have left in a task's directories: never part of what a task says.
IGNORED = shutil.ignore_patterns("__pycache__", ".pytest_cache")
IGNORED_NAMES = ("__pycache__", ".pytest_cache")
DOCKERIGNORE = ".dockerignore"


def _entries(directory: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name not in skip and p.name not in IGNORED_NAMES)


def copy_entry(source: Path, target: Path) -> None:
    """A file, symlink or directory, with its permission bits (test.sh stays executable)."""
    if source.is_symlink() or not source.is_dir():
        shutil.copy2(source, target, follow_symlinks=False)
    else:
        shutil.copytree(source, target, symlinks=True, ignore=IGNORED)


def copy_task(task: Task, target: Path, *, skip: tuple[str, ...] = ()) -> None:
    target.mkdir(parents=True)
    for entry in _entries(task.path, SUITE_ONLY + skip):
        copy_entry(entry, target / entry.name)


def _allow_in_dockerignore(path: Path, names: list[str]) -> None:
    """Re-include `names` after whatever a copied .dockerignore excludes (the last rule wins)."""
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    if text and not text.endswith("\n"):
        text += "\n"
    text += "# SWE-Residual export: files the layers below COPY\n"
    text += "".join(f"!{name}\n!{name}/**\n" for name in names)
    path.write_text(text, encoding="utf-8", errors="surrogateescape")


def base_dockerfile(task: Task) -> str:
    """What the task's environment is built from, as Dockerfile text ending in a newline."""
    if task.config.docker_image:
        return (f"# The task's prebuilt image ([environment] docker_image); it must exist where Harbor runs.\n"
                f"FROM {task.config.docker_image}\n")
    text = (task.environment_dir / "Dockerfile").read_text(encoding="utf-8", errors="surrogateescape")
    return text if text.endswith("\n") else text + "\n"


def needs_clean_verifier(task: Task) -> bool:
    """Whether Harbor would build this task's separate verifier from environment/ (Harbor's
    order: [verifier.environment] docker_image, then tests/Dockerfile or docker-compose.yaml,
    then the task's environment)."""
    if task.config.verifier_environment_mode != "separate":
        return False
    if task.config.verifier_environment is not None and task.config.verifier_environment.docker_image:
        return False
    return not any((task.tests_dir / name).is_file() for name in ("Dockerfile", "docker-compose.yaml"))


def write_clean_verifier(task: Task, tests_out: Path) -> None:
    """tests/Dockerfile building the task's clean environment with the tests at /tests."""
    tests = [entry.name for entry in _entries(task.tests_dir)]
    text = base_dockerfile(task)
    if not task.config.docker_image:
        context = _entries(task.environment_dir, ("Dockerfile",))
        clash = sorted({entry.name for entry in context} & set(tests))
        if clash:
            raise NotExportable(f"its separate verifier needs the clean environment beside the tests in tests/, and "
                                f"both have {clash[0]!r}")
        for entry in context:
            copy_entry(entry, tests_out / entry.name)
        _allow_in_dockerignore(tests_out / DOCKERIGNORE, tests)
    files = [name for name in tests if not (task.tests_dir / name).is_dir() or (task.tests_dir / name).is_symlink()]
    folders = [name for name in tests if name not in files]
    text += (
        "\n# --- SWE-Residual: the separate verifier's image ---\n"
        "# environment/ of this Residual Start holds the predecessor's changes; the verifier grades in\n"
        "# the task's CLEAN environment (the one above), with the tests bundled at /tests.\n"
    )
    if files:
        text += "COPY " + json.dumps([*files, "/tests/"], ensure_ascii=True) + "\n"
    for name in folders:  # one COPY each: a directory source copies its contents, not itself
        text += "COPY " + json.dumps([name, f"/tests/{name}"], ensure_ascii=True) + "\n"
    (tests_out / "Dockerfile").write_text(text, encoding="utf-8", errors="surrogateescape")


def write_clean(task: Task, target: Path, dataset: str) -> None:
    copy_task(task, target)
    toml = task.path / "task.toml"
    (target / "task.toml").write_text(
        edit_task_toml(toml, read_toml_text(toml), metadata=metadata_keys(task.id, dataset, None)), encoding="utf-8")


def residual_task_name(task: Task, state: ResidualState) -> str:
    # Harbor's names allow letters, digits, '.', '_' and '-' after the org's '/'.
    return f"{task.config.name}--{re.sub(r'[^A-Za-z0-9._-]', '-', state.id)}"


def write_residual(task: Task, state: ResidualState, target: Path, dataset: str) -> None:
    """The Residual Start as a task directory at `target`; NotExportable when it cannot be (the
    caller removes whatever was written by then)."""
    # Everything that can refuse comes before the first file is written.
    toml = task.path / "task.toml"
    toml_text = edit_task_toml(
        toml, read_toml_text(toml), metadata=metadata_keys(task.id, dataset, state),
        task_name=residual_task_name(task, state) if task.config.name else None,
        drop_docker_image=bool(task.config.docker_image),
    )
    if state.track == Track.REPO:
        layer, patch = repo_layer(task, state)
    else:
        layer, patch = machine_layer(task, state), None
    if not task.config.docker_image and (task.environment_dir / PATCH_NAME).exists():
        raise NotExportable(f"its environment/ already has a file named {PATCH_NAME}")
    dockerfile = base_dockerfile(task) + layer

    # A prebuilt image's environment/ is that image's build context, not the task's: the new
    # environment/ is the Dockerfile FROM the image and the patch.
    copy_task(task, target, skip=("environment",) if task.config.docker_image else ())
    environment = target / "environment"
    environment.mkdir(exist_ok=True)
    (environment / "Dockerfile").write_text(dockerfile, encoding="utf-8", errors="surrogateescape")
    if patch is not None:
        (environment / PATCH_NAME).write_bytes(patch)
        _allow_in_dockerignore(environment / DOCKERIGNORE, [PATCH_NAME])
    (target / "task.toml").write_text(toml_text, encoding="utf-8")
    if needs_clean_verifier(task):
        write_clean_verifier(task, target / "tests")

"""Residual States: `residual/<state-id>/state.toml` beside a task (DESIGN §4).

A repo-track state carries `changes.patch` (everything the predecessor left, against the base
commit); a machine-track state carries `commands.jsonl` (the ordered terminal interactions).
`[validation]` holds what Stage IV measured: the verdict and the per-test statuses of the state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.errors import DatasetError
from swe_residual.patch_safety import check_patch_text
from swe_residual.task import TRACKS, Task, _Reader, read_toml

TEST_STATUSES = ("passed", "failed", "skipped", "error")
MAX_PATCH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ResidualState:
    id: str
    task_id: str
    path: Path
    track: str
    predecessor: str
    source_run: str
    patch_path: Path | None
    commands_path: Path | None
    initial_tests: dict[str, str] | None
    prior_steps: int | None
    prior_duration_sec: float | None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    # Machine track, `[machine] live_processes`: the state includes running processes, which a
    # filesystem snapshot cannot hold (None: not declared; the docker backend detects it).
    live_processes: bool | None = None

    def read_patch(self) -> str:
        if self.patch_path is None:
            return ""
        return self.patch_path.read_bytes().decode("utf-8", errors="surrogateescape")

    def read_commands(self) -> list[dict[str, Any]]:
        if self.commands_path is None:
            return []
        return load_commands(self.commands_path)


def load_commands(path: Path) -> list[dict[str, Any]]:
    commands = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(path, f"line {number} is not JSON: {exc}") from exc
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise DatasetError(path, f"line {number} needs a string `command`", field="command")
        commands.append(entry)
    return commands


def load_state(task: Task, path: Path) -> ResidualState:
    """Read one state directory; raise DatasetError naming the file and field."""
    toml_path = path / "state.toml"
    reader = _Reader(toml_path, read_toml(toml_path))
    track = reader.get("track", str, task.track)
    if track not in TRACKS:
        raise DatasetError(toml_path, f"unknown track {track!r} (one of {', '.join(TRACKS)})", field="track")
    if track != task.track:
        raise DatasetError(toml_path, f"track {track!r} differs from the task's track {task.track!r}", field="track")
    predecessor = reader.get("predecessor", str, None)
    if not predecessor:
        raise DatasetError(toml_path, "names no predecessor", field="predecessor")
    patch_path = commands_path = None
    if track == "repo":
        patch_path = path / reader.get("patch", str, "changes.patch")
        _check_inside(toml_path, path, patch_path, "patch")
        if not patch_path.is_file():
            raise DatasetError(patch_path, "file is missing (the predecessor's changes)", field="patch")
        size = patch_path.stat().st_size
        if size > MAX_PATCH_BYTES:
            raise DatasetError(patch_path, f"patch of {size} bytes exceeds the {MAX_PATCH_BYTES} byte limit")
        # Rejected at load, so a hostile patch never reaches any backend.
        check_patch_text(patch_path.read_bytes().decode("utf-8", errors="surrogateescape"), source=str(patch_path))
    else:
        commands_path = path / reader.get("commands", str, "commands.jsonl")
        _check_inside(toml_path, path, commands_path, "commands")
        if not commands_path.is_file():
            raise DatasetError(commands_path, "file is missing (the predecessor's interactions)", field="commands")
    tests = reader.table("validation").get("tests")
    if tests is not None:
        if not isinstance(tests, dict) or not all(
            isinstance(k, str) and v in TEST_STATUSES for k, v in tests.items()
        ):
            raise DatasetError(
                toml_path, f"must map test ids to one of {', '.join(TEST_STATUSES)}", field="validation.tests"
            )
    live_processes = reader.get("machine.live_processes", bool, None)
    steps = reader.get("prior_attempt.steps", int, None)
    duration = reader.number("prior_attempt.duration_sec", None)
    return ResidualState(
        id=path.name,
        task_id=task.id,
        path=path,
        track=track,
        predecessor=predecessor,
        source_run=reader.get("source_run", str, ""),
        patch_path=patch_path,
        commands_path=commands_path,
        initial_tests=dict(tests) if tests is not None else None,
        prior_steps=steps,
        prior_duration_sec=duration,
        raw=reader.data,
        live_processes=live_processes,
    )


def _check_inside(toml_path: Path, state_dir: Path, target: Path, field_name: str) -> None:
    if not target.resolve().is_relative_to(state_dir.resolve()):
        raise DatasetError(toml_path, f"{target} lies outside the state directory", field=field_name)

"""Harbor task directories, read as Harbor writes them (schema 1.x).

A task is `task.toml` + `instruction.md` + `environment/` + `tests/` + `solution/`. Fields
the suite does not use are kept (`TaskConfig.raw`) so nothing a task carries is lost.
The suite's own keys live in `[metadata]`, which Harbor leaves free-form:
`track` ("repo" | "machine"), `repo_dir` (the repository source for the local backend),
`workdir` (where the repository sits in the environment, default /app).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.errors import DatasetError

TRACKS = ("repo", "machine")
ENVIRONMENT_MODES = ("shared", "separate")
# Harbor spells "no network" as "no-network"; Docker as "none".
NETWORK_MODE_ALIASES = {"no-network": "none", "none": "none", "bridge": "bridge", "host": "host"}


@dataclass(frozen=True)
class CollectStep:
    command: str
    timeout_sec: float


@dataclass(frozen=True)
class TaskConfig:
    schema_version: str
    name: str
    description: str
    keywords: tuple[str, ...]
    metadata: dict[str, Any]
    artifacts: tuple[str, ...]
    track: str
    workdir: str
    repo_dir: str | None
    base_commit: str | None
    docker_image: str | None
    build_timeout_sec: float
    cpus: float | None
    memory_mb: int | None
    storage_mb: int | None
    gpus: int
    environment_env: dict[str, str]
    agent_timeout_sec: float
    agent_network_mode: str
    verifier_timeout_sec: float
    verifier_network_mode: str
    verifier_environment_mode: str
    verifier_env: dict[str, str]
    verifier_collect: tuple[CollectStep, ...]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass(frozen=True)
class Task:
    """One task directory; `id` is the directory name."""

    id: str
    path: Path
    config: TaskConfig
    instruction: str

    @property
    def track(self) -> str:
        return self.config.track

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def repo_source(self) -> Path | None:
        if self.config.repo_dir is None:
            return None
        return self.path / self.config.repo_dir

    @property
    def solution_patch(self) -> Path | None:
        patch = self.solution_dir / "solution.patch"
        return patch if patch.is_file() else None

    def missing_files(self) -> list[str]:
        """What a runnable task lacks (the DeepSWE data records lack most of these)."""
        missing = []
        if not (self.tests_dir / "test.sh").is_file():
            missing.append("tests/test.sh")
        if self.config.docker_image is None and not (self.environment_dir / "Dockerfile").is_file():
            missing.append("environment/Dockerfile (or [environment] docker_image)")
        if not self.solution_dir.is_dir():
            missing.append("solution/")
        if self.config.track == "repo" and self.repo_source is not None and not self.repo_source.is_dir():
            missing.append(self.config.repo_dir or "")
        return missing

    def acceptance_tests(self) -> list[str] | None:
        """The tests that must pass (tests/config.json f2p + p2p), when the task lists them."""
        config_path = self.tests_dir / "config.json"
        if not config_path.is_file():
            return None
        try:
            data = json.loads(config_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DatasetError(config_path, f"not valid JSON: {exc}") from exc
        ids: list[str] = []
        for key in ("f2p_node_ids", "p2p_node_ids"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise DatasetError(config_path, "must be a list of test ids", field=key)
            ids.extend(value)
        return ids or None


class _Reader:
    """Typed access to a parsed TOML table that names the file and dotted field on error."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def table(self, dotted: str) -> dict[str, Any]:
        node: Any = self.data
        for part in dotted.split("."):
            node = node.get(part, {}) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                raise DatasetError(self.path, "must be a table", field=dotted)
        return node

    def get(self, dotted: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        *parents, key = dotted.split(".")
        table = self.table(".".join(parents)) if parents else self.data
        if key not in table:
            return default
        value = table[key]
        # bool is an int in Python; a TOML `true` is never a valid number here.
        if isinstance(value, bool) and bool not in _as_tuple(kind):
            raise DatasetError(self.path, f"expected {_kind_name(kind)}, got {value!r}", field=dotted)
        if not isinstance(value, kind):
            raise DatasetError(self.path, f"expected {_kind_name(kind)}, got {value!r}", field=dotted)
        return value

    def number(self, dotted: str, default: float | None) -> float | None:
        """A number that must be greater than 0 when given (timeouts, CPUs)."""
        value = self.get(dotted, (int, float), default)
        if value is not None and not value > 0:
            raise DatasetError(self.path, f"must be greater than 0, got {value!r}", field=dotted)
        return None if value is None else float(value)

    def positive_int(self, dotted: str) -> int | None:
        value = self.get(dotted, int, None)
        if value is not None and value <= 0:
            raise DatasetError(self.path, f"must be greater than 0, got {value!r}", field=dotted)
        return value

    def string_map(self, dotted: str) -> dict[str, str]:
        table = self.table(dotted)
        for key, value in table.items():
            if not isinstance(value, (str, int, float, bool)):
                raise DatasetError(self.path, f"value of {key!r} must be a scalar", field=dotted)
        return {key: str(value) for key, value in table.items()}


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", list: "a list", bool: "a boolean"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(path, "file is missing") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(path, f"malformed TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"not UTF-8 text: {exc}") from exc


def _network_mode(reader: _Reader, dotted: str) -> str:
    value = reader.get(dotted, str, "none")
    if value not in NETWORK_MODE_ALIASES:
        allowed = ", ".join(sorted(NETWORK_MODE_ALIASES))
        raise DatasetError(reader.path, f"unknown network mode {value!r} (one of {allowed})", field=dotted)
    return NETWORK_MODE_ALIASES[value]


def _absolute(reader: _Reader, dotted: str, default: str) -> str:
    value = reader.get(dotted, str, default)
    if not value.startswith("/"):
        raise DatasetError(reader.path, f"must be an absolute path, got {value!r}", field=dotted)
    return value


def parse_task_config(path: Path) -> TaskConfig:
    data = read_toml(path)
    reader = _Reader(path, data)
    metadata = reader.table("metadata")
    track = reader.get("metadata.track", str, "repo")
    if track not in TRACKS:
        raise DatasetError(path, f"unknown track {track!r} (one of {', '.join(TRACKS)})", field="metadata.track")
    mode = reader.get("verifier.environment_mode", str, "shared")
    if mode not in ENVIRONMENT_MODES:
        raise DatasetError(
            path, f"unknown environment mode {mode!r} (one of {', '.join(ENVIRONMENT_MODES)})",
            field="verifier.environment_mode",
        )
    collect_raw = reader.get("verifier.collect", list, [])
    collect = []
    for index, entry in enumerate(collect_raw):
        where = f"verifier.collect[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise DatasetError(path, "needs a string `command`", field=where)
        timeout = entry.get("timeout_sec", 300.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise DatasetError(path, f"timeout_sec must be a number, got {timeout!r}", field=where)
        collect.append(CollectStep(entry["command"], float(timeout)))
    artifacts = reader.get("artifacts", list, [])
    keywords = reader.get("task.keywords", list, [])
    for name, values in (("artifacts", artifacts), ("task.keywords", keywords)):
        if not all(isinstance(v, str) for v in values):
            raise DatasetError(path, "must be a list of strings", field=name)
    memory = reader.positive_int("environment.memory_mb")
    storage = reader.positive_int("environment.storage_mb")
    gpus = reader.get("environment.gpus", int, 0)
    return TaskConfig(
        schema_version=str(reader.get("schema_version", str, "1.0")),
        name=reader.get("task.name", str, ""),
        description=reader.get("task.description", str, ""),
        keywords=tuple(keywords),
        metadata=metadata,
        artifacts=tuple(artifacts),
        track=track,
        workdir=_absolute(reader, "metadata.workdir", "/app"),
        repo_dir=reader.get("metadata.repo_dir", str, None),
        base_commit=reader.get("metadata.base_commit_hash", str, None),
        docker_image=reader.get("environment.docker_image", str, None),
        build_timeout_sec=reader.number("environment.build_timeout_sec", 1800.0) or 1800.0,  # never None
        cpus=reader.number("environment.cpus", None),
        memory_mb=memory,
        storage_mb=storage,
        gpus=gpus,
        environment_env=reader.string_map("environment.env"),
        agent_timeout_sec=reader.number("agent.timeout_sec", 600.0) or 600.0,
        agent_network_mode=_network_mode(reader, "agent.network_mode"),
        verifier_timeout_sec=reader.number("verifier.timeout_sec", 600.0) or 600.0,
        verifier_network_mode=_network_mode(reader, "verifier.network_mode"),
        verifier_environment_mode=mode,
        verifier_env=reader.string_map("verifier.env"),
        verifier_collect=tuple(collect),
        raw=data,
    )


def load_task(path: Path) -> Task:
    """Read one task directory; raise DatasetError naming the file and field."""
    path = Path(path)
    if not path.is_dir():
        raise DatasetError(path, "task directory is missing")
    config = parse_task_config(path / "task.toml")
    instruction_path = path / "instruction.md"
    try:
        instruction = instruction_path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DatasetError(instruction_path, "file is missing (the request given to the agent)") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(instruction_path, f"not UTF-8 text: {exc}") from exc
    if not instruction.strip():
        raise DatasetError(instruction_path, "the request is empty")
    return Task(id=path.name, path=path, config=config, instruction=instruction)

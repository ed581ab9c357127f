"""Harbor task directories, read with Harbor's own schema (harbor 0.25, schema 1.x).

A task is `task.toml` + `instruction.md` + `environment/` + `tests/` + `solution/`. Fields are
read with Harbor's names, types, values and defaults (`harbor.models.task.config`); what the
suite cannot honour is a `DatasetError` naming the file and field, never run differently:
network mode `allowlist`, GPUs/TPUs, a non-Linux `os`, Docker Compose files (several
containers), a collect step or artifact in another service, multi-step tasks. Keys Harbor's
model does not define are ignored, as Harbor ignores them, and listed in
`TaskConfig.warnings` (what `harbor lint` reports as unknown-config-field). Fields the suite
does not use are kept (`TaskConfig.raw`) so nothing a task carries is lost.
The suite's own keys live in `[metadata]`, which Harbor leaves free-form:
`track` ("repo" | "machine"; without it the rule of swe_residual/dataset/tracks.py places the task),
`repo_dir` (the repository source for the local backend), `workdir` (where the agent, solve.sh
and test.sh run; without it, the image's WORKDIR, as Harbor runs them), `base_commit_hash`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.task_schema import (
    DOCKER_NETWORKS,
    TASK_SCHEMA,
    baseline_network,
    network_value,
    unknown_fields,
)
from swe_residual.dataset.toml_fields import FieldReader, read_toml
from swe_residual.dataset.tracks import TRACKS, TrackOverrides, resolve_track
from swe_residual.dataset.values import Track

ENVIRONMENT_MODES = ("shared", "separate")
MAIN_SERVICE = "main"
COMPOSE_FILES = ("environment/docker-compose.yaml", "tests/docker-compose.yaml")
# Harbor's defaults (harbor.models.task.config).
DEFAULT_BUILD_TIMEOUT_SEC = 600.0
DEFAULT_VERIFIER_TIMEOUT_SEC = 600.0
DEFAULT_COLLECT_TIMEOUT_SEC = 60.0
DEFAULT_SCHEMA_VERSION = "1.4"
# Harbor leaves [agent] timeout_sec unset by default; the suite's budget needs a number.
DEFAULT_AGENT_TIMEOUT_SEC = 600.0
# Where the repository sits where there is no image to ask (the local backend's path map).
DEFAULT_WORKDIR = "/app"


@dataclass(frozen=True)
class CollectStep:
    """One `[[verifier.collect]]` command, run in the agent's container after it stops."""

    command: str
    timeout_sec: float
    user: str | int | None = None


@dataclass(frozen=True)
class ArtifactSpec:
    """One entry of the top-level `artifacts` list: a container path copied out after collect.

    `destination` is where it lands, relative to the run's artifacts directory (None: the
    source path without its leading `/`, as Harbor places it). `exclude`: tar patterns for a
    directory source.
    """

    source: str
    destination: str | None = None
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class VerifierEnvironment:
    """`[verifier.environment]`: the separate verifier's own environment (same schema as
    `[environment]`)."""

    docker_image: str | None
    cpus: float | None
    memory_mb: int | None
    storage_mb: int | None
    build_timeout_sec: float
    env: dict[str, str]


@dataclass(frozen=True)
class TaskConfig:
    schema_version: str
    name: str
    description: str
    keywords: tuple[str, ...]
    metadata: dict[str, Any]
    artifacts: tuple[ArtifactSpec, ...]
    track: Track
    # [metadata] workdir; None: the image's WORKDIR (resolved by the backend from the image).
    workdir: str | None
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
    # The Docker network of each phase ("none" or "bridge"), resolved from Harbor's
    # network_mode values as Harbor resolves them.
    agent_network_mode: str
    verifier_timeout_sec: float
    verifier_network_mode: str
    verifier_environment_mode: str
    verifier_env: dict[str, str]
    verifier_collect: tuple[CollectStep, ...]
    verifier_environment: VerifierEnvironment | None = None
    solution_env: dict[str, str] = field(default_factory=dict)  # [solution.env], for the oracle's solve.sh
    # Fields Harbor does not know (it ignores them; `harbor lint` reports them), as
    # "<file>: unknown field '<dotted.field>' ...". Never an error.
    warnings: tuple[str, ...] = ()
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    # Why the task is on its track (which rule of swe_residual/dataset/tracks.py placed it).
    track_reason: str = "task.toml [metadata] track"


@dataclass(frozen=True)
class Task:
    """One task directory; `id` is the directory name."""

    id: str
    path: Path
    config: TaskConfig
    instruction: str

    @property
    def track(self) -> Track:
        return self.config.track

    @property
    def workdir_reason(self) -> str:
        if self.config.workdir is not None:
            return "task.toml [metadata] workdir"
        return "the image's WORKDIR (no [metadata] workdir), as Harbor runs it"

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
        if self.config.track == Track.REPO and self.repo_source is not None and not self.repo_source.is_dir():
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


# -- network, environments, artifacts ----------------------------------------------------------
def _size_mb(reader: FieldReader, dotted: str, exact: str) -> int | None:
    """`memory_mb`/`storage_mb`, or Harbor's deprecated "1G"/"512M" `memory`/`storage`."""
    value = reader.positive_int(exact)
    legacy = reader.get(dotted, str, None)
    if legacy is None:
        return value
    text = legacy.strip().upper()
    factors = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    try:
        converted = int(float(text[:-1]) * factors[text[-1:]])
    except (KeyError, ValueError):
        raise DatasetError(reader.path, f"expected a size like '1G' or '512M', got {legacy!r}", field=dotted) from None
    if value is not None and value != converted:
        raise DatasetError(reader.path, f"{legacy!r} ({converted} MB) conflicts with {exact} = {value}", field=dotted)
    if converted <= 0:
        raise DatasetError(reader.path, f"must be greater than 0, got {legacy!r}", field=dotted)
    return converted


def _environment_table(reader: FieldReader, table: str) -> dict[str, Any]:
    """The fields of an `[environment]`-shaped table the suite uses, validated."""
    os_name = reader.get(f"{table}.os", str, "linux")
    if os_name.lower() != "linux":
        raise DatasetError(reader.path, f"os {os_name!r}: this suite runs Linux containers only", field=f"{table}.os")
    gpus = reader.get(f"{table}.gpus", int, None)
    if gpus is not None and gpus < 0:
        raise DatasetError(reader.path, f"must not be negative, got {gpus!r}", field=f"{table}.gpus")
    if gpus:
        raise DatasetError(reader.path, f"the task asks for {gpus} GPU(s): GPUs are not available to this suite",
                           field=f"{table}.gpus")
    if reader.get(f"{table}.tpu", dict, None) is not None:
        raise DatasetError(reader.path, "TPUs are not available to this suite", field=f"{table}.tpu")
    return {
        "docker_image": reader.get(f"{table}.docker_image", str, None),
        "cpus": reader.number(f"{table}.cpus", None),
        "memory_mb": _size_mb(reader, f"{table}.memory", f"{table}.memory_mb"),
        "storage_mb": _size_mb(reader, f"{table}.storage", f"{table}.storage_mb"),
        "gpus": gpus or 0,
        "build_timeout_sec": reader.number(f"{table}.build_timeout_sec", DEFAULT_BUILD_TIMEOUT_SEC)
        or DEFAULT_BUILD_TIMEOUT_SEC,
        "env": reader.string_map(f"{table}.env"),
    }


def _service(reader: FieldReader, where: str, entry: dict[str, Any]) -> None:
    service = entry.get("service")
    if service is None or service == MAIN_SERVICE:
        return
    if not isinstance(service, str):
        raise DatasetError(reader.path, f"service must be a string, got {service!r}", field=where)
    raise DatasetError(
        reader.path,
        f"service {service!r}: only the main container exists here (multi-container tasks cannot run on this "
        "engine here)",
        field=where,
    )


def _collect_steps(reader: FieldReader) -> tuple[CollectStep, ...]:
    steps = []
    for index, entry in enumerate(reader.get("verifier.collect", list, [])):
        where = f"verifier.collect[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise DatasetError(reader.path, "needs a string `command`", field=where)
        _service(reader, where, entry)
        timeout = entry.get("timeout_sec", DEFAULT_COLLECT_TIMEOUT_SEC)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise DatasetError(reader.path, f"timeout_sec must be a number greater than 0, got {timeout!r}", field=where)
        user = entry.get("user")
        if user is not None and (isinstance(user, bool) or not isinstance(user, (str, int))):
            raise DatasetError(reader.path, f"user must be a name or a UID, got {user!r}", field=where)
        steps.append(CollectStep(entry["command"], float(timeout), user))
    return tuple(steps)


def _artifacts(reader: FieldReader) -> tuple[ArtifactSpec, ...]:
    specs = []
    for index, entry in enumerate(reader.get("artifacts", list, [])):
        where = f"artifacts[{index}]"
        if isinstance(entry, str):
            entry = {"source": entry}
        if not isinstance(entry, dict):
            raise DatasetError(reader.path, f"expected a path or a table with `source`, got {entry!r}", field=where)
        source, destination, exclude = entry.get("source"), entry.get("destination"), entry.get("exclude", [])
        if not isinstance(source, str):
            raise DatasetError(reader.path, "needs a string `source`", field=where)
        if not source.startswith("/"):
            raise DatasetError(reader.path, f"source must be an absolute path in the container, got {source!r}",
                               field=where)
        if ".." in PurePosixPath(source).parts:
            raise DatasetError(reader.path, f"source must not contain '..', got {source!r}", field=where)
        if destination is not None:
            if not isinstance(destination, str):
                raise DatasetError(reader.path, f"destination must be a string, got {destination!r}", field=where)
            parts = PurePosixPath(destination).parts
            if destination and ("\\" in destination or destination.startswith("/") or ".." in parts
                                or destination.rstrip("/") == "manifest.json"):
                raise DatasetError(
                    reader.path,
                    f"destination must be a relative path inside the artifacts directory (not manifest.json), "
                    f"got {destination!r}",
                    field=where,
                )
            destination = destination or None
        if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
            raise DatasetError(reader.path, "exclude must be a list of strings", field=where)
        _service(reader, where, entry)
        specs.append(ArtifactSpec(source, destination, tuple(exclude)))
    return tuple(specs)


def _absolute(reader: FieldReader, dotted: str, default: str | None) -> str | None:
    value = reader.get(dotted, str, default)
    if value is not None and not value.startswith("/"):
        raise DatasetError(reader.path, f"must be an absolute path, got {value!r}", field=dotted)
    return value


def parse_task_config(path: Path, overrides: TrackOverrides | None = None) -> TaskConfig:
    data = read_toml(path)
    reader = FieldReader(path, data)
    metadata = reader.table("metadata")
    declared_track = reader.get("metadata.track", str, None)
    track = declared_track or Track.REPO
    if track not in TRACKS:
        raise DatasetError(path, f"unknown track {track!r} (one of {', '.join(TRACKS)})", field="metadata.track")
    if reader.get("steps", list, None) is not None:
        raise DatasetError(path, "multi-step tasks ([[steps]]) cannot run in this suite", field="steps")
    # [verifier] environment_mode as Harbor resolves it: the explicit value, else "separate"
    # when [verifier.environment] is given, else "shared".
    verifier_table = reader.table("verifier")
    has_verifier_environment = "environment" in verifier_table
    if has_verifier_environment:
        reader.table("verifier.environment")
    mode = reader.get("verifier.environment_mode", str, None)
    if mode is not None and mode not in ENVIRONMENT_MODES:
        raise DatasetError(
            path, f"unknown environment mode {mode!r} (one of {', '.join(ENVIRONMENT_MODES)})",
            field="verifier.environment_mode",
        )
    if mode == "shared" and has_verifier_environment:
        raise DatasetError(path, "'shared' is incompatible with [verifier.environment]; omit the table or use "
                           "'separate'", field="verifier.environment_mode")
    mode = mode or ("separate" if has_verifier_environment else "shared")
    keywords = reader.get("task.keywords", list, [])
    if not all(isinstance(v, str) for v in keywords):
        raise DatasetError(path, "must be a list of strings", field="task.keywords")
    base_commit = reader.get("metadata.base_commit_hash", str, None)
    track, track_reason = resolve_track(path.parent, declared_track, base_commit, mode, overrides)
    environment = _environment_table(reader, "environment")
    verifier_environment = None
    if has_verifier_environment:
        own = _environment_table(reader, "verifier.environment")
        own.pop("gpus")
        verifier_environment = VerifierEnvironment(**own)
    # Network, as Harbor resolves it per phase: the phase's own network_mode, else the baseline
    # of the environment the phase runs in ([environment]; a separate verifier's own
    # [verifier.environment] when it has one), whose default is public.
    environment_network = baseline_network(reader, "environment")
    verifier_baseline = environment_network
    if has_verifier_environment:
        verifier_baseline = baseline_network(reader, "verifier.environment")
    agent_network = network_value(reader, "agent") or environment_network
    verifier_network = network_value(reader, "verifier") or verifier_baseline
    warnings = [f"{path}: unknown field {name} (Harbor ignores it)" for name in unknown_fields(data, TASK_SCHEMA)]
    for table in ("environment", "verifier.environment"):
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb"), ("allow_internet", "network_mode")):
            if old in reader.table(table):
                warnings.append(f"{path}: {table}.{old} is deprecated (Harbor's field is {table}.{new})")
    return TaskConfig(
        schema_version=str(reader.get("schema_version", str, None) or reader.get("version", str, DEFAULT_SCHEMA_VERSION)),
        name=reader.get("task.name", str, ""),
        description=reader.get("task.description", str, ""),
        keywords=tuple(keywords),
        metadata=metadata,
        artifacts=_artifacts(reader),
        track=Track(track),  # checked above, or placed by the rule of dataset/tracks.py
        workdir=_absolute(reader, "metadata.workdir", None),
        repo_dir=reader.get("metadata.repo_dir", str, None),
        base_commit=base_commit,
        docker_image=environment["docker_image"],
        build_timeout_sec=environment["build_timeout_sec"],
        cpus=environment["cpus"],
        memory_mb=environment["memory_mb"],
        storage_mb=environment["storage_mb"],
        gpus=environment["gpus"],
        environment_env=environment["env"],
        agent_timeout_sec=reader.number("agent.timeout_sec", DEFAULT_AGENT_TIMEOUT_SEC) or DEFAULT_AGENT_TIMEOUT_SEC,
        agent_network_mode=DOCKER_NETWORKS[agent_network],
        verifier_timeout_sec=reader.number("verifier.timeout_sec", DEFAULT_VERIFIER_TIMEOUT_SEC)
        or DEFAULT_VERIFIER_TIMEOUT_SEC,
        verifier_network_mode=DOCKER_NETWORKS[verifier_network],
        verifier_environment_mode=mode,
        verifier_env=reader.string_map("verifier.env"),
        verifier_collect=_collect_steps(reader),
        verifier_environment=verifier_environment,
        solution_env=reader.string_map("solution.env"),
        warnings=tuple(warnings),
        raw=data,
        track_reason=track_reason,
    )


def _reject_compose(path: Path) -> None:
    for name in COMPOSE_FILES:
        if (path / name).is_file():
            raise DatasetError(
                path / name,
                "a Docker Compose definition: multi-container tasks cannot run on this engine here "
                "(one container per phase), so the task is rejected rather than run without its services",
            )


def load_task(path: Path, overrides: TrackOverrides | None = None) -> Task:
    """Read one task directory; raise DatasetError naming the file and field. `overrides`:
    the dataset's track settings (swe_residual/dataset/tracks.py)."""
    path = Path(path)
    if not path.is_dir():
        raise DatasetError(path, "task directory is missing")
    config = parse_task_config(path / "task.toml", overrides)
    _reject_compose(path)
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

"""Reading Harbor job directories into plain dataclasses.

A Harbor job directory holds the job's `config.json` and `result.json` and one directory per
trial; a trial directory holds (Harbor's `TrialPaths`):

    config.json                 the trial's `TrialConfig` (task, agent name and model, ...)
    result.json                 its `TrialResult`, written when the trial ends
    agent/trajectory.json       the agent's trajectory in ATIF, when the agent writes one (see `atif`);
                                an installed agent that leaves it in the task's directory has it
                                collected as an artifact (pre.dev: artifacts/trajectory.json)
    verifier/                   reward.txt or reward.json, test reports, test output
    artifacts/                  what was collected from the environment, and manifest.json

`read_jobs(root)` finds every trial below `root` (one job directory, or a directory of them)
and reads what it says into `HarborTrial`s. JSON is read tolerantly: unknown fields are
ignored, a missing optional field is None, and a trial that cannot be read (no or malformed
`result.json`) becomes a `TrialProblem` naming its directory instead of stopping the read.
Nothing here knows what the trials are used for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

# Where the agent's own publish directory sits inside the environment (Harbor's
# EnvironmentPaths.artifacts_dir): /logs/artifacts/x lands at artifacts/logs/artifacts/x,
# and in Harbor versions before the mirrored layout at artifacts/x.
CONVENTION_DIR = PurePosixPath("/logs/artifacts")
MANIFEST = "manifest.json"
# Where a trial keeps its ATIF trajectory, in the order looked for.
TRAJECTORIES = ("agent/trajectory.json", "artifacts/trajectory.json")
# Directories below the root are searched this deep for trials (jobs/<job>/<trial> is 2; a published
# results tree such as results/<machine>/<model>/<task>/<job>/<trial> is 5).
MAX_DEPTH = 6


@dataclass(frozen=True)
class ArtifactEntry:
    """One entry of `artifacts/manifest.json` (Harbor's `ArtifactManifestEntry`)."""

    source: str
    destination: str
    type: str
    status: str


@dataclass(frozen=True)
class HarborTrial:
    path: Path
    relative: str  # the trial directory relative to the root read, POSIX form
    trial_name: str
    task_name: str
    task_path: str | None  # the task's path (local or git) or package name, from the trial config
    task_checksum: str | None  # Harbor's checksum of the task directory it ran (harbor_checksum.py)
    agent_name: str | None
    agent_version: str | None
    model_name: str | None  # "provider/name" when Harbor recorded a provider
    rewards: dict[str, float] | None  # VerifierResult.rewards
    exception_type: str | None
    exception_message: str | None
    started_at: datetime | None
    finished_at: datetime | None
    # phase -> (started_at, finished_at): environment_setup, agent_setup, agent_execution, verifier
    phases: dict[str, tuple[datetime | None, datetime | None]] = field(default_factory=dict)
    cost_usd: float | None = None
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    trajectory_path: Path | None = None
    artifacts: tuple[ArtifactEntry, ...] = ()

    @property
    def artifacts_dir(self) -> Path:
        return self.path / "artifacts"

    @property
    def verifier_dir(self) -> Path:
        return self.path / "verifier"

    @property
    def reward(self) -> float | None:
        """The primary reward: `reward`, or the only value when there is one."""
        if not self.rewards:
            return None
        if "reward" in self.rewards:
            return self.rewards["reward"]
        return next(iter(self.rewards.values())) if len(self.rewards) == 1 else None

    def phase_seconds(self, phase: str) -> float | None:
        started, finished = self.phases.get(phase, (None, None))
        return (finished - started).total_seconds() if started and finished else None

    def artifact(self, source: str, destination: str | None = None) -> Path | None:
        """The host file Harbor collected from the environment path `source`, if any."""
        return find_artifact(self.artifacts_dir, self.artifacts, source, destination)


@dataclass(frozen=True)
class TrialProblem:
    path: Path
    relative: str
    reason: str


@dataclass
class HarborJobs:
    root: Path
    trials: list[HarborTrial] = field(default_factory=list)
    problems: list[TrialProblem] = field(default_factory=list)


# --------------------------------------------------------------------------- tolerant JSON


def read_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None), or (None, why it cannot be read)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, f"no {path.name}"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path.name} cannot be read: {exc}"
    if not text.strip():
        return None, f"{path.name} is empty"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{path.name} is not valid JSON: {exc}"
    if not isinstance(data, dict):
        return None, f"{path.name} is not a JSON object"
    return data, None


def _table(data: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    value = data.get(key) if data else None
    return value if isinstance(value, dict) else {}


def _text(data: Mapping[str, Any] | None, key: str) -> str | None:
    value = data.get(key) if data else None
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp as Harbor writes it; naive ones are taken as UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def format_time(moment: datetime) -> str:
    """UTC, to the second: the same instant always reads the same."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- one trial


def _rewards(result: Mapping[str, Any]) -> dict[str, float] | None:
    raw = _table(result, "verifier_result").get("rewards")
    if not isinstance(raw, dict):
        return None
    rewards = {str(key): number for key, value in raw.items() if (number := _number(value)) is not None}
    return rewards or None


def _exception(result: Mapping[str, Any]) -> dict[str, Any]:
    """The trial's exception, else the first step's (multi-step trials record them there)."""
    own = _table(result, "exception_info")
    if own:
        return own
    steps = result.get("step_results")
    for step in steps if isinstance(steps, list) else []:
        info = _table(step, "exception_info") if isinstance(step, dict) else {}
        if info:
            return info
    return {}


def _task_path(config: Mapping[str, Any], result: Mapping[str, Any]) -> str | None:
    for task in (_table(config, "task"), _table(_table(result, "config"), "task"), _table(result, "task_id")):
        found = _text(task, "path") or _text(task, "name")
        if found:
            return found
    return None


def _model(agent_info: Mapping[str, Any], agent_config: Mapping[str, Any]) -> str | None:
    info = _table(agent_info, "model_info")
    name = _text(info, "name")
    if name:
        provider = _text(info, "provider")
        return f"{provider}/{name}" if provider and not name.startswith(f"{provider}/") else name
    return _text(agent_config, "model_name")


def _trajectory_model(trajectory: Path) -> str | None:
    """The model an ATIF trajectory names (`agent.model_name`), for an agent whose result does not."""
    if not trajectory.is_file():
        return None
    data, _ = read_object(trajectory)
    return _text(_table(data or {}, "agent"), "model_name")


def read_artifact_manifest(artifacts_dir: Path) -> tuple[ArtifactEntry, ...]:
    """The entries of `artifacts_dir/manifest.json`; none when it is missing or unreadable."""
    path = artifacts_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return ()
    entries = data.get("entries") if isinstance(data, dict) else data
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("source"), str):
            found.append(ArtifactEntry(entry["source"], str(entry.get("destination") or ""),
                                       str(entry.get("type") or ""), str(entry.get("status") or "")))
    return tuple(found)


def read_trial(path: Path, relative: str) -> HarborTrial | TrialProblem:
    result, why = read_object(path / "result.json")
    if result is None:
        reason = why or "no result.json"
        if why == "no result.json":
            reason = "no result.json: the trial did not finish"
        return TrialProblem(path, relative, reason)
    config, _ = read_object(path / "config.json")
    # The result embeds the trial config; config.json beside it is the same when present.
    config = config or _table(result, "config")
    task_name = _text(result, "task_name")
    task_path = _task_path(config, result)
    if task_name is None and task_path is None:
        return TrialProblem(path, relative, "result.json names no task (task_name) and config.json no task path")
    agent_info = _table(result, "agent_info")
    agent_config = _table(config, "agent")
    exception = _exception(result)
    agent_result = _table(result, "agent_result")
    phases = {}
    for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier"):
        timing = _table(result, phase)
        phases[phase] = (parse_time(timing.get("started_at")), parse_time(timing.get("finished_at")))
    trajectory = next((path / found for found in TRAJECTORIES if (path / found).is_file()), path / TRAJECTORIES[0])
    return HarborTrial(
        path=path,
        relative=relative,
        trial_name=_text(result, "trial_name") or _text(config, "trial_name") or path.name,
        task_name=task_name or PurePosixPath(str(task_path)).name,
        task_path=task_path,
        task_checksum=_text(result, "task_checksum"),
        agent_name=_text(agent_info, "name") or _text(agent_config, "name") or _text(agent_config, "import_path"),
        agent_version=_text(agent_info, "version"),
        model_name=_model(agent_info, agent_config) or _trajectory_model(trajectory),
        rewards=_rewards(result),
        exception_type=_text(exception, "exception_type"),
        exception_message=_text(exception, "exception_message"),
        started_at=parse_time(result.get("started_at")),
        finished_at=parse_time(result.get("finished_at")),
        phases=phases,
        cost_usd=_number(agent_result.get("cost_usd")),
        n_input_tokens=_count(agent_result.get("n_input_tokens")),
        n_output_tokens=_count(agent_result.get("n_output_tokens")),
        trajectory_path=trajectory if trajectory.is_file() else None,
        artifacts=read_artifact_manifest(path / "artifacts"),
    )


# --------------------------------------------------------------------------- artifacts


def _inside(root: Path, relative: str) -> Path | None:
    """The file at `relative` below `root`; never one a symlink leads out of `root` to."""
    parts = [part for part in PurePosixPath(relative).parts if part not in ("", "/", "..")]
    candidate = root.joinpath(*parts) if parts else None
    if candidate is None or not candidate.is_file():
        return None
    return candidate if candidate.resolve().is_relative_to(root.resolve()) else None


def find_artifact(artifacts_dir: Path, manifest: tuple[ArtifactEntry, ...], source: str,
                  destination: str | None = None) -> Path | None:
    """Where a file collected from `source` (an absolute environment path) was put.

    An entry declared with a `destination` lands there. The manifest says it for entries
    with a destination (the file itself, or a directory holding it); otherwise Harbor mirrors
    the source path under `artifacts/`, and older versions put the convention directory's
    files at the top of `artifacts/`.
    """
    if destination:
        declared = _inside(artifacts_dir, destination)
        if declared is not None:
            return declared
    wanted = PurePosixPath(source)
    for entry in manifest:
        if entry.status not in ("ok", "") or not entry.destination:
            continue
        origin = PurePosixPath(entry.source)
        destination = entry.destination.removeprefix("artifacts/") if entry.destination != "artifacts" else ""
        if origin == wanted:
            found = _inside(artifacts_dir, destination)
        elif wanted.is_relative_to(origin):
            found = _inside(artifacts_dir, str(PurePosixPath(destination or ".") / wanted.relative_to(origin)))
        else:
            continue
        if found is not None:
            return found
    mirrored = _inside(artifacts_dir, str(wanted))
    if mirrored is not None:
        return mirrored
    if wanted.is_relative_to(CONVENTION_DIR):
        return _inside(artifacts_dir, str(wanted.relative_to(CONVENTION_DIR)))
    return None


# --------------------------------------------------------------------------- a whole tree


def _looks_like_trial(directory: Path) -> bool:
    config, _ = read_object(directory / "config.json")
    if config is not None and ("trial_name" in config or isinstance(config.get("task"), dict)):
        return True
    return any((directory / name).exists() for name in ("agent", "verifier", "trial.log"))


def _is_job_result(data: Mapping[str, Any]) -> bool:
    return "trial_name" not in data and "task_name" not in data and any(
        key in data for key in ("stats", "n_total_trials", "trial_results"))


def read_jobs(root: Path | str) -> HarborJobs:
    """Every trial below `root`, in path order; unreadable trials as problems."""
    root = Path(root)
    jobs = HarborJobs(root=root)
    _visit(root, root, 0, jobs)
    return jobs


def _is_trial_dir(directory: Path) -> bool:
    result, _ = read_object(directory / "result.json")
    if result is not None:
        if _is_job_result(result):
            return False
        if "trial_name" in result or "task_name" in result:
            return True
    return _looks_like_trial(directory)


def _visit(directory: Path, root: Path, depth: int, jobs: HarborJobs) -> None:
    relative = directory.relative_to(root).as_posix()
    if _is_trial_dir(directory):
        read = read_trial(directory, relative)
        if isinstance(read, HarborTrial):
            jobs.trials.append(read)
        else:
            jobs.problems.append(read)
        return  # a trial's own directories (artifacts may hold anything) are not searched
    if depth >= MAX_DEPTH:
        return
    try:
        children = sorted(child for child in directory.iterdir()
                          if child.is_dir() and not child.is_symlink() and not child.name.startswith("."))
    except OSError as exc:
        jobs.problems.append(TrialProblem(directory, relative, f"cannot be listed: {exc}"))
        return
    for child in children:
        _visit(child, root, depth + 1, jobs)


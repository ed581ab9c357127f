"""A published dataset's manifest: where each task and each state comes from, and what was measured.

`datasets/<name>/manifest.toml` is the only file of such a dataset kept in this repository: the
tasks are other people's files and the states are other people's runs, so they are named (by
repository, commit, path and content checksum) and rebuilt from fetched copies of those
repositories (`swe-residual dataset build`, materialise.py). The layout:

    schema = 1
    name, description
    [sources.<name>]          repository (URL), commit, licence, licence_path?, licence_sha256?,
                              runs_format? ("harbor-jobs": Harbor trials; "codex-runs", "pi-runs",
                              "deepswe-trials": DeepSWE run folders whose model.patch is the state;
                              default Terminal-Bench's)
    [tasks.<task id>]         source, path (the task folder at that commit), sha256 (folder_checksum),
                              version (what the task is: "published")
    [states."<task>/<state>"] source, trial (the trial folder), submission, agent, model, task_version
                              (the one the run was made on), commands_sha256 (the commands.jsonl the
                              trial's keys give; machine track) or patch_sha256 (the run's
                              model.patch, the state's changes.patch; repository track), stage_i, stage_iii, [.state] (the state.toml
                              written next to commands.jsonl: reviewers, per-test statuses, Stage IV)
    [funnel]                  stage_ii (runs per exclusion rule), stage_iv (candidates per Table 5 row)
    [funnels.<source>]        the same, for each source of runs recorded later (`dataset record --add`)
    [candidates."<task>/<candidate>"]   every candidate Stage IV saw: its row and first divergence
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import ConfigError

MANIFEST = "manifest.toml"
SCHEMA = 1


def state_directory(directory: Path, task_id: str, state_id: str) -> Path:
    """Where a build writes one state of the dataset in `directory` (the suite's dataset layout)."""
    return directory / task_id / "residual" / state_id


@dataclass(frozen=True)
class SourceRef:
    name: str
    repository: str
    commit: str
    licence: str
    licence_path: str | None
    licence_sha256: str | None
    runs_format: str = "terminal-bench"  # how its trials are read: "terminal-bench" or "harbor-jobs"


@dataclass(frozen=True)
class TaskRef:
    task_id: str
    source: str
    path: str
    sha256: str


@dataclass(frozen=True)
class StateRef:
    task_id: str
    state_id: str
    source: str
    trial: str
    commands_sha256: str  # machine track; "" for a repository-track state
    state: dict[str, Any]  # the state.toml to write
    facts: dict[str, Any]  # the rest of the entry (agent, model, stage outcomes), for reports
    patch_sha256: str = ""  # repository track: the run's model.patch, written as changes.patch


@dataclass(frozen=True)
class Manifest:
    path: Path
    name: str
    sources: dict[str, SourceRef]
    tasks: dict[str, TaskRef]
    states: list[StateRef]
    funnel: dict[str, Any]
    candidates: dict[str, Any]


def _need(table: dict[str, Any], key: str, where: str) -> Any:
    if key not in table:
        raise ConfigError(f"{where}: missing {key!r}")
    return table[key]


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    if not path.is_file():
        raise ConfigError(f"{directory}: no {MANIFEST}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    if data.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA}")
    sources = {}
    for name, entry in (data.get("sources") or {}).items():
        where = f"{path} [sources.{name}]"
        sources[name] = SourceRef(name, _need(entry, "repository", where), _need(entry, "commit", where),
                                  entry.get("licence", "not stated"), entry.get("licence_path"),
                                  entry.get("licence_sha256"), entry.get("runs_format", "terminal-bench"))
    tasks = {}
    for task_id, entry in (data.get("tasks") or {}).items():
        where = f"{path} [tasks.{task_id}]"
        source = _need(entry, "source", where)
        if source not in sources:
            raise ConfigError(f"{where}: source {source!r} is not under [sources]")
        tasks[task_id] = TaskRef(task_id, source, _need(entry, "path", where), _need(entry, "sha256", where))
    states = []
    for key, entry in (data.get("states") or {}).items():
        where = f"{path} [states.{key!r}]"
        task_id, _, state_id = key.partition("/")
        if task_id not in tasks or not state_id:
            raise ConfigError(f"{where}: the key must be <task>/<state> of a task under [tasks]")
        source = _need(entry, "source", where)
        if source not in sources:
            raise ConfigError(f"{where}: source {source!r} is not under [sources]")
        facts = {k: v for k, v in entry.items() if k not in ("state",)}
        if "patch_sha256" not in entry:  # a state is its keys (machine track) or its patch (repository track)
            _need(entry, "commands_sha256", where)
        states.append(StateRef(task_id, state_id, source, _need(entry, "trial", where),
                               entry.get("commands_sha256", ""), dict(_need(entry, "state", where)), facts,
                               entry.get("patch_sha256", "")))
    return Manifest(path, str(data.get("name", directory.name)), sources, tasks, states,
                    dict(data.get("funnel") or {}), dict(data.get("candidates") or {}))

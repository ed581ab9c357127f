"""Reading Terminal-Bench run directories into plain dataclasses.

Terminal-Bench (the harness before Harbor) writes a run as

    <run>/run_metadata.json          RunMetadata: agent_name, model_name, dataset_name, dataset_version, ...
    <run>/results.json               BenchmarkResults: every trial's results (not read: each trial has its own)
    <run>/<task id>/<trial name>/    one trial directory:
        results.json                 TrialResults: task_id, is_resolved, failure_mode, parser_results, times
        commands.txt                 every tmux send_keys call (tb_keys.py)
        sessions/agent.cast          the agent's terminal, recorded by asciinema (v2)
        panes/pre-agent.txt, post-agent.txt, post-test.txt    the pane at those moments
        agent-logs/episode-N/        Terminus's turns: prompt.txt, response.json, debug.json

Published collections move trials around (`letta-ai/recovery-bench` keeps them as
`runs/<collection>/<hash>-<task>/<trial>/` with no run_metadata.json), so a trial directory is
any directory below the root whose `results.json` is a trial's (it names `task_id` and
`trial_name`), and its run's metadata is the nearest `run_metadata.json` above it. JSON is read
tolerantly (harbor/layout.py's `read_object`); a trial that cannot be read is a problem naming
its directory, never the end of the read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from swe_residual.dataset.harbor_layout import parse_time, read_object
from swe_residual.dataset.values import Termination

TRIAL_RESULTS = "results.json"
RUN_METADATA = "run_metadata.json"
MAX_EPISODES = 10_000


@dataclass(frozen=True)
class TBTrial:
    path: Path
    relative: str  # below the root read, POSIX form
    trial_name: str
    task_id: str
    is_resolved: bool | None
    failure_mode: str | None
    parser_results: dict[str, str]
    agent_name: str | None
    model_name: str | None
    dataset: str | None  # "name@version" as the run recorded it
    run_id: str | None
    declared_complete: bool | None  # Terminus's last `is_task_complete`; None: no agent logs
    episodes: int
    started_at: datetime | None
    ended_at: datetime | None
    agent_started_at: datetime | None
    agent_ended_at: datetime | None
    input_tokens: int | None
    output_tokens: int | None
    instruction: str | None = None  # the request the trial was given, as results.json records it
    # How an installed agent's run ended when it declared nothing (tb_installed.py): it never
    # started, stopped at its cost limit, or stopped otherwise. None: Terminus's reading.
    undeclared_end: Termination | None = None


def _text(data: dict[str, Any] | None, key: str) -> str | None:
    value = data.get(key) if data else None
    return value if isinstance(value, str) and value else None


def _count(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _run_metadata(trial: Path, root: Path, cache: dict[Path, dict[str, Any] | None]) -> dict[str, Any] | None:
    for directory in [trial, *trial.parents]:
        if directory not in cache:
            data, _ = read_object(directory / RUN_METADATA)
            cache[directory] = data
        if cache[directory] is not None:
            return cache[directory]
        if directory == root:
            return None
    return None


def episode_dirs(trial: Path) -> list[Path]:
    """Terminus's `agent-logs/episode-N/` directories, in episode order."""
    logs = trial / "agent-logs"
    if not logs.is_dir():
        return []
    numbered = []
    for child in logs.iterdir():
        name = child.name
        if name.startswith("episode-") and name[8:].isdigit() and int(name[8:]) < MAX_EPISODES:
            numbered.append((int(name[8:]), child))
    return [episode for _, episode in sorted(numbered)]


def _episodes(trial: Path) -> list[dict[str, Any]]:
    """Terminus's answers (`agent-logs/episode-N/response.json`) in episode order."""
    answers = []
    for episode in episode_dirs(trial):
        data, _ = read_object(episode / "response.json")
        if data is not None:
            answers.append(data)
    return answers


def _model_of_logs(trial: Path) -> str | None:
    """The model Terminus's LLM client recorded (`agent-logs/episode-0/debug.json`, litellm)."""
    data, _ = read_object(trial / "agent-logs" / "episode-0" / "debug.json")
    model = _text(data, "model")
    provider = _text(data, "custom_llm_provider")
    if model and provider and not model.startswith(f"{provider}/"):
        return f"{provider}/{model}"
    return model


def read_trial(path: Path, root: Path, results: dict[str, Any],
               metadata_cache: dict[Path, dict[str, Any] | None]) -> TBTrial:
    metadata = _run_metadata(path, root, metadata_cache)
    episodes = _episodes(path)
    terminus = [answer for answer in episodes if "is_task_complete" in answer or "commands" in answer]
    declared = None
    if terminus:
        declared = terminus[-1].get("is_task_complete") is True
    agent = _text(metadata, "agent_name") or ("terminus" if terminus else None)
    model = _text(metadata, "model_name") or (_model_of_logs(path) if episodes else None)
    dataset = None
    if _text(metadata, "dataset_name"):
        version = _text(metadata, "dataset_version")
        dataset = f"{_text(metadata, 'dataset_name')}@{version}" if version else _text(metadata, "dataset_name")
    parser = results.get("parser_results")
    return TBTrial(
        path=path, relative=path.relative_to(root).as_posix() or ".",
        trial_name=str(results.get("trial_name")), task_id=str(results.get("task_id")),
        is_resolved=results.get("is_resolved") if isinstance(results.get("is_resolved"), bool) else None,
        failure_mode=_text(results, "failure_mode"),
        parser_results={str(k): str(v) for k, v in parser.items()} if isinstance(parser, dict) else {},
        agent_name=agent, model_name=model, dataset=dataset, run_id=_text(metadata, "run_id"),
        declared_complete=declared, episodes=len(episodes),
        started_at=parse_time(results.get("trial_started_at")), ended_at=parse_time(results.get("trial_ended_at")),
        agent_started_at=parse_time(results.get("agent_started_at")),
        agent_ended_at=parse_time(results.get("agent_ended_at")),
        input_tokens=_count(results, "total_input_tokens"), output_tokens=_count(results, "total_output_tokens"),
        instruction=_text(results, "instruction"),
    )


def read_runs(root: Path) -> tuple[list[TBTrial], list[tuple[Path, str]]]:
    """Every trial below `root` (trials, [(directory, why it cannot be read)]), in path order."""
    trials: list[TBTrial] = []
    problems: list[tuple[Path, str]] = []
    metadata_cache: dict[Path, dict[str, Any] | None] = {}
    for results_path in sorted(root.rglob(TRIAL_RESULTS)):
        directory = results_path.parent
        data, why = read_object(results_path)
        if data is None:
            if (directory / "commands.txt").is_file():
                problems.append((directory, why or "unreadable results.json"))
            continue
        if "results" in data and "task_id" not in data:
            continue  # the run's BenchmarkResults
        if not isinstance(data.get("task_id"), str) or not data.get("task_id"):
            problems.append((directory, "results.json names no task_id"))
            continue
        if not isinstance(data.get("trial_name"), str):
            data = {**data, "trial_name": directory.name}
        trials.append(read_trial(directory, root, data, metadata_cache))
    # A trial directory that never got its results.json (the trial did not finish).
    recorded = {trial.path for trial in trials} | {path for path, _ in problems}
    for commands in sorted(root.rglob("commands.txt")):
        if commands.parent not in recorded and not (commands.parent / TRIAL_RESULTS).exists():
            problems.append((commands.parent, "no results.json (the trial never finished)"))
    return trials, problems

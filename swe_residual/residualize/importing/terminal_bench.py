"""`swe-residual import terminal-bench RUNS_DIR --dataset DATASET --out WORK`: Terminal-Bench
trials as Stage I runs.

Terminal-Bench's trial directories (tb_trials.py: `results.json` with `is_resolved` and
`failure_mode`, `commands.txt`, `sessions/agent.cast`, `panes/`, Terminus's `agent-logs/`)
become predecessor runs, written by `importing.runs` in the layout `residualize generate`
writes. Each trial is matched to its dataset task by the `task_id` it recorded; its final state
is the keystrokes it typed (tb_keys.py), in the keystroke form of `commands.jsonl`, timed by
its `.cast` when it has one; Terminus's logged turns are its trajectory (tb_trajectory.py), shown
to Stage III's reviewers. An installed agent that tb_installed.py can read back (mini-swe-agent)
has its actions, from its recorded terminal, in the tool-call form instead, and its printed
steps as the trajectory. A trial with no keys of its own, of an agent that ran inside one
command and is not registered there, or whose actions cannot be recovered exactly, is imported
without a final state (Stage II: `no_final_state`, its cause counted); trials of tasks not
in the dataset and trials that cannot be read are listed and counted. A trial of a task the
dataset holds but cannot load is counted apart (`unloadable_tasks`), never as a task the dataset
does not have: the funnel's "runs of the dataset's tasks" must not shrink silently when a task
folder is broken. None of it stops the import, as long as one trial is of a dataset task.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.task import Task
from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.harbor.jobs import outcome_of
from swe_residual.dataset.harbor_layout import format_time
from swe_residual.residualize.importing.runs import (ImportedRun, ImportSummary, TaskIndex, name_predecessors, run_record,
                                        write_stage_one)
from swe_residual.residualize.harbor.tool_calls import interactions_jsonl
from swe_residual.residualize.importing.tb_installed import InstalledRun, read_installed_run
from swe_residual.residualize.importing.tb_keys import read_trial_keys
from swe_residual.residualize.importing.tb_trajectory import terminus_trajectory
from swe_residual.residualize.importing.tb_trials import TBTrial, read_runs
from swe_residual.trial.record_model import HARNESS_FIELDS, AgentConfig, Attempt, Durations, Tokens
from swe_residual.dataset.values import Outcome, Termination, Track

SPEC_PREFIX = "terminal-bench:"
NAME_FROM = ("agent+model", "agent", "model")

# Terminal-Bench's FailureMode -> how the agent's run ended. `unset`/`none`: the agent's run
# ended by itself (Terminus: it said the task was complete, or ran out of turns).
FINISHED = frozenset({"unset", "none"})
# The agent finished, then the tests could not be graded: submitted, no valid verdict.
TESTS_FAILED = frozenset({"test_timeout", "parse_error"})
AGENT_FAILED = frozenset({"unknown_agent_error", "fatal_llm_parse_error", "context_length_exceeded",
                          "output_length_exceeded"})


def termination_of(trial: TBTrial) -> Termination:
    mode = (trial.failure_mode or "unset").lower()
    if mode == "agent_timeout":
        return Termination.TIME_LIMIT
    if mode in AGENT_FAILED:
        return Termination.AGENT_ERROR
    if mode in FINISHED or mode in TESTS_FAILED:
        # Terminus's own answer says whether it declared completion; without agent logs the
        # run's clean end is the only declaration there is.
        if trial.declared_complete is False:
            return trial.undeclared_end or Termination.STEP_LIMIT
        return Termination.SUBMITTED
    return Termination.INFRA_ERROR  # agent installation, the harness, or a mode not known here


def reward_of(trial: TBTrial) -> float | None:
    mode = (trial.failure_mode or "unset").lower()
    if trial.is_resolved is None or mode in TESTS_FAILED:
        return None
    return 1.0 if trial.is_resolved else 0.0


def identity_of(trial: TBTrial, name_from: str) -> str:
    agent = trial.agent_name or "unknown-agent"
    if name_from == "agent":
        return agent
    if name_from == "model":
        return trial.model_name or agent
    return f"{agent}+{trial.model_name}" if trial.model_name else agent


def task_version(task: Task) -> str | None:
    for key in ("dataset_version", "version", "source_version"):
        value = task.config.metadata.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    return None


def _tests(trial: TBTrial) -> dict[str, str] | None:
    return dict(sorted(trial.parser_results.items())) or None


def _durations(trial: TBTrial) -> Durations:
    def seconds(start: Any, end: Any) -> float | None:
        return (end - start).total_seconds() if start and end else None
    return Durations(agent_sec=seconds(trial.agent_started_at, trial.agent_ended_at),
                     total_sec=seconds(trial.started_at, trial.ended_at))


def with_installed_run(trial: TBTrial, installed: InstalledRun | None) -> TBTrial:
    """The trial as its installed agent's recorded terminal tells it (agent, model, steps, whether
    it declared the task done and, if not, how it ended)."""
    if installed is None:
        return trial
    if installed.declared_complete is None:
        # Nothing recorded what the agent did: the harness's reading of the trial stands.
        return replace(trial, agent_name=installed.agent, model_name=installed.model or trial.model_name)
    if installed.refused is not None and installed.actions == 0 and "never started" in installed.refused:
        end = Termination.INFRA_ERROR  # the agent's installation failed: nothing of it ran
    else:
        end = Termination.COST_LIMIT if installed.cost_limited else Termination.AGENT_ERROR
    return replace(trial, agent_name=installed.agent, model_name=installed.model or trial.model_name,
                   declared_complete=installed.declared_complete, episodes=installed.actions, undeclared_end=end)


def refusal_kind(why: str) -> str:
    """A refusal in a few words, the same for the same cause: no step number, no detail."""
    return re.sub(r"^step \d+: ", "", why).split(":", 1)[0].strip()


def _installed_final_state(installed: InstalledRun, trial: TBTrial, provenance: dict[str, Any],
                           facts: dict[str, Any]) -> tuple[bytes | None, str | None, str | None]:
    """(commands.jsonl, why not, why not in a few words) of an installed agent's run."""
    provenance["tool_calls"] = installed.counts
    provenance["declared_done"] = installed.declared_complete
    facts.update({"launch": installed.launch, "actions": installed.actions})
    if installed.refused is not None:
        return (None, f"{trial.relative}: {installed.agent}: {installed.refused}",
                f"{installed.agent}: {refusal_kind(installed.refused)}")
    provenance["commands"] = f"{installed.source} ({installed.agent}'s actions as it printed them)"
    return interactions_jsonl(installed.interactions), None, None


def _run(trial: TBTrial, task: Task, identity: str, source: str, command: str,
         installed: InstalledRun | None = None) -> ImportedRun:
    termination = termination_of(trial)
    reward = reward_of(trial)
    outcome = outcome_of(termination, reward)
    valid = outcome != Outcome.INFRA_ERROR
    error = None
    if termination != Termination.SUBMITTED or not valid:
        error = f"failure_mode: {trial.failure_mode or 'unset'}"
        if installed is not None and termination == trial.undeclared_end:
            # The harness saw a clean end; the agent's own record says how it really ended.
            error += "; " + (refusal_kind(installed.refused) if "never started" in (installed.refused or "")
                             else f"{installed.agent} stopped without declaring the task done")
    durations = _durations(trial)
    record = run_record(task, trial.agent_name or identity, f"terminal-bench:{trial.relative}").model_copy(update=dict(
        outcome=outcome, reward=reward if valid else None,
        submitted=termination == Termination.SUBMITTED, termination=termination, tests=_tests(trial),
        attempts=(Attempt(attempt=1, outcome=outcome, termination=termination, error=error, reverified=False, durations=durations),),
        durations=durations, steps=trial.episodes or None,  # one step per Terminus turn
        agent_config=AgentConfig.hashed({"agent": trial.agent_name, "model": trial.model_name}),
        tokens=(Tokens(prompt=trial.input_tokens, completion=trial.output_tokens)
                if trial.input_tokens is not None and trial.output_tokens is not None else None),
        error=error, absent=HARNESS_FIELDS,
    ))
    provenance: dict[str, Any] = {"kind": "terminal-bench", "source": source, "trial": trial.relative,
                                  "command": command}
    moment = trial.ended_at or trial.started_at
    if moment is not None:
        provenance["date"] = format_time(moment)
    if trial.dataset:
        provenance["task_version"] = trial.dataset
    commands, unrecoverable, pane, kind = None, None, None, None
    keys = read_trial_keys(trial.path) if task.track != Track.REPO and installed is None else None
    facts: dict[str, Any] = {
        "trial_name": trial.trial_name, "task_id": trial.task_id, "agent": trial.agent_name,
        "model": trial.model_name, "dataset": trial.dataset, "run_id": trial.run_id,
        "is_resolved": trial.is_resolved, "failure_mode": trial.failure_mode,
        "declared_complete": trial.declared_complete, "episodes": trial.episodes,
        "started_at": format_time(trial.started_at) if trial.started_at else None,
        "ended_at": format_time(trial.ended_at) if trial.ended_at else None,
        "instruction": trial.instruction,
    }
    if task.track == Track.REPO:
        unrecoverable = (f"{task.track} track: {trial.relative} recorded keystrokes, not a patch of the repository "
                         "at its base commit")
        kind = "keystrokes on a repo-track task"
    elif installed is not None:
        commands, unrecoverable, kind = _installed_final_state(installed, trial, provenance, facts)
    elif isinstance(keys, str):
        unrecoverable, kind = f"{trial.relative}: {keys}", refusal_kind(keys)
    elif keys is not None:
        commands = keys.commands_jsonl()
        provenance["commands"] = "commands.txt" + (" + sessions/agent.cast" if keys.timing == "cast" else "")
        if (trial.path / "panes" / "post-agent.txt").is_file():
            # The recorded end of the agent's pane, for comparing a replay with (states/pane_fidelity.py).
            provenance["pane"] = "panes/post-agent.txt"
            pane = (trial.path / "panes" / "post-agent.txt").read_bytes()
        facts.update({"keystroke_lines": keys.lines, "typed_after_tests": keys.after_tests, "timing": keys.timing})
    trajectory = (installed.trajectory if installed is not None
                  else terminus_trajectory(trial.path, trial.agent_name or identity))
    return ImportedRun(task, identity, record, None, unrecoverable, provenance, trajectory, facts, commands, pane,
                       kind)


def import_terminal_bench(runs_dir: Path | str, dataset_path: Path | str, out: Path | str, *,
                          name_from: str = "agent+model", agent: str | None = None, model: str | None = None,
                          trust_wraps: bool = False,
                          progress: Callable[[str], None] = print,
                          warn: Callable[[str], None] = lambda line: print(f"warning: {line}", file=sys.stderr),
                          ) -> ImportSummary:
    if name_from not in NAME_FROM:
        raise ConfigError(f"--predecessor-name-from {name_from!r}: one of {', '.join(NAME_FROM)}")
    root = Path(runs_dir)
    if not root.is_dir():
        raise ConfigError(f"{root}: no such directory (a Terminal-Bench run directory, or a directory of them)")
    dataset = load_dataset(dataset_path)
    broken = {name: str(error) for name, error in dataset.task_errors}
    for name, error in broken.items():
        warn(f"dataset task {name} cannot be loaded, its trials are skipped: {error}")
    command = (f"swe-residual import terminal-bench {shlex.quote(str(runs_dir))} --dataset "
               f"{shlex.quote(str(dataset_path))} --predecessor-name-from {name_from}"
               + (f" --agent {shlex.quote(agent)}" if agent else "") + (f" --model {shlex.quote(model)}" if model else "")
               + (" --trust-wraps" if trust_wraps else ""))
    trials, unreadable = read_runs(root)
    if not trials and not unreadable:
        raise ConfigError(f"{root}: no Terminal-Bench trial directories (with a results.json naming a task_id) found")
    problems: list[tuple[Path, str]] = list(unreadable)
    index = TaskIndex(dataset)
    unknown: Counter[str] = Counter()
    unloadable: Counter[str] = Counter()
    matched: list[tuple[TBTrial, Task, str]] = []
    installed_runs: dict[Path, InstalledRun] = {}
    for trial in trials:
        trial = replace(trial, agent_name=trial.agent_name or agent, model_name=trial.model_name or model)
        task = index.find(trial.task_id)
        installed = (read_installed_run(trial.path, trust_wraps) if task is not None and task.track != Track.REPO
                     else None)
        if installed is not None:
            installed_runs[trial.path] = installed
            trial = with_installed_run(trial, installed)
        if task is None and trial.task_id in broken:
            unloadable[trial.task_id] += 1
            problems.append((trial.path, f"task {trial.task_id} is in {dataset_path} but cannot be loaded: "
                                         f"{broken[trial.task_id]}"))
            continue
        if task is None:
            unknown[trial.task_id] += 1
            problems.append((trial.path, f"task {trial.task_id} is not in {dataset_path}"))
            continue
        version = task_version(task)
        recorded = trial.dataset.rsplit("@", 1)[-1] if trial.dataset and "@" in trial.dataset else None
        if version and recorded and version != recorded:
            # Imported all the same: Stage IV keeps a state only if it validates on the task as it is.
            problems.append((trial.path, f"ran {trial.task_id} of {trial.dataset}; the dataset's task is version "
                                         f"{version} (imported; Stage IV validates it on the task as it is)"))
        matched.append((trial, task, identity_of(trial, name_from)))
    if not matched:
        for path, reason in problems:
            warn(f"{path}: {reason}")
        raise ConfigError(f"{root}: none of the {len(trials)} readable trial(s) is of a task in {dataset_path}")
    names = name_predecessors((identity for _, _, identity in matched), lambda identity: identity.split("+", 1))
    matched.sort(key=lambda item: (item[1].id, names[item[2]],
                                   item[0].started_at.timestamp() if item[0].started_at else float("inf"),
                                   item[0].relative))
    runs = [_run(trial, task, identity, str(runs_dir), command, installed_runs.get(trial.path))
            for trial, task, identity in matched]
    for path, reason in problems:
        warn(f"{path}: {reason}")
    for run in runs:
        if not run.recoverable:
            warn(f"no final state: {run.unrecoverable}")
    dates = sorted(run.provenance["date"] for run in runs if "date" in run.provenance)

    def relative(path: Path) -> str:
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

    import_info = {
        "kind": "terminal-bench", "source": str(runs_dir), "command": command, "name_from": name_from,
        "trust_wraps": trust_wraps,
        "trials": len(trials) + len(unreadable), "runs": len(runs),
        "dates": {"first": dates[0], "last": dates[-1]} if dates else None,
        "unknown_tasks": dict(sorted(unknown.items())),
        "unloadable_tasks": dict(sorted(unloadable.items())),
        "no_final_state": sum(not run.recoverable for run in runs),
        "no_final_state_reasons": dict(sorted(Counter(run.unrecoverable_kind for run in runs
                                                      if not run.recoverable and run.unrecoverable_kind).items())),
        "installed_agents": dict(sorted(Counter(run.agent for run in installed_runs.values()).items())),
        "problems": [f"{relative(path)}: {reason}" for path, reason in problems],
    }
    refs = write_stage_one(out, dataset_path, runs, names, spec_prefix=SPEC_PREFIX, import_info=import_info,
                           progress=progress)
    return ImportSummary(refs, {name: identity for identity, name in names.items()}, dict(unknown),
                         sum(not run.recoverable for run in runs), [f"{path}: {reason}" for path, reason in problems])


def _command(args: argparse.Namespace) -> int:
    import_terminal_bench(args.runs_dir, args.dataset, args.out, name_from=args.predecessor_name_from,
                          agent=args.agent, model=args.model, trust_wraps=args.trust_wraps)
    return 0


def register(sources: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sources.add_parser(
        "terminal-bench",
        help="Terminal-Bench run directories -> Stage I runs of `residualize` (filter, review, build next)")
    parser.add_argument("runs_dir", metavar="RUNS_DIR",
                        help="a Terminal-Bench run directory, or any directory of trial directories")
    parser.add_argument("--dataset", required=True, help="the dataset whose tasks the trials ran")
    parser.add_argument("--out", required=True, metavar="WORK", help="the residualization work directory")
    parser.add_argument("--predecessor-name-from", choices=NAME_FROM, default="agent+model",
                        help="what names a predecessor (default agent+model)")
    parser.add_argument("--agent", help="the agent, for trials whose run records none (no run_metadata.json "
                                        "and no Terminus agent logs)")
    parser.add_argument("--model", help="the model, for trials whose run records none")
    parser.add_argument("--trust-wraps", action="store_true",
                        help="installed agents' casts: read a row that ends with a space before a word that would not "
                             "have fitted as the printer's wrap (it may also be a line that ended with spaces; "
                             "counted per run, and an action whose heredoc that leaves unclosed is still refused)")
    parser.set_defaults(func=_command)

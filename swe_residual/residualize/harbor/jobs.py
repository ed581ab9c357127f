"""`swe-residual import harbor-jobs JOBS_DIR --dataset DATASET --out WORK`: Harbor trials as Stage I runs.

Each trial of a task in DATASET becomes one predecessor run (`importing.runs` writes them in
Stage I's layout): the predecessor is the trial's agent and model, its termination and
whether it submitted come from the trial's exception type (`termination_of`), its verdict from
the verifier's rewards, its trajectory from `agent/trajectory.json` (ATIF), and its final
state from the collected patch artifact (DeepSWE: `/logs/artifacts/model.patch`) on the repo
track, and on the machine track from the keystrokes a Terminus-2 trial sent (harbor/terminus.py:
`commands.jsonl` in the keystroke form, replayed through tmux) or, for an agent that acted
through tools (OpenClaw), from its tool calls (harbor/tool_calls.py: commands, file writes and
edits, each command with the output it showed; such a trial submitted only when its last turn
called no tool), or, without a trajectory, from the bash calls of an agent that logs its turns as
episodes (harbor/episode_tools.py: ktb-openrouter's `agent/episodes/episode-N/`). A trial without either is imported with no final state and excluded by Stage
II (`no_final_state`). A trial is matched to its task by Harbor's task path and checksum
(`trial_task`); a mismatch is reported, never imported, unless `--other-task-versions` asks for
trials of another version of a dataset task (the mismatch recorded in the run's provenance). Trials of tasks not in DATASET are counted and skipped; trials that cannot be read
are reported with their directory.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.errors import ConfigError
from swe_residual.agents.atif import read_atif
from swe_residual.dataset.harbor_layout import MAX_DEPTH, HarborTrial, format_time, read_jobs
from swe_residual.residualize.harbor.match import Checksums, export_source, local_task_dir, pick
from swe_residual.residualize.importing.runs import (ImportedRun, ImportSummary, TaskIndex, name_predecessors, run_record,
                                        write_stage_one)
from swe_residual.residualize.harbor.terminus import PANE_HEIGHT, PANE_LOG, PANE_WIDTH, read_keystrokes, recorded_screen
from swe_residual.residualize.harbor.tool_calls import interactions_jsonl
from swe_residual.residualize.harbor.episode_tools import read_any_tool_calls
from swe_residual.dataset.task import Task
from swe_residual.trial.record_model import HARNESS_FIELDS, AgentConfig, Attempt, Durations, Tokens
from swe_residual.dataset.values import Outcome, Termination, Track
from swe_residual.environments.verifier.outputs import read_test_reports

NAME_FROM = ("agent+model", "agent", "model")
DEFAULT_PATCH = "/logs/artifacts/model.patch"  # DeepSWE's collected patch
SPEC_PREFIX = "harbor:"
MAX_REPORT_BYTES = 50 * 1024 * 1024

# Harbor's exception types (`ExceptionInfo.exception_type`, grouped as in its error policy)
# -> how the agent's run ended, in the suite's terminations. No exception: the agent ended
# its run itself, which is Harbor's only way of declaring the task done.
TIME_LIMIT = frozenset({"AgentTimeoutError"})
COST_LIMIT = frozenset({"BudgetExceededError"})
AGENT_ERROR = frozenset({
    "NonZeroAgentExitCodeError",
    # the scaffold's context or output ran out: the agent stopped without declaring completion
    "ContextWindowExceededError", "ContextLengthExceededError", "OutputTokenExceededError",
    "OutputLengthExceededError",
    # the model refused the task
    "AgentSafetyRefusalError", "ContentPolicyViolationError",
})
# The agent finished; then the verifier failed. The run submitted, but has no valid verdict.
VERIFIER_FAILED = frozenset({"VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError",
                             "VerifierOutputParseError"})


def termination_of(exception_type: str | None) -> Termination:
    """submitted / time_limit / cost_limit / agent_error / infra_error.

    Everything not named above is the machinery's failure (sandbox, model provider, Harbor
    itself, cancellation) or of unknown cause: `infra_error`, never charged to the agent.
    """
    if exception_type is None or exception_type in VERIFIER_FAILED:
        return Termination.SUBMITTED
    if exception_type in TIME_LIMIT:
        return Termination.TIME_LIMIT
    if exception_type in COST_LIMIT:
        return Termination.COST_LIMIT
    if exception_type in AGENT_ERROR:
        return Termination.AGENT_ERROR
    return Termination.INFRA_ERROR


def outcome_of(termination: str, reward: float | None) -> Outcome:
    """As the suite scores a run: no valid verdict is infra; success needs a submission."""
    if termination == Termination.INFRA_ERROR or reward is None or reward < 0:
        return Outcome.INFRA_ERROR
    return Outcome.SUCCESS if termination == Termination.SUBMITTED and reward >= 1.0 else Outcome.FAILURE


def identity_of(trial: HarborTrial, name_from: str) -> str:
    agent = trial.agent_name or "unknown-agent"
    if name_from == "agent":
        return agent
    if name_from == "model":
        return trial.model_name or agent
    return f"{agent}+{trial.model_name}" if trial.model_name else agent


def _identity_parts(identity: str) -> list[str]:
    return identity.split("+", 1)


def _patch_sources(task: Task) -> list[tuple[str, str | None]]:
    """The task's declared `.patch` artifacts (source, destination), else DeepSWE's."""
    declared = [(spec.source, spec.destination) for spec in task.config.artifacts if spec.source.endswith(".patch")]
    return declared or [(DEFAULT_PATCH, None)]


def trial_tests(trial: HarborTrial) -> dict[str, str] | None:
    files: dict[str, bytes] = {}
    if trial.verifier_dir.is_dir():
        for path in sorted(trial.verifier_dir.iterdir()):
            if path.is_file() and not path.is_symlink() and path.suffix in (".xml", ".json") \
                    and path.stat().st_size <= MAX_REPORT_BYTES:
                files[path.name] = path.read_bytes()
    tests, _ = read_test_reports(files)
    return dict(sorted(tests.items())) or None


def tests_did_not_run(trial: HarborTrial, test_sh: Path, tests: dict[str, str] | None) -> str | None:
    """Why a trial's reward is no verdict though the verifier wrote one, else None.

    A Terminal-Bench test.sh installs its tools (curl, uv) and then runs pytest with a CTRF
    report; when the installation fails it still writes reward 0, with no test run. A task whose
    test.sh (``test_sh``) writes a CTRF report and a trial whose verifier left none: its tests did
    not run. Both readers of Harbor trials use it: Stage I's import and `import harbor-results`."""
    if tests is not None or trial.reward is None or not test_sh.is_file():
        return None
    if "ctrf" not in test_sh.read_text(encoding="utf-8", errors="replace"):
        return None
    stdout = trial.verifier_dir / "test-stdout.txt"
    last = ""
    if stdout.is_file():
        lines = [line for line in stdout.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        last = f" (its output ends: {lines[-1].strip()[:200]!r})" if lines else ""
    return ("the verifier's tests did not run: the task's test.sh writes a CTRF report and this trial's "
            f"verifier left none{last}; its reward {trial.reward:g} is no verdict")


def _seconds(started: datetime | None, finished: datetime | None) -> float | None:
    return (finished - started).total_seconds() if started and finished else None


def trial_durations(trial: HarborTrial) -> Durations:
    setup = [trial.phase_seconds(p) for p in ("environment_setup", "agent_setup")]
    values = {
        "setup_sec": sum(s for s in setup if s is not None) if any(s is not None for s in setup) else None,
        "agent_sec": trial.phase_seconds("agent_execution"),
        "verify_sec": trial.phase_seconds("verifier"),
        "total_sec": _seconds(trial.started_at, trial.finished_at),
    }
    return Durations(**values)  # a phase Harbor did not time is None, and not written


def _run(trial: HarborTrial, task: Task, identity: str, source: str, command: str,
         problems: list[tuple[Path, str, str]], version_note: str | None = None) -> ImportedRun:
    termination = termination_of(trial.exception_type)
    # Machine track: the keystrokes a Terminus-2 trial sent, else the tool calls of one that acted
    # through tools (harbor/tool_calls.py). Either says whether the agent declared the task done
    # (harbor/declared.py): Terminus's task_complete, a final message reporting the work.
    keys = read_keystrokes(trial.path) if task.track != Track.REPO else None
    # No keystrokes: the ATIF trajectory's tool calls, else an agent's episodes (harbor/episode_tools.py).
    tools = read_any_tool_calls(trial.path) if task.track != Track.REPO and keys is None else None
    declared: tuple[bool, str] | None = None
    if keys is not None and keys.declaration is not None:
        declared = (keys.declaration.declared, keys.declaration.how)
    elif tools is not None:
        declared = (tools.declared_done, tools.declared_how)
    undeclared = declared is not None and not declared[0] and termination == Termination.SUBMITTED
    if undeclared:
        termination = Termination.AGENT_ERROR
    reward = trial.reward
    tests = trial_tests(trial)
    untested = tests_did_not_run(trial, task.tests_dir / "test.sh", tests)
    outcome = Outcome.INFRA_ERROR if untested else outcome_of(termination, reward)
    error = None
    if trial.exception_type:
        error = f"{trial.exception_type}: {(trial.exception_message or '').strip()}"[:2000]
    elif untested:
        error = untested
    elif outcome == Outcome.INFRA_ERROR:
        error = "no verifier reward in result.json"
    elif undeclared:
        error = f"it stopped without declaring the task done: {declared[1] if declared else ''}"
    trajectory = None
    if trial.trajectory_path is not None:
        trajectory, why = read_atif(trial.trajectory_path, trial.agent_name or identity)
        if why:
            problems.append((trial.path, trial.relative,
                             f"agent/trajectory.json: {why} (imported without a trajectory)"))
    durations = trial_durations(trial)
    valid = outcome != Outcome.INFRA_ERROR
    record = run_record(task, trial.agent_name or identity, f"harbor:{trial.relative}").model_copy(update=dict(
        outcome=outcome,
        reward=reward if valid else None,
        rewards=trial.rewards if valid else None,
        submitted=termination == Termination.SUBMITTED,
        termination=termination,
        tests=tests,
        attempts=(Attempt(attempt=1, outcome=outcome, termination=termination, error=error, reverified=False, durations=durations),),
        durations=durations,
        agent_config=AgentConfig.hashed({"agent": trial.agent_name, "version": trial.agent_version,
                                         "model": trial.model_name}),
        cost=trial.cost_usd,
        tokens=(Tokens(prompt=trial.n_input_tokens, completion=trial.n_output_tokens)
                if trial.n_input_tokens is not None and trial.n_output_tokens is not None else None),
        message=trajectory.final_message[-2000:] if trajectory and trajectory.final_message else None,
        error=error,
        absent=HARNESS_FIELDS,  # the agent's configuration is Harbor's
    ))
    moment = trial.finished_at or trial.started_at
    provenance: dict[str, Any] = {"kind": "harbor-jobs", "source": source, "trial": trial.relative,
                                  "command": command}
    if moment is not None:
        provenance["date"] = format_time(moment)
    patch, commands, unrecoverable, pane = None, None, None, None
    if version_note:
        provenance["task_version"] = version_note
    if task.track != Track.REPO:
        if declared is not None:
            provenance["declared_done"], provenance["declared_how"] = declared
        if keys is not None:  # every keystroke a Terminus-2 trial sent: replayable through tmux
            commands = interactions_jsonl(keys.interactions)
            provenance["commands"] = keys.source
            pane = recorded_screen(trial.path)
            if pane is not None:
                provenance["pane"] = f"{PANE_LOG} (rendered on a {PANE_WIDTH}x{PANE_HEIGHT} terminal)"
        elif tools is not None:
            provenance["commands"] = tools.source
            provenance["tool_calls"] = tools.counts
            if tools.refused is not None:
                unrecoverable = f"{task.track} track: {trial.relative}: {tools.refused}"
            else:
                commands = interactions_jsonl(tools.interactions)
        else:
            unrecoverable = (f"{task.track} track: {trial.relative} recorded no keystrokes (Terminus-2's "
                             "bash_command calls in agent/trajectory.json, or agent/episode-N/response.txt) "
                             "and no tool calls (agent/trajectory.json, agent/episodes/episode-N/, "
                             "agent/thinharness-events.jsonl, agent/pi-events.jsonl), so nothing "
                             "replays the agent's interactions with the machine")
    else:
        for wanted, destination in _patch_sources(task):
            found = trial.artifact(wanted, destination)
            if found is not None:
                patch = found.read_bytes()
                provenance["patch"] = found.relative_to(trial.path).as_posix()
                break
        if patch is None:
            names = ", ".join(wanted for wanted, _ in _patch_sources(task))
            unrecoverable = f"no collected patch artifact ({names}) in {trial.relative}/artifacts"
    facts = {"trial_name": trial.trial_name, "task_name": trial.task_name, "agent": trial.agent_name,
             "agent_version": trial.agent_version, "model": trial.model_name,
             "exception_type": trial.exception_type, "rewards": trial.rewards,
             "started_at": format_time(trial.started_at) if trial.started_at else None,
             "finished_at": format_time(trial.finished_at) if trial.finished_at else None}
    return ImportedRun(task, identity, record, patch, unrecoverable, provenance, trajectory, facts, commands,
                       recorded_pane=pane)


def trial_task(trial: HarborTrial, index: TaskIndex, by_dir: dict[Path, Task],
               checksums: Checksums) -> tuple[Task | None, str | None]:
    """(the dataset task the trial ran, None) or (None, why it is not matched); (None, None)
    when it ran a task the dataset does not have.

    By Harbor's task path and checksum (harbor_match.py): the recorded directory when it is
    here (a dataset task, or a Clean Start that `export harbor` wrote), else the dataset's task
    of the trial's name, whose content must be what the trial ran. A trial of an exported
    Residual State is not a Clean Start run of its task, and is reported as such.
    """
    local = local_task_dir(trial)
    if local is not None:
        source = export_source(local)
        if source is not None and source[1] is not None:
            return None, (f"it ran the exported Residual State {source[0]}/{source[1]} ({local}), not a Clean Start: "
                          "read it with `swe-residual report --harbor-jobs`")
        task = index.find(source[0]) if source is not None else by_dir.get(local.resolve())
        if task is not None:
            _, why = pick(trial, [(local, source is None)], checksums)
            return (task, None) if not why else (None, why)
    task = index.find(trial.task_name, trial.task_path)
    if task is None:
        return None, None
    _, why = pick(trial, [(task.path, True)], checksums)
    return (task, None) if not why else (None, why)


def import_harbor_jobs(jobs_dir: Path | str, dataset_path: Path | str, out: Path | str, *,
                       name_from: str = "agent+model", other_versions: bool = False,
                       progress: Callable[[str], None] = print,
                       warn: Callable[[str], None] = lambda line: print(f"warning: {line}", file=sys.stderr),
                       ) -> ImportSummary:
    if name_from not in NAME_FROM:
        raise ConfigError(f"--predecessor-name-from {name_from!r}: one of {', '.join(NAME_FROM)}")
    root = Path(jobs_dir)
    if not root.is_dir():
        raise ConfigError(f"{root}: no such directory (a Harbor job directory, or a directory of them)")
    dataset = load_dataset(dataset_path)
    for name, error in dataset.task_errors:
        warn(f"dataset task {name} cannot be loaded, its trials are skipped: {error}")
    # The command as typed, less --out: where the output went is not part of the provenance
    # (two imports of the same input into two work directories write the same bytes).
    command = (f"swe-residual import harbor-jobs {shlex.quote(str(jobs_dir))} --dataset "
               f"{shlex.quote(str(dataset_path))} --predecessor-name-from {name_from}"
               + (" --other-task-versions" if other_versions else ""))
    jobs = read_jobs(root)
    if not jobs.trials and not jobs.problems:
        raise ConfigError(f"{root}: no Harbor trial directories (with a result.json) found within {MAX_DEPTH} "
                          "levels of it: give the directory holding the jobs")
    # (path, path relative to JOBS_DIR, reason): printed with the path, recorded relative.
    problems = [(problem.path, problem.relative, problem.reason) for problem in jobs.problems]
    for problem in jobs.problems:
        warn(f"trial not imported: {problem.path}: {problem.reason}")
    index = TaskIndex(dataset)
    by_dir = {entry.task.path.resolve(): entry.task for entry in dataset.entries}
    checksums = Checksums()
    unknown: Counter[str] = Counter()
    matched: list[tuple[HarborTrial, Task, str]] = []
    versions: dict[str, str] = {}  # trial -> which version of its task it ran, when not the dataset's
    for trial in jobs.trials:
        task, problem = trial_task(trial, index, by_dir, checksums)
        named = index.find(trial.task_name, trial.task_path) if problem is not None and other_versions else None
        if named is not None and trial.task_checksum and local_task_dir(trial) is None:
            # Another version of a dataset task: imported with the mismatch said; Stage IV keeps
            # a state of it only when it validates on the task as the dataset has it.
            versions[trial.relative] = (f"another version of the task (task_checksum {trial.task_checksum[:16]}): "
                                        f"{problem}; validated on the dataset's version")
            warn(f"{trial.path}: {versions[trial.relative]}")
            matched.append((trial, named, identity_of(trial, name_from)))
        elif problem is not None:
            problems.append((trial.path, trial.relative, f"not imported: {problem}"))
            warn(f"trial not imported: {trial.path}: {problem}")
        elif task is None:
            unknown[trial.task_name] += 1
        else:
            matched.append((trial, task, identity_of(trial, name_from)))
    reported = len(problems)
    if unknown:
        warn(f"{sum(unknown.values())} trial(s) of {len(unknown)} task(s) not in {dataset_path} skipped: "
             + ", ".join(sorted(unknown)))
    if not matched:
        raise ConfigError(f"{root}: none of the {len(jobs.trials)} readable trial(s) is of a task in {dataset_path}")
    names = name_predecessors((identity for _, _, identity in matched), _identity_parts)
    # Attempts in the order the trials started (then by directory), per task and predecessor.
    matched.sort(key=lambda item: (item[1].id, names[item[2]],
                                   item[0].started_at.timestamp() if item[0].started_at else float("inf"),
                                   item[0].relative))
    runs = [_run(trial, task, identity, str(jobs_dir), command, problems, versions.get(trial.relative))
            for trial, task, identity in matched]
    for path, _, reason in problems[reported:]:
        warn(f"{path}: {reason}")
    dates = sorted(run.provenance["date"] for run in runs if "date" in run.provenance)
    import_info = {
        "kind": "harbor-jobs", "source": str(jobs_dir), "command": command, "name_from": name_from,
        "trials": len(jobs.trials) + len(jobs.problems), "runs": len(runs),
        "dates": {"first": dates[0], "last": dates[-1]} if dates else None,
        "unknown_tasks": dict(sorted(unknown.items())),
        "problems": [f"{relative}: {reason}" for _, relative, reason in problems],
    }
    refs = write_stage_one(out, dataset_path, runs, names, spec_prefix=SPEC_PREFIX, import_info=import_info,
                           progress=progress)
    return ImportSummary(refs, {name: identity for identity, name in names.items()}, dict(unknown),
                         sum(not run.recoverable for run in runs),
                         [f"{path}: {reason}" for path, _, reason in problems])


def _command(args: argparse.Namespace) -> int:
    import_harbor_jobs(args.jobs_dir, args.dataset, args.out, name_from=args.predecessor_name_from,
                       other_versions=args.other_task_versions)
    return 0


def register(sources: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sources.add_parser(
        "harbor-jobs", help="Harbor job directories -> Stage I runs of `residualize` (filter, review, build next)")
    parser.add_argument("jobs_dir", metavar="JOBS_DIR", help="a Harbor job directory, or a directory of them")
    parser.add_argument("--dataset", required=True, help="the dataset whose tasks the trials ran")
    parser.add_argument("--out", required=True, metavar="WORK", help="the residualization work directory")
    parser.add_argument("--predecessor-name-from", choices=NAME_FROM, default="agent+model",
                        help="what names a predecessor (default agent+model)")
    parser.add_argument("--other-task-versions", action="store_true",
                        help="also import trials of a dataset task whose recorded task_checksum differs (another "
                             "version of it), the mismatch recorded; Stage IV validates them on the dataset's version")
    parser.set_defaults(func=_command)

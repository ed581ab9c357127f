"""Harbor's trial results for exported starts, read back as the suite's run records.

`swe-residual export harbor` writes one Harbor task per start, each naming its source in
`[metadata] swe_residual_*` (harbor/export_toml.py). After `harbor run` on such a directory, a
job directory holds one trial per (agent, exported task, attempt). This module turns each
trial into the run record a suite run of the same outcome would write (docs/records.md), so
`swe-residual report --harbor-jobs JOBS_DIR` prints the same summary, acceptance bias and
report.html.

How a trial maps (DESIGN §7): the agent is Harbor's agent name with the model when it has one;
Harbor's exception type gives the termination (harbor/jobs.py: time and cost limits
and the agent's own errors are the agent's; sandbox, model-provider and Harbor failures are
infrastructure); a verifier failure or a missing reward is an infrastructure failure (no valid
verdict); success needs a submission and reward 1. The final patch is the collected patch
artifact where the task collects one. A trial of a task without the metadata is not a start of
the suite: it is listed as a problem, never guessed; so is a trial whose exported directory's
content is not what it ran (Harbor's task checksum, harbor/match.py).

Several trials of one start by one agent: in a job run with Harbor's `-k N` (`n_attempts` above
1 in the job's config.json) each trial is a rollout of its own (`rollout` 0..N-1 in the order
the trials started, then by path; a later job's rollouts of the same start continue the count),
so the summary averages them as it does `--rollouts`; a trial without a valid verdict is a
rollout lost to infrastructure, excluded like the suite's own. Otherwise (one attempt per task)
they make one item: the first with a valid verdict, every trial listed in its `attempts`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from swe_residual.dataset.states.diffparse import changed_files
from swe_residual.residualize.harbor.export_states import PATCH_NAME
from swe_residual.agents.atif import read_atif
from swe_residual.residualize.harbor.jobs import (
    DEFAULT_PATCH, identity_of, outcome_of, termination_of, tests_did_not_run, trial_durations, trial_tests,
)
from swe_residual.dataset.harbor_layout import HarborTrial, read_jobs, read_object
from swe_residual.residualize.harbor.match import Checksums, local_task_dir, pick
from swe_residual.trial.steps.inspection import inspected, opened_files
from swe_residual.trial.record_model import HARNESS_FIELDS, AgentConfig, Attempt, RunRecord, Tokens, as_member
from swe_residual.trial.records import agent_slug, record_key
from swe_residual.dataset.values import Outcome, Start, Termination, Track

SOURCE_TASK_KEY = "swe_residual_source_task"


@dataclass(frozen=True)
class ExportedStart:
    """What an exported task's metadata says about its source start."""

    directory: Path
    task: str
    track: Track
    start: Start
    state: str | None
    predecessor: str | None
    workdir: str
    inherited_patch: str | None
    reference_files: list[str] | None
    patch_sources: tuple[str, ...]  # the collected artifacts that hold the final patch


@dataclass
class HarborRecords:
    records: list[RunRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None


def exported_start(directory: Path) -> ExportedStart | None:
    """The source start of an exported task directory, or None when it is not one."""
    try:
        config = tomllib.loads((directory / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    metadata = config.get("metadata") or {}
    if not isinstance(metadata, dict) or SOURCE_TASK_KEY not in metadata:
        return None
    state = metadata.get("swe_residual_source_state")
    solution = _read_text(directory / "solution" / "solution.patch")
    declared = [entry if isinstance(entry, str) else str((entry or {}).get("source", ""))
                for entry in config.get("artifacts") or [] if isinstance(entry, (str, dict))]
    return ExportedStart(
        directory=directory,
        task=str(metadata[SOURCE_TASK_KEY]),
        track=as_member(Track, str(metadata.get("track", Track.REPO))),
        start=as_member(Start, str(metadata.get("swe_residual_start", Start.RESIDUAL if state else Start.CLEAN))),
        state=str(state) if state else None,
        predecessor=metadata.get("swe_residual_predecessor"),
        workdir=str((config.get("environment") or {}).get("workdir") or "/app"),
        inherited_patch=_read_text(directory / "environment" / PATCH_NAME) if state else None,
        reference_files=sorted(changed_files(solution)) if solution else None,
        patch_sources=tuple(source for source in declared if source.endswith(".patch")) or (DEFAULT_PATCH,),
    )


def _locate(trial: HarborTrial, export_dirs: Iterable[Path],
            checksums: Checksums) -> tuple[ExportedStart | None, str | None]:
    """(the exported start the trial ran, None), or (None, why not) when a directory of its name
    is there but is not what it ran; (None, None) when no exported task has its path or name.

    By Harbor's task path and checksum (harbor/match.py): the recorded directory,
    else the export directories' task of the trial's name; a candidate is the trial's only when
    its content has the checksum result.json recorded."""
    local = local_task_dir(trial)
    names = {trial.task_name.rsplit("/", 1)[-1]}
    if trial.task_path:
        names.add(PurePosixPath(trial.task_path).name)
    candidates = ([local] if local is not None else []) + [
        root / name for root in export_dirs for name in sorted(names) if (root / name / "task.toml").is_file()]
    starts = [(directory, start) for directory in candidates if (start := exported_start(directory)) is not None]
    if not starts:
        return None, None
    chosen, why = pick(trial, [(directory, False) for directory, _ in starts], checksums)
    if chosen is None:
        return None, why
    return next(start for directory, start in starts if directory == chosen), None


def trial_record(trial: HarborTrial, source: ExportedStart, run_id: str, run_dir: Path, *,
                 rollout: bool = False) -> RunRecord:
    """One trial as the run record of its source start (``rollout``: one of several runs of the
    start, Harbor's `-k`, whose trajectory file is named by its trial)."""
    agent = identity_of(trial, "agent+model")
    reward = trial.reward
    termination = termination_of(trial.exception_type)
    tests = trial_tests(trial)
    untested = tests_did_not_run(trial, source.directory / "tests" / "test.sh", tests)
    outcome = Outcome.INFRA_ERROR if untested else outcome_of(termination, reward)
    valid = outcome != Outcome.INFRA_ERROR
    error = None
    if not valid:
        error = f"harbor: {untested or trial.exception_type or 'no valid reward'}"
        if not untested:
            error += f": {(trial.exception_message or '').strip()[:500]}"
    final_patch = None
    if source.track == Track.REPO:
        found = next((path for path in map(trial.artifact, source.patch_sources) if path is not None), None)
        final_patch = _read_text(found) if found is not None else None
    trajectory = None
    if trial.trajectory_path is not None:
        trajectory, _ = read_atif(trial.trajectory_path, agent)
    opened, inspected_any, steps_file = None, None, None
    if trajectory is not None:
        steps = [step.as_dict() for step in trajectory.steps]
        inherited = changed_files(source.inherited_patch) if source.inherited_patch else set()
        opened = tuple(sorted(opened_files(steps, set(source.reference_files or []) | inherited, root=source.workdir)))
        inspected_any = inspected(steps, inherited, root=source.workdir) if source.state else None
        # one file per trial for rollouts (Harbor's `-k`): two runs of a start never share one
        leaf = (f"{source.state}" if source.state else "clean") + (f".{agent_slug(trial.trial_name)}" if rollout else "")
        steps_file = Path("trajectories") / agent_slug(agent) / source.task / f"{leaf}.json"
        trajectory.write(run_dir / steps_file)
    return RunRecord(
        run_id=run_id, agent=agent, task=source.task, track=source.track, start=source.start,
        state=source.state, predecessor=source.predecessor,
        outcome=outcome, reward=reward if valid else None,
        submitted=termination == Termination.SUBMITTED, termination=termination,
        tests=tests if valid else None, initial_tests=None,
        steps=len(trajectory.steps) if trajectory is not None else None,
        final_patch=final_patch, trajectory=steps_file.as_posix() if steps_file is not None else None,
        attempts=(Attempt(attempt=1, outcome=outcome, termination=termination, error=error),),
        durations=trial_durations(trial), inherited_patch=source.inherited_patch,
        reference_files=tuple(source.reference_files) if source.reference_files is not None else None,
        opened_files=opened, inspected=inspected_any,
        agent_config=AgentConfig.hashed({"agent": trial.agent_name, "version": trial.agent_version,
                                         "model": trial.model_name}),
        cost=trial.cost_usd,
        tokens=(Tokens(prompt=trial.n_input_tokens or 0, completion=trial.n_output_tokens or 0)
                if trial.n_input_tokens is not None or trial.n_output_tokens is not None else None),
        message=None, error=error, rewards=dict(trial.rewards) if trial.rewards else None,
        harbor_trial=trial.relative,
        absent=HARNESS_FIELDS,  # Harbor ran it: no budget, engine or verification account of the suite's
    )


def read_harbor_results(jobs_dir: Path | str, export_dirs: Iterable[Path] = (), *, run_id: str,
                        run_dir: Path) -> HarborRecords:
    """Every trial of `jobs_dir` that ran an exported start, as run records (trajectories into
    `run_dir`); trials that cannot be read or traced back are listed as problems."""
    jobs = read_jobs(jobs_dir)
    result = HarborRecords(problems=[f"{problem.relative}: {problem.reason}" for problem in jobs.problems])
    exports = [Path(directory) for directory in export_dirs]
    checksums = Checksums()
    trials: list[tuple[RunRecord, int, str]] = []  # each record with its job's attempts and its order
    attempts_of: dict[Path, int] = {}
    for trial in sorted(jobs.trials, key=lambda t: t.relative):
        source, mismatch = _locate(trial, exports, checksums)
        if mismatch is not None:
            result.problems.append(f"{trial.relative}: not read: {mismatch}")
            continue
        if source is None:
            result.problems.append(f"{trial.relative}: task {trial.task_name!r} is not a task exported by "
                                   "`swe-residual export harbor` (no [metadata] swe_residual_source_task); "
                                   "pass the export directory with --harbor-export")
            continue
        job = trial.path.parent
        if job not in attempts_of:
            attempts_of[job] = job_attempts(job)
        order = f"{trial.relative.rsplit('/', 1)[0]}\0{trial.started_at.isoformat() if trial.started_at else ''}" \
                f"\0{trial.relative}"
        record = trial_record(trial, source, run_id, run_dir, rollout=attempts_of[job] > 1)
        trials.append((record, attempts_of[job], order))
    rollouts = [record for record, attempts, _ in sorted(trials, key=lambda t: t[2]) if attempts > 1]
    single = [record for record, attempts, _ in trials if attempts <= 1]
    result.records = _one_per_item(single) + _as_rollouts(rollouts)
    return result


def job_attempts(job_dir: Path) -> int:
    """Harbor's `-k` of a job (`n_attempts` in its config.json); 1 when it does not say."""
    config, _ = read_object(job_dir / "config.json")
    value = (config or {}).get("n_attempts")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _as_rollouts(records: list[RunRecord]) -> list[RunRecord]:
    """The trials of `-k` jobs, in order: each start's trials numbered as rollouts 0, 1, ..."""
    count: dict[tuple[Any, ...], int] = {}
    out = []
    for record in records:
        key = record_key(record)
        rollout = count.get(key, 0)
        count[key] = rollout + 1
        out.append(record.model_copy(update={"rollout": rollout}))
    return out


def _one_per_item(records: list[RunRecord]) -> list[RunRecord]:
    """Several trials of one start by one agent in jobs of one attempt each: the item's record is
    the first with a valid verdict, as after the suite's own retries of infrastructure failures;
    every trial stays listed in its `attempts`."""
    items: dict[tuple[Any, ...], list[RunRecord]] = {}
    for record in records:
        items.setdefault(record_key(record), []).append(record)
    kept = []
    for trials in items.values():
        chosen = next((r for r in trials if r.outcome != Outcome.INFRA_ERROR), trials[-1])
        attempts = tuple(r.attempts[0].model_copy(update={"attempt": number, "harbor_trial": r.harbor_trial})
                         for number, r in enumerate(trials, start=1))
        kept.append(chosen.model_copy(update={"attempts": attempts}))
    return kept

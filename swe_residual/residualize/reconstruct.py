"""Stage IV: state reconstruction and validation; the output dataset and Table 5.

Each candidate retained by review is rebuilt from the clean state, exactly as the suite will
start it (the backend's own `start`): repo track, the patch applied strictly at the base commit
without a commit; machine track, the commands replayed in a fresh container and snapshotted
(with per-instance replay when processes are left running, see the docker backend). Then:

  1. it can be instantiated            else "Patch application or command replay failed"
                                       (the patch does not apply, a replayed command hangs) or
                                       "Environment unusable" (the engine cannot start it);
                                       machine track (docker): the replay reproduces the recording,
                                       two replays agree (files and processes) and the replayed
                                       pane matches the recorded one (fidelity.py), else "Patch
                                       application or command replay failed" with the first
                                       divergence;
  2. an agent can act in it            a trivial command through the environment must run and
                                       answer, else "Environment unusable";
  3. the verifier gives a valid verdict, and it is still a failure
                                       else "No valid verifier result, or no longer failing";
  4. the oracle solves it              the reference solution run from the state (as the
                                       oracle agent runs it) must pass, else "No reference
                                       solution can finish it" (a predecessor that destroyed
                                       what the task recovers from): "oracle-solvable: yes/no".
                                       The suite's oracle discards a repo-track state's work first,
                                       so there this re-tests the clean start; so on the repo track
                                       the oracle also runs from the state keeping its work, as
                                       Harbor's oracle runs solve.sh on what it finds, and the
                                       result is said (line, table5.json, state.toml
                                       `[provenance.stage_iv] oracle_on_state`), with why not:
                                       a state that a published solve.sh (`git apply`) cannot
                                       finish. It is reported, not an exclusion (the suite's runs
                                       discard), so a dataset can be judged for Harbor export.
  5. it is stable                      with `repeats` N (default 3), the verifier runs N times on
                                       the state (the first in step 3's instance, the others each
                                       on a fresh instance) and the oracle N times from it: every
                                       verifier run must give the same verdict and the same
                                       failing tests, and the oracle must solve it every time,
                                       else "Unstable verifier" with each run's result (a test
                                       that sends Ctrl-C 0.5 s after starting Python is decided
                                       by the machine's load, not by the state). A state the
                                       oracle never solves stays "No reference solution".

Included states are numbered `<predecessor>-<n>` per task in candidate order and written to the
output dataset as `residual/<state-id>/state.toml` + `changes.patch` / `commands.jsonl`, with
provenance (predecessor, source run, stage decisions, reviewers) and `[validation]` (the
per-test statuses measured here). Each task's files are copied beside them. The output is a
pure function of the work directory, so a rerun writes the same bytes and no duplicates.

Table 5 starts at human review; the runs Stage II excluded before it (`filter.json`) are
reported beside it, per rule (`stage_ii` in table5.json), so a run an import could not
rebuild (`no_final_state`) is accounted for too.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.environments.registry import make_backend, resolve_backend_name
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.dataset.errors import ConfigError, DatasetError, InfraError
from swe_residual.dataset.image_recipes import IMAGES_FILE
from swe_residual.residualize.oracle_check import oracle_solvable
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.filter import RULES
from swe_residual.residualize.fidelity import FidelityCheck, check_replay
from swe_residual.trial.handoff.sources import predecessor_files
from swe_residual.residualize.review import retained as stage_iii_retained
from swe_residual.residualize.review_machine import machine_changes_path, replay_changes
from swe_residual.residualize.review_record import review_table
from swe_residual.residualize.workdir import (
    COMMANDS, PATCH, RECORDED_PANE, RunRef, Workdir, stage_one, write_bytes,
)
from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.states.state import MACHINE_FILE, ResidualState, load_state
from swe_residual.residualize.table5 import (  # noqa: F401  (rows and table5 re-exported)
    INCLUDED, NO_VERDICT, NOT_SOLVABLE, PASSED_REVIEW, REPLAY_FAILED, TABLE5_ROWS, UNSTABLE, UNUSABLE, render_table5,
    table5)
from swe_residual.dataset.task import Task
from swe_residual.environments.verifier.outputs import PASSED, Verdict
from swe_residual.environments.verifier.state_check import verify_as_submitted
from swe_residual.dataset.values import Track

USABLE_MARK = "swe-residual-usable"
STATE_SCHEMA = 1
DEFAULT_REPEATS = 3  # Stage IV's verifier and oracle runs per state (the paper's "several times")
# Where an included machine state's machine.json came from (table5.json `machine_changes_from`):
# each replay of a real run can take minutes to hours, so Stage IV reuses one when it has it.
FROM_REVIEW, FROM_FIDELITY, FROM_OWN_REPLAY = "stage iii replay", "stage iv second replay", "a replay of its own"


@dataclass
class Outcome:
    ref: RunRef
    track: str
    category: str
    detail: str = ""
    verdict: Verdict | None = None
    fidelity: str | None = None
    live_processes: bool | None = None
    state_id: str | None = None
    review: dict[str, Any] = field(default_factory=dict)
    oracle_solvable: bool | None = None  # None: not checked (an earlier step excluded the state)
    # Repo track: the oracle from the state keeping its work (Harbor's way); None: not checked.
    oracle_on_state: bool | None = None
    oracle_on_state_detail: str = ""
    # Machine track: what the predecessor changed on the machine (MachineChanges.as_dict), kept
    # as the state's machine.json; None: not known (a backend that cannot list it).
    machine_changes: dict[str, Any] | None = None
    machine_changes_from: str | None = None  # which replay listed them (MACHINE_CHANGES_FROM)
    fidelity_check: FidelityCheck | None = None  # machine track on docker: replays and pane
    # Step 5: each verifier run on the state ("failure: a, b" / "success" / "no verdict: ...") and
    # each oracle run from it ("solved" / "not solved: ..."), in order; empty: not repeated.
    verifier_runs: list[str] = field(default_factory=list)
    oracle_runs: list[str] = field(default_factory=list)

    def stability(self) -> dict[str, Any] | None:
        if not self.verifier_runs and not self.oracle_runs:
            return None
        return {"stable": self.category != UNSTABLE, "verifier_runs": list(self.verifier_runs),
                "oracle_runs": list(self.oracle_runs)}


def verdict_key(verdict: Verdict) -> str:
    """A verifier run as compared between runs: its verdict and its failing tests."""
    if not verdict.valid:
        return f"no verdict: {verdict.error}"[:300]
    if verdict.success:
        return "success"
    failing = sorted(test for test, status in verdict.tests.items() if status != PASSED)
    return "failure: " + (", ".join(failing) if failing else f"reward {verdict.reward}")


def validate_candidate(backend: Any, task: Task, state: ResidualState, ref: RunRef,
                       recorded_pane: str | None = None, repeats: int = 1) -> Outcome:
    """Steps 1-5 above on one staged state (step 5 when `repeats` > 1); never raises for the
    state's own faults."""
    if repeats < 1:
        raise ConfigError(f"repeats {repeats}: Stage IV runs the verifier and the oracle at least once")
    outcome = Outcome(ref, task.track, INCLUDED)
    spec = StartSpec("residualize-build", f"validate:{task.id}/{ref.candidate}", 1, purpose="validate")
    task_image = getattr(backend, "task_image", None)
    if task_image is not None:
        try:  # the task's own image first: one that cannot be had here makes no environment at all
            task_image(task)
        except (DatasetError, InfraError) as exc:
            outcome.category, outcome.detail = UNUSABLE, f"the task's image cannot be had here: {exc}"
            return outcome
    try:
        environment = backend.start(task, state, spec)
    except DatasetError as exc:
        outcome.category, outcome.detail = REPLAY_FAILED, str(exc)
        return outcome
    except (InfraError, OSError) as exc:
        outcome.category, outcome.detail = UNUSABLE, f"could not be instantiated: {exc}"
        return outcome
    try:
        outcome.fidelity = getattr(environment, "fidelity", None)
        if task.track == Track.MACHINE:
            outcome.live_processes = outcome.fidelity in ("replay", "criu")
        try:
            probe = environment.exec(f"echo {USABLE_MARK} && pwd", timeout_sec=60)
        except (InfraError, OSError) as exc:
            outcome.category, outcome.detail = UNUSABLE, f"cannot run a command: {exc}"
            return outcome
        if probe.exit_code != 0 or USABLE_MARK not in probe.stdout:
            outcome.category = UNUSABLE
            outcome.detail = f"a trivial command failed (exit {probe.exit_code}): {probe.output.strip()[-300:]}"
            return outcome
        if _replays_here(task, state, environment):
            try:
                outcome.fidelity_check = check_replay(backend, task, state, environment, spec, recorded_pane)
            except DatasetError as exc:
                outcome.category, outcome.detail = REPLAY_FAILED, f"a second replay failed: {exc}"
                return outcome
            except (InfraError, OSError) as exc:
                outcome.category, outcome.detail = UNUSABLE, f"could not replay it again: {exc}"
                return outcome
            if outcome.fidelity_check.divergence is not None:
                outcome.category = REPLAY_FAILED
                outcome.detail = f"the replay does not reproduce the recording: {outcome.fidelity_check.divergence}"
                return outcome
        try:  # the state as its predecessor submitted it (a repo-track state's work committed here only)
            verdict = verify_as_submitted(backend, environment, task, state)
        except DatasetError as exc:
            outcome.category, outcome.detail = REPLAY_FAILED, f"could not be committed as submitted: {exc}"
            return outcome
        except InfraError as exc:
            outcome.category, outcome.detail = NO_VERDICT, f"the verifier could not run: {exc}"
            return outcome
        outcome.verdict = verdict
        if not verdict.valid:
            outcome.category, outcome.detail = NO_VERDICT, f"no valid verdict: {verdict.error}"
        elif verdict.success:
            outcome.category, outcome.detail = NO_VERDICT, "no longer failing: the verifier passes"
    finally:
        environment.close()
    if outcome.category == INCLUDED and repeats > 1:
        _repeat_verifier(backend, task, state, outcome, spec, repeats)
    if outcome.category == INCLUDED:
        _check_solvable(backend, task, state, outcome, repeats)
    return outcome


def _repeat_verifier(backend: Any, task: Task, state: ResidualState, outcome: Outcome, spec: StartSpec,
                     repeats: int) -> None:
    """Step 5, the verifier: runs 2..N, each on a fresh instance, compared with the first."""
    assert outcome.verdict is not None
    outcome.verifier_runs = [verdict_key(outcome.verdict)]
    for run in range(2, repeats + 1):
        again = StartSpec(spec.run_id, f"{spec.item_id}#verify{run}", run, purpose="validate")
        try:
            environment = backend.start(task, state, again)
        except (DatasetError, InfraError, OSError) as exc:
            outcome.verifier_runs.append(f"no verdict: could not start it again: {exc}"[:300])
            continue
        try:
            verdict = verify_as_submitted(backend, environment, task, state)
            outcome.verifier_runs.append(verdict_key(verdict))
        except (DatasetError, InfraError) as exc:
            outcome.verifier_runs.append(f"no verdict: the verifier could not run: {exc}"[:300])
        finally:
            environment.close()
    if len(set(outcome.verifier_runs)) > 1:
        outcome.category = UNSTABLE
        outcome.detail = (f"the verifier on the state disagrees over {repeats} runs: "
                          + "; ".join(f"run {n}: {key}" for n, key in enumerate(outcome.verifier_runs, 1)))


def _replays_here(task: Task, state: ResidualState, environment: Any) -> bool:
    """A machine state on the docker backend (whose containers the fidelity check can inspect)."""
    return task.track == Track.MACHINE and state.commands_path is not None and hasattr(environment, "container_id")


def _oracle_once(backend: Any, task: Task, state: ResidualState) -> tuple[bool, str]:
    try:
        return oracle_solvable(backend, task, state, "residualize-build")
    except (DatasetError, InfraError, OSError) as exc:
        return False, f"the oracle could not run: {exc}"


def _check_solvable(backend: Any, task: Task, state: ResidualState, outcome: Outcome, repeats: int = 1) -> None:
    """Step 4: the oracle from a fresh instance of the state; with `repeats`, step 5's oracle
    runs too (each from a fresh instance), all of which must solve it."""
    results = [_oracle_once(backend, task, state)]
    if repeats > 1:
        results += [_oracle_once(backend, task, state) for _ in range(repeats - 1)]
        outcome.oracle_runs = ["solved" if solved else f"not solved: {detail}"[:300] for solved, detail in results]
    detail = next((why for ok, why in results if not ok), results[0][1])
    outcome.oracle_solvable = all(ok for ok, _ in results)
    if not any(ok for ok, _ in results):
        outcome.category, outcome.detail = NOT_SOLVABLE, f"oracle-solvable: no ({detail})"
        return
    if not outcome.oracle_solvable:
        outcome.category = UNSTABLE
        outcome.detail = (f"the oracle from the state solves it {sum(ok for ok, _ in results)} of {repeats} times: "
                          + "; ".join(f"run {n}: {line}" for n, line in enumerate(outcome.oracle_runs, 1)))
        return
    if task.track == Track.REPO:
        try:
            kept, why = oracle_solvable(backend, task, state, "residualize-build", discard_inherited=False)
        except (DatasetError, InfraError, OSError) as exc:
            kept, why = False, f"the oracle could not run: {exc}"
        outcome.oracle_on_state = kept
        outcome.oracle_on_state_detail = "" if kept else why


def _recorded_pane(work: Workdir, ref: RunRef) -> str | None:
    path = work.run_dir(ref) / RECORDED_PANE
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _validation_table(verdict: Verdict) -> dict[str, Any]:
    tests = dict(sorted(verdict.tests.items()))
    passed = sum(status == PASSED for status in tests.values())
    table: dict[str, Any] = {"valid": verdict.valid, "reward": float(verdict.reward or 0.0), "n_tests": len(tests),
                             "n_failed": len(tests) - passed}
    if tests:
        table["pass_rate"] = passed / len(tests)
    table["tests"] = tests
    return table


def state_toml(outcome: Outcome, record: RunRecord, config: dict[str, Any],
               rules: Sequence[str] = RULES, incidental: Sequence[str] = ()) -> str:
    ref = outcome.ref
    assert outcome.verdict is not None
    review = outcome.review
    data: dict[str, Any] = {
        "schema": STATE_SCHEMA,
        "track": outcome.track,
        "predecessor": ref.predecessor,
        "source_run": f"residualize:{ref.relative}",
        ("patch" if outcome.track == Track.REPO else "commands"): PATCH if outcome.track == Track.REPO else COMMANDS,
        "prior_attempt": {
            "submitted": bool(record.submitted),
            "termination": None if record.termination is None else str(record.termination),
            "steps": record.steps,
            "duration_sec": round(float(record.durations.agent_sec or 0.0), 2),
        },
    }
    if outcome.track == Track.MACHINE:
        data["machine"] = {"live_processes": bool(outcome.live_processes), "fidelity": outcome.fidelity}
    data["provenance"] = {
        "pipeline": "swe-residual residualize",
        "predecessor_agent": config.get("predecessors", {}).get(ref.predecessor),
        "candidate": ref.candidate,
        "source_run": ref.relative,
        "attempt": ref.attempt,
        "stage_ii": {"decision": "candidate", "rules_passed": list(rules),
                     # Stray files the run left (filter.py): kept in the patch, as the paper does.
                     **({"incidental_artifacts": list(incidental)} if incidental else {})},
        "stage_iii": {
            "decision": "retained",
            "reviewers": list(review.get("reviewers", [])),
            "accept_all": review.get("accept_all") or "",
            "packet": review.get("packet", ""),
            # Whether two people each read it without the other's verdict (review.py): a review
            # recorded before this was asked is "unknown", never "independent".
            "independence": review.get("independence") or "unknown",
        },
        "stage_iv": {"decision": INCLUDED, "fidelity": outcome.fidelity, "oracle_solvable": True},
    }
    if record.committed_patch:  # it had committed (part of) its work: said, never replayed (states are uncommitted)
        data["provenance"]["predecessor_committed"] = True
    if outcome.fidelity_check is not None:  # machine track: the replay against the recording
        data["provenance"]["stage_iv"]["replay"] = outcome.fidelity_check.as_dict()
    if (stability := outcome.stability()) is not None:  # step 5: the repeated verifier and oracle runs
        data["provenance"]["stage_iv"]["stability"] = stability
    if outcome.oracle_on_state is not None:  # repo track: the oracle keeping the state's work
        data["provenance"]["stage_iv"]["oracle_on_state"] = outcome.oracle_on_state
        if not outcome.oracle_on_state:
            data["provenance"]["stage_iv"]["oracle_on_state_why_not"] = outcome.oracle_on_state_detail
    imported = stage_one(record).get("import")
    if imported:  # an imported run: its source, the import command and the source's date
        data["provenance"]["import"] = dict(imported)
    if review.get("decisions"):  # each reviewer's name and answers (review_record.py)
        data["review"] = review_table(review)
    data["validation"] = _validation_table(outcome.verdict)
    return tomlwrite.dumps(data)


def _copy_task(task: Task, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(task.path, target, symlinks=True,
                    ignore=lambda directory, names: ["residual"] if Path(directory) == task.path else [])
    # The dataset's image recipes (images.toml) travel with its tasks: a task naming a
    # docker_image that only a recipe can build must stay buildable in the new dataset.
    recipes = task.path.parent / IMAGES_FILE
    if recipes.is_file() and not (target.parent / IMAGES_FILE).exists():
        shutil.copy2(recipes, target.parent / IMAGES_FILE)


def _drop_snapshot(backend: Any, task: Task, state: ResidualState) -> None:
    """Staged states are snapshotted under their candidate name: not kept in the image cache."""
    tag_of = getattr(backend, "state_tag", None)
    if tag_of is None:
        return
    from swe_residual.environments.docker import remove_image

    try:
        remove_image(tag_of(task, state))
    except (InfraError, DatasetError):  # DatasetError: the task's image is not here, nor its snapshot
        pass


def build(workdir: Path | str, out: Path | str, *, backend_name: str | None = None, backend: Any = None,
          only_tasks: Sequence[str] = (), progress: Callable[[str], None] = print,
          machine_trust: str | None = None, repeats: int = 1) -> dict[str, Any]:
    """Stage IV on every retained candidate, or only on those of `only_tasks`: then the other
    tasks' outcomes are kept as the last build recorded them (table5.json), and their states in
    OUT are left as written (a build of one task at a time, as its image becomes available).
    `repeats`: the verifier and oracle runs per state that must agree (step 5); the command
    line's default is DEFAULT_REPEATS, a caller of this function chooses."""
    if repeats < 1:
        raise ConfigError(f"--repeats {repeats}: at least 1")
    work = Workdir(workdir)
    config = work.read_json("generate.json", stage="generate")
    source = Path(config["dataset"])
    out = Path(out)
    if out.resolve() == source.resolve():
        raise ConfigError(f"--out {out}: the output dataset must not be the source dataset {source}")
    filtered = work.read_json("filter.json", stage="filter")  # Stage II must have run: a clear error if not
    retained = stage_iii_retained(workdir, only_tasks)
    earlier = work.read_json("table5.json", stage="build")["candidates"] if only_tasks and (
        work.root / "table5.json").is_file() else []
    kept = [entry for entry in earlier if entry["task"] not in only_tasks]
    dataset = load_dataset(source)
    tasks = {entry.task.id: entry.task for entry in dataset.entries}
    own_backend = backend is None
    if own_backend:
        name = resolve_backend_name(backend_name or config.get("backend", "auto"))
        backend = make_backend(name, run_id="residualize-build", machine_trust=machine_trust)
        if hasattr(backend, "validate_state"):
            backend.validate_state = None  # Stage IV validates itself, step by step
    # What the containers with a network were given of the machine's trust (docker only).
    trust = getattr(backend, "machine_trust", None)
    if trust is not None:
        progress(f"machine trust ({trust.choice}): " + (f"{trust.bundle} given to containers with a network"
                                                       if trust.bundle else "nothing given") + f": {trust.reason}")
    outcomes: list[Outcome] = []
    try:
        for entry in retained:
            ref = RunRef.from_dict(entry)
            task = tasks[ref.task]
            staged = work.stage_state(ref, task.track, work.root / "build" / ref.task / ref.candidate)
            try:
                state = load_state(task, staged)
            except DatasetError as exc:
                outcome = Outcome(ref, task.track, REPLAY_FAILED, f"the state cannot be loaded: {exc}")
            else:
                outcome = validate_candidate(backend, task, state, ref, _recorded_pane(work, ref), repeats)
                if outcome.category == INCLUDED and task.track == Track.MACHINE:
                    outcome.machine_changes, outcome.machine_changes_from = predecessor_machine_changes(
                        work, backend, task, state, ref,
                        outcome.fidelity_check.machine_changes if outcome.fidelity_check else None)
                _drop_snapshot(backend, task, state)
            outcome.review = entry
            outcomes.append(outcome)
            progress(f"Stage IV {ref.task}/{ref.candidate}: {outcome.category}"
                     + (f" ({outcome.detail[:200]})" if outcome.detail else "")
                     + (f", fidelity {outcome.fidelity}" if outcome.fidelity else "")
                     + (f", replays agree, pane {outcome.fidelity_check.pane}"
                        if outcome.fidelity_check and outcome.fidelity_check.divergence is None else "")
                     + ("" if outcome.oracle_solvable is None
                        else f", oracle-solvable: {'yes' if outcome.oracle_solvable else 'no'}")
                     + ("" if outcome.oracle_on_state is None
                        else ", oracle keeping the state's work (as Harbor's): "
                             + ("yes" if outcome.oracle_on_state else f"no ({outcome.oracle_on_state_detail})")))
    finally:
        if own_backend:
            backend.close()
    numbers: dict[tuple[str, str], int] = {}
    for entry in kept:
        if entry.get("state"):
            key = (entry["task"], entry["predecessor"])
            numbers[key] = numbers.get(key, 0) + 1
    for outcome in outcomes:
        if outcome.category == INCLUDED:
            key = (outcome.ref.task, outcome.ref.predecessor)
            numbers[key] = numbers.get(key, 0) + 1
            outcome.state_id = f"{outcome.ref.predecessor}-{numbers[key]}"
    rules = filtered.get("rules", list(RULES))
    written = [task for task in config.get("tasks", []) if not only_tasks or task in only_tasks]
    _write_dataset(work, out, tasks, written, config, outcomes, rules)
    before_review = stage_ii_table(filtered)
    result: dict[str, Any] = {"table5": {}, "rows": [label for _, label in TABLE5_ROWS], "stage_ii": before_review,
              "out": str(out), "machine_trust": trust.describe() if trust is not None else None,
              "candidates": _in_earlier_order(earlier, kept + [{**o.ref.as_dict(), "track": o.track, "category": o.category, "detail": o.detail,
                                     "fidelity": o.fidelity, "state": o.state_id, "oracle_solvable": o.oracle_solvable,
                                     "oracle_on_state": o.oracle_on_state,
                                     "oracle_on_state_detail": o.oracle_on_state_detail or None,
                                     "replay": o.fidelity_check.as_dict() if o.fidelity_check else None,
                                     "stability": o.stability(),
                                     **({"machine_changes_from": o.machine_changes_from}
                                        if o.machine_changes_from else {})}
                                    for o in outcomes])}
    result["table5"] = table = table5(result["candidates"])
    work.write_json("table5.json", result)
    for line in [*render_table5(table), *render_stage_ii(before_review)]:
        progress(line)
    return result


def _in_earlier_order(earlier: list[dict[str, Any]], candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`candidates` in the order the last build listed them (those it did not list after, as they
    come): a build of some tasks writes the same table5.json as a build of all when nothing changed."""
    def key(entry: dict[str, Any]) -> tuple[Any, ...]:
        return (entry["task"], entry["predecessor"], entry["attempt"])

    position = {key(entry): n for n, entry in enumerate(earlier)}
    return sorted(candidates, key=lambda entry: position.get(key(entry), len(position)))


def _write_dataset(work: Workdir, out: Path, tasks: dict[str, Task], written: list[str], config: dict[str, Any],
                   outcomes: list[Outcome], rules: Sequence[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for task_id in written:
        _copy_task(tasks[task_id], out / task_id)
    incidental = {RunRef.from_dict(entry): entry.get("incidental_artifacts") or []
                  for entry in work.read_json("filter.json", stage="filter").get("candidates", [])}
    for outcome in outcomes:
        if outcome.state_id is None:
            continue
        ref = outcome.ref
        directory = out / ref.task / "residual" / outcome.state_id
        directory.mkdir(parents=True, exist_ok=True)
        payload_name = PATCH if outcome.track == Track.REPO else COMMANDS
        write_bytes(directory / payload_name, work.payload(ref))
        text = state_toml(outcome, work.record(ref), config, rules, incidental.get(ref, ()))
        write_bytes(directory / "state.toml", text.encode("utf-8"))
        for name, data in predecessor_files(work.run_dir(ref), work.record(ref)).items():
            write_bytes(directory / name, data)  # what it said: for the non-blind handoff views
        if outcome.machine_changes is not None:  # what it changed: Opened and Inspected on this track
            write_bytes(directory / MACHINE_FILE, (json.dumps(outcome.machine_changes, indent=1) + "\n").encode())


def predecessor_machine_changes(work: Workdir, backend: Any, task: Task, state: ResidualState, ref: RunRef,
                                replayed: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """What the machine-track candidate changed beyond the clean start, and which replay said it:
    Stage III's (`--replay`, kept beside its packet) when there is one, else Stage IV's second
    replay's (`replayed`: its fidelity check listed them), else one replay now in a fresh
    container of the task's image (docker backend); (None, None) when none can say."""
    kept = machine_changes_path(work, ref)
    if kept.is_file():
        try:
            data = json.loads(kept.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and "files" in data:
            return data, FROM_REVIEW
    if replayed is not None:
        return replayed, FROM_FIDELITY
    if not hasattr(backend, "start_container"):
        return None, None
    try:
        return replay_changes(backend, task, state, f"build:{ref.task}/{ref.candidate}/machine"), FROM_OWN_REPLAY
    except (DatasetError, InfraError, OSError):
        return None, None


def stage_ii_table(filtered: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Stage II's exclusions per rule, per track and in total (the runs that never reached review)."""
    rules = filtered.get("rules", list(RULES))
    excluded = filtered.get("excluded", [])
    runs = [*filtered.get("candidates", []), *excluded]
    tracks = sorted({str(entry.get("track", Track.REPO)) for entry in runs}) or [Track.REPO]
    table: dict[str, dict[str, int]] = {}
    for column in [*tracks, "total"]:
        chosen = [e for e in excluded if column == "total" or e.get("track", Track.REPO) == column]
        table[column] = {rule: sum(e.get("rule") == rule for e in chosen) for rule in rules}
    return table


def render_stage_ii(table: dict[str, dict[str, int]]) -> list[str]:
    columns = list(table)
    rules = list(table[columns[0]]) if columns else []
    width = max((len(rule) for rule in rules), default=0)
    lines = ["Excluded by Stage II, before review (filter.json)",
             " " * width + "".join(f"  {column:>8}" for column in columns)]
    for rule in rules:
        lines.append(f"{rule:<{width}}" + "".join(f"  {table[column][rule]:>8}" for column in columns))
    return lines

"""Running one item: a start (clean or residual), an agent, the verifier, one run record.

The failure policy of DESIGN §7: an infrastructure failure (environment, engine, a verifier
that is itself broken) is retried from a fresh instance of the same starting state, up to
`infra_retries` times, every attempt recorded. A model-service failure is such a failure too:
the agent raises `InfraError` (stage "model"). A task failure (valid verdict 0, budget
exhausted, the agent's own error) is never retried. So is a container stopped with no cause
from outside it (no kill request, no out-of-memory kill, no engine error: the backend raises
`EnvironmentLostByAgent`) while the agent or the harness's steps on its container up to the
first verdict use it: the agent's failure, with no verdict (environments/docker/lost.py).

Attribution: when the verifier gives no valid verdict on the agent's final state, the saved
final state is verified again in a fresh instance (a commit of the container on docker; the
captured patch on a fresh start otherwise), and if that gives none either, the verifier runs
on the task's clean state (the canary, once per task per run: swe_residual/verifier/canary.py). A
verifier that works there and not on the agent's final state is the agent's failure
(termination `verifier_failed_on_final_state`, counted in the success rates); one that fails
there too is infrastructure. Before the patch is captured, on the repo track, everything the
agent left running is stopped (on the machine track live processes can be the task), and the
patch is made by the harness's own git (swe_residual/environments/harness_git.py).

Scoring (`outcome`): a run succeeds only when the agent declared the task done and the
verifier's valid verdict passes. A run that exhausted its budget (time, steps, cost) is a
failure even when its final state passes: its verdict stays in the record (`reward`,
`rewards`, `tests`), its `outcome` is "failure" (paper App. D: "In the success rates of
Table 3, runs that exhaust the budget count as task failures").
"""

from __future__ import annotations

import shutil
import threading
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from swe_residual.agents.environment import AgentEnvironment
from swe_residual.agents import (
    Agent,
    AgentSession,
    Budget,
    BudgetExhausted,
    passed_env_names,
)
from swe_residual.agents.base import AgentResult
from swe_residual.agents.identity import agent_files
from swe_residual.verifier.canary import canary
from swe_residual.states.diffparse import changed_files
from swe_residual.verifier.collect import collect_notes, host_path
from swe_residual.environments.base import Backend, StartSpec, VerifierOutput
from swe_residual.environments.disk_usage import DiskReport, DiskWatcher, not_enforced
from swe_residual.errors import DatasetError, EnvironmentLostByAgent, InfraError
from swe_residual.handoff.views import BLIND, view_suffix
from swe_residual.handoff.file import give_handoff
from swe_residual.metrics.inherited import opened_and_inspected
from swe_residual.environments.harness_git import CaptureFailed
from swe_residual.states.patches import apply_patch, capture_patch, committed_patch
from swe_residual.trial.record_model import (
    AgentConfig, Attempt, Canary, DiskLimit, Durations, RecordBudget, RunRecord, Tokens,
)
from swe_residual.trial.records import agent_slug, item_id, rollout_file_suffix
from swe_residual.trial.redaction import REDACTED, SECRET_OPTION_KEY, redact, secret_values
from swe_residual.states.state import ResidualState
from swe_residual.dataset.task import DEFAULT_WORKDIR, Task
from swe_residual.trial.trajectory import Trajectory
from swe_residual.trial.values import Outcome, Start, Termination, Track
from swe_residual.verifier.channel import read_channel
from swe_residual.verifier.claims import check_claim
from swe_residual.verifier.environment import plan_verifier_environment
from swe_residual.verifier.expected import expected_tests
from swe_residual.verifier.inputs import test_digests
from swe_residual.verifier.outputs import Verdict, evaluate

if TYPE_CHECKING:
    from swe_residual.run.settings import RunSettings


@dataclass(frozen=True)
class RunOptions:
    run_id: str
    run_dir: Path
    infra_retries: int = 2
    timeout_multiplier: float = 1.0
    max_steps: int | None = None
    cost_limit: float | None = None
    model: str | None = None
    agent_options: tuple[tuple[str, str], ...] = ()
    # Exception types an outer watchdog raises in the calling thread (the pytest fixture passes
    # pytest-timeout's): one arriving while the agent runs ends the attempt as a time limit.
    watchdog_exceptions: tuple[type[BaseException], ...] = ()
    agent_environment: AgentEnvironment | None = None  # `--agent-setup` and `--agent-mount`
    handoff: str = BLIND  # what a Residual State's agent is told of its predecessor (swe_residual/handoff/views.py)
    agent_spec: str | None = None  # the `--agent` value, when the agent is named by a label
    rollout: int | None = None  # which run of the start with `--rollouts` above 1; None: the only one
    # Stage I (residualize generate): also record the predecessor's commits (repo track), by the
    # environment's own git; never for a graded run.
    capture_commits: bool = False

    @classmethod
    def from_settings(
        cls, settings: RunSettings, *, run_id: str, run_dir: Path, agent_spec: str, handoff: str = BLIND,
        watchdog_exceptions: tuple[type[BaseException], ...] = (), rollout: int | None = None,
    ) -> RunOptions:
        """The options of one item of a pytest run: the run's settings, its item's agent and view."""
        return cls(
            run_id=run_id, run_dir=run_dir, infra_retries=settings.infra_retries,
            timeout_multiplier=settings.timeout_multiplier, max_steps=settings.max_steps,
            cost_limit=settings.cost_limit, model=settings.model, agent_options=settings.agent_options,
            watchdog_exceptions=watchdog_exceptions, agent_environment=settings.agent_environment,
            handoff=handoff, agent_spec=agent_spec, rollout=rollout,
        )

    def agent_config(self) -> dict[str, Any]:
        """What configured the agent, for the record; option values that look secret are hidden.

        The run-level budget settings are part of it (the per-task timeout is in `budget`):
        an agent given 10 steps and the same agent given 100 are two configurations."""
        options = {k: (REDACTED if SECRET_OPTION_KEY.search(k) else v) for k, v in self.agent_options}
        config: dict[str, Any] = {
            "spec": self.agent_spec, "model": self.model, "options": options,
            "limits": {"timeout_multiplier": self.timeout_multiplier, "max_steps": self.max_steps,
                       "cost_limit": self.cost_limit},
        }
        if self.agent_environment is not None and not self.agent_environment.empty:
            config["environment"] = self.agent_environment.describe()
        return config

    def budget(self, task: Task) -> Budget:
        return Budget(
            timeout_sec=task.config.agent_timeout_sec * self.timeout_multiplier,
            max_steps=self.max_steps,
            cost_limit=self.cost_limit,
        )


# How long an agent may run past its wall time before it is abandoned: enough for a command
# cut at the deadline to come back and for the session to raise the time limit itself.
AGENT_GRACE_SEC = 5.0
# How often the waiting thread looks whether the harness stopped the agent (the disk limit).
STOP_POLL_SEC = 0.2


def outside_budget(agent: Agent) -> float:
    """Seconds an agent may take beyond its budget, outside the part the budget bounds: a Harbor
    agent's start-up and setup() (Harbor bounds run() by the task's agent timeout, setup() by
    its own), which the agent times and enforces itself; 0 for every other agent."""
    return float(getattr(agent, "outside_budget_sec", 0.0))


def run_agent(
    agent: Agent, session: AgentSession, watchdog_exceptions: tuple[type[BaseException], ...] = (),
) -> AgentResult | None:
    """`agent.run(session)`, bounded by the session's wall time whatever the agent does.

    The session stops an agent that calls the environment after its deadline, but an
    in-process agent can also hang without ever calling it (a `module:` agent in a sleep
    loop). So the agent runs in a worker thread and this thread waits for it until the budget
    (plus `AGENT_GRACE_SEC`) is spent. An agent still running then is abandoned, cut off from
    the environment and the trajectory, so nothing it does later reaches the state under
    verification or the record; the attempt ends as a time limit (`BudgetExhausted`). What
    the agent raises is raised here, as if it had run in this thread.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = agent.run(session)
        except BaseException as exc:  # handed to the waiting thread, which decides
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"swe-residual agent {agent.name}", daemon=True)
    worker.start()
    deadline = time.monotonic() + max(session.remaining_sec(), 0.0) + AGENT_GRACE_SEC + outside_budget(agent)
    try:
        while worker.is_alive() and time.monotonic() < deadline:
            if session.stopped is not None and session.stopped_at is not None:
                # The harness ended the run (the disk limit) and killed its commands: the agent
                # gets the grace to return, not the rest of its time.
                deadline = min(deadline, session.stopped_at + AGENT_GRACE_SEC)
            worker.join(min(STOP_POLL_SEC, max(deadline - time.monotonic(), 0.0)))
    except watchdog_exceptions as exc:
        _abandon(session)
        raise BudgetExhausted(Termination.TIME_LIMIT, f"stopped by the watchdog before it returned ({exc})") from None
    if worker.is_alive() and session.stopped is not None:
        _abandon(session)
        raise BudgetExhausted(session.stopped.termination, f"{session.stopped} (it had not returned and was abandoned)")
    if worker.is_alive():
        _abandon(session)
        raise BudgetExhausted(
            Termination.TIME_LIMIT,
            f"time limit of {session.budget.timeout_sec:g}s reached: the agent had not returned and was abandoned",
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


class _Abandoned:
    """The environment an abandoned agent is left with: every use ends its run."""

    def __getattr__(self, name: str) -> Any:
        raise BudgetExhausted(Termination.TIME_LIMIT, "the agent ran past its time limit and was abandoned")


def _abandon(session: AgentSession) -> None:
    session.environment = _Abandoned()  # type: ignore[assignment]
    # Steps it still records go to a trajectory nobody reads; the attempt keeps the original.
    session.trajectory = Trajectory(agent=session.trajectory.agent)


@dataclass
class _Attempt:
    number: int
    outcome: Outcome
    termination: Termination | None = None  # as the agent gave it: a `module:` agent may name its own
    verdict: Verdict | None = None
    final_patch: str | None = None
    trajectory: Trajectory | None = None
    message: str | None = None
    committed_patch: str | None = None  # options.capture_commits: the predecessor's commits
    error: str | None = None
    durations: dict[str, float] | None = None
    reverified: bool = False
    cost: float | None = None
    fidelity: str | None = None  # how a machine-track state was restored (docker backend)
    engine: str | None = None  # the Docker engine's URL when a fleet of engines ran it
    verification: _Verification | None = None
    # Where the repository sat as the agent saw it: absolute paths in its commands resolve here.
    workdir: str | None = None
    actions_recorded: bool = True  # False: the trajectory cannot say what the agent opened
    tokens: dict[str, int] | None = None  # {"prompt", "completion"} over the model calls; None: unknown
    cost_known: bool = True  # False: a model call had no price, so the record's cost is null
    submitted: bool = False  # the agent declared the task done (whatever the verifier made of it)
    notes: tuple[str, ...] = ()  # the harness's own notes on this attempt, for verifier_notes
    canary: Canary | None = None  # the clean state's verdict, when it was asked
    disk: DiskReport | None = None  # how `[environment] storage_mb` was enforced (None: the task sets none)
    machine_kept: float | None = None  # machine track: share of the predecessor's file changes left as they were

    def summary(self) -> Attempt:
        return Attempt(self.number, self.outcome, self.termination, self.error, reverified=self.reverified,
                       durations=Durations(**(self.durations or {})), canary=self.canary)


@dataclass(frozen=True)
class _Verification:
    verdict: Verdict
    output: VerifierOutput
    reverified: bool
    duration_sec: float


def _verify(backend: Backend, environment: Any, task: Task, acceptance: list[str] | None,
            artifacts_dir: Path) -> _Verification:
    """Verify the final state once (no valid verdict: see `_reverify_saved`)."""
    started = time.monotonic()
    output = backend.run_verifier(environment, task, artifacts_dir)
    return _Verification(evaluate(output, acceptance), output, False, time.monotonic() - started)


def _reverify_saved(backend: Backend, environment: Any, task: Task, final_patch: str | None, spec: StartSpec,
                    acceptance: list[str] | None, artifacts_dir: Path) -> _Verification:
    """Verify the saved final state again in a fresh instance (paper App. C): a container of
    the agent's container committed as it is (docker), else a fresh clean start with the
    captured patch applied; without either, the same environment once more. A machine-track
    state is verified again where it is: its live processes can be part of it, and a commit
    holds none."""
    started = time.monotonic()
    fresh_spec = StartSpec(spec.run_id, spec.item_id + ":reverify", spec.attempt, purpose="reverify")
    saved = getattr(environment, "saved_instance", None)
    fresh = None
    if task.track == Track.MACHINE:
        saved, final_patch = None, None  # verified again where it is
    if callable(saved):
        fresh = saved(fresh_spec)
    elif final_patch is not None:
        fresh = backend.start(task, None, fresh_spec)
        try:
            apply_patch(fresh, final_patch, source="the captured final state", strict=True)
        except DatasetError as exc:
            # What the agent left cannot be rebuilt from its patch: no verdict on a fresh instance.
            fresh.close()
            output = VerifierOutput(None, "", False, error=f"the captured final state does not apply to a fresh start: {exc}")
            return _Verification(evaluate(output, acceptance), output, True, time.monotonic() - started)
    try:
        output = backend.run_verifier(fresh if fresh is not None else environment, task, artifacts_dir)
    finally:
        if fresh is not None:
            fresh.close()
    return _Verification(evaluate(output, acceptance), output, True, time.monotonic() - started)


def _checked_claim(backend: Backend, task: Task, run_id: str, verification: _Verification) -> Verdict:
    """A passing verdict held to the expected tests, the suite's own reporter and the hidden
    test files as pytest imported them (swe_residual/verifier/claims.py); a contradicted one is
    a failure. The expected tests may need the verifier's run on the clean state: an engine
    failure there is an InfraError (the attempt is retried)."""
    output = verification.output
    channel = read_channel(output.channel) if output.channel is not None else None
    # The hidden tests sit at /tests as the task ships them unless a separate verifier's image bundles its own.
    uploaded = not plan_verifier_environment(task).bundled_tests
    return check_claim(verification.verdict, expected_tests(backend, task, run_id), channel,
                       test_digests(task.tests_dir) if uploaded else None, "/tests" if uploaded else None)


def _stop_agent_processes(environment: Any, task: Task) -> None:
    """Repo track: nothing the agent left running outlives it (machine track: it may be the task)."""
    stop = getattr(environment, "stop_processes", None)
    if task.track == Track.REPO and callable(stop):
        stop()


def _watch_disk(environment: Any, task: Task, session: AgentSession) -> DiskWatcher | DiskReport | None:
    """The task's `storage_mb` watched while the agent runs (environments/disk_usage.py): a
    started watcher, the account of why it cannot be, or None when the task sets no limit."""
    storage_mb = task.config.storage_mb
    if storage_mb is None or storage_mb <= 0:
        return None
    meter_of = getattr(environment, "disk_meter", None)
    meter = meter_of() if callable(meter_of) else "this environment cannot measure what it wrote"
    if isinstance(meter, str):
        return not_enforced(storage_mb, meter)
    watcher = DiskWatcher(meter, storage_mb, lambda message: session.stop(Termination.DISK_LIMIT, message))
    return watcher.start()


def _stop_everything(environment: Any) -> None:
    """Every process of the environment killed, on any track (the disk limit ended the run)."""
    stop = getattr(environment, "stop_processes", None)
    if callable(stop):
        stop()


def _capture(environment: Any) -> tuple[str | None, str | None]:
    """(the final patch, or None with why it could not be made)."""
    own = getattr(environment, "capture_patch", None)
    try:
        return (own() if callable(own) else capture_patch(environment)), None
    except CaptureFailed as exc:  # the agent's tree defeats the harness's git: its own doing
        return None, f"the final state could not be captured: {exc}"


def _verification_record(verification: _Verification | None, artifacts_dir: Path, run_dir: Path) -> dict[str, Any]:
    """The record's account of how the final state was graded (DESIGN §4)."""
    if verification is None:
        return {"rewards": None, "artifacts": (), "verifier_environment": None, "collect": ()}
    output = verification.output
    kept = [host_path(artifacts_dir, source) for source in output.artifacts]
    return {
        "rewards": dict(verification.verdict.rewards) if verification.verdict.valid else None,
        # Where each collected artifact is kept, relative to the run directory (when it was kept).
        "artifacts": tuple(path.relative_to(run_dir).as_posix() for path in kept if path.exists()),
        "verifier_environment": output.environment,
        "collect": tuple(step.as_dict() for step in output.collect),
    }


def _agent_run(agent: Agent, session: AgentSession, watchdog_exceptions: tuple[type[BaseException], ...],
               ) -> tuple[str, str | None, AgentResult | None]:
    """(termination, message, result) of the agent's run; the harness's own failures raise."""
    try:
        result = run_agent(agent, session, watchdog_exceptions)
    except BudgetExhausted as exhausted:
        return exhausted.termination, str(exhausted), None
    except (InfraError, DatasetError):
        raise
    except Exception as exc:  # the agent's own crash is its failure, not the harness's
        # The frames are the agent's own (it ran in a worker thread): the innermost ones say where.
        frames = "".join(traceback.format_exception(exc, limit=-5))
        return Termination.AGENT_ERROR, f"{type(exc).__name__}: {exc}\n{frames}", None
    termination = result.termination if result is not None else Termination.SUBMITTED
    if termination == Termination.SUBMITTED and session.remaining_sec() + outside_budget(agent) < 0:
        termination = Termination.TIME_LIMIT  # ran past its wall time without calling the environment
    return termination, result.message if result is not None else None, result


def _agent_run_watched(agent: Agent, session: AgentSession, watchdog_exceptions: tuple[type[BaseException], ...],
                       watch: DiskWatcher | DiskReport | None, environment: Any,
                       ) -> tuple[str, str | None, AgentResult | None, DiskReport | None]:
    """`_agent_run` under the task's disk limit: a run the watcher stopped ends as `disk_limit`,
    whatever the agent made of the kill (an error, a submission, a time limit), and nothing it
    started writes on (any track)."""
    try:
        try:
            termination, message, result = _agent_run(agent, session, watchdog_exceptions)
        except (InfraError, DatasetError):
            if not (isinstance(watch, DiskWatcher) and watch.exceeded):
                raise
            termination, message, result = Termination.DISK_LIMIT, None, None  # the kill, not the engine
    finally:
        if isinstance(watch, DiskWatcher):
            watch.stop()  # and one last reading: a writer that ended within the last interval
    if not isinstance(watch, DiskWatcher):
        return termination, message, result, watch
    if watch.exceeded:
        termination, message = Termination.DISK_LIMIT, watch.message
        _stop_everything(environment)
    return termination, message, result, watch.report()


def _lost_by_agent(number: int, lost: EnvironmentLostByAgent, session: AgentSession, trajectory: Trajectory,
                   durations: dict[str, float], started: float, agent_started: float, environment: Any) -> _Attempt:
    """The attempt whose container stopped with no cause from outside it (`EnvironmentLostByAgent`):
    the agent's failure, never retried; nothing is left to verify, so no verdict."""
    reason = f"{str(lost).removeprefix(f'{lost.stage}: ')}: the agent's failure, nothing could be verified"
    trajectory.final_message = reason
    durations.setdefault("agent_sec", time.monotonic() - agent_started)
    durations["total_sec"] = time.monotonic() - started
    return _Attempt(number, Outcome.FAILURE, Termination.AGENT_ERROR, trajectory=trajectory, message=reason,
                    error=reason, durations=durations, cost=session.cost, engine=getattr(environment, "engine", None),
                    actions_recorded=session.actions_recorded, workdir=environment.workdir, tokens=session.tokens,
                    cost_known=session.cost_known)


def _one_attempt(
    number: int,
    task: Task,
    state: ResidualState | None,
    agent: Agent,
    backend: Backend,
    options: RunOptions,
    acceptance: list[str] | None,
    reference_solution: str | None,
) -> _Attempt:
    durations: dict[str, float] = {}
    started = time.monotonic()
    item = item_id(agent.name, task.id, state.id if state else None, options.handoff, options.rollout)
    # An agent's own install step (Harbor's installed agents) is a layer under its starts.
    spec = StartSpec(options.run_id, item, number, install=getattr(agent, "install_step", None))
    # Kept beside the record; a backend falls back to a private directory if it cannot be written.
    artifacts_dir = item_artifacts_dir(options.run_dir, agent.name, task, state, options.handoff, options.rollout)
    agent_logs_dir = item_agent_logs_dir(options.run_dir, agent.name, task, state, options.handoff, options.rollout)
    shutil.rmtree(agent_logs_dir, ignore_errors=True)  # an earlier attempt's: the record is the last one's
    environment = backend.start(task, state, spec)  # InfraError -> retried by the caller
    watch: DiskWatcher | DiskReport | None = None
    try:
        durations["setup_sec"] = time.monotonic() - started
        trajectory = Trajectory(agent=agent.name)
        handoff = give_handoff(options.handoff, state, environment)  # None: blind, or a Clean Start
        uses_solution = getattr(agent, "uses_reference_solution", False)  # only the oracle sees it
        session = AgentSession(
            instruction=task.instruction + (handoff.sentence if handoff is not None else ""),
            budget=options.budget(task),
            environment=environment,
            trajectory=trajectory,
            reference_solution=reference_solution if uses_solution else None,
            solution_dir=task.solution_dir if uses_solution else None,
            solution_env=dict(task.config.solution_env) if uses_solution else {},
            track=str(task.track),
            logs_dir=agent_logs_dir,
        )
        fidelity = getattr(environment, "fidelity", None)
        agent_started = time.monotonic()
        # Until the first verdict the agent's own container is in use: one that stopped with no
        # cause from outside it is the agent's doing (environments/docker/lost.py).
        watch = _watch_disk(environment, task, session)
        try:
            termination, message, result, disk = _agent_run_watched(agent, session, options.watchdog_exceptions,
                                                                    watch, environment)
            trajectory.final_message = message
            if handoff is not None:  # gone before the patch, the collect steps and the verifier
                handoff.take_back()
            # What the agent spent: charged to the session, or reported on its result.
            cost = max(session.cost, (result.cost or 0.0) if result is not None else 0.0)
            durations["agent_sec"] = time.monotonic() - agent_started
            durations.update(session.phases)  # the agent's own setup() and run(), when it times them
            _stop_agent_processes(environment, task)
            # A machine-track start has no repository to diff: its work is the machine itself.
            # The whole final working tree against the base commit (what Kept and Left-out read),
            # taken before the collect steps run and whatever the task's grading rule is.
            final_patch, capture_note = _capture(environment) if task.track == Track.REPO else (None, None)
            committed = committed_patch(environment) \
                if options.capture_commits and task.track == Track.REPO and final_patch is not None else None
            notes = (capture_note,) if capture_note else ()
            machine_kept = _machine_kept(environment, state) if task.track == Track.MACHINE else None
            verify_started = time.monotonic()
            verification = _verify(backend, environment, task, acceptance, artifacts_dir)
        except EnvironmentLostByAgent as lost:
            if lost.environment_id != getattr(environment, "container_id", None):
                raise  # another container (a separate verifier's): nothing says the agent stopped it
            return _lost_by_agent(number, lost, session, trajectory, durations, started, agent_started,
                                  environment)
        if not verification.verdict.valid:
            first_error = verification.verdict.error
            verification = _reverify_saved(backend, environment, task, final_patch, spec, acceptance, artifacts_dir)
            if not verification.verdict.valid and verification.verdict.error != first_error:
                notes += (f"verifier on the final state: {first_error}",)
        if verification.verdict.success:
            verification = replace(verification, verdict=_checked_claim(backend, task, options.run_id, verification))
        verdict = verification.verdict
        canary_record = None
        if verdict.valid:
            outcome, error = score(verdict, termination), None
        else:
            clean = canary(backend, task, options.run_id)  # InfraError (the engine): retried
            canary_record = Canary(clean.valid, clean.reward, clean.error)
            if clean.valid:
                # The verifier works on the clean state and not on what the agent left: its failure.
                outcome, error = Outcome.FAILURE, None
                notes += (f"no valid verdict on the agent's final state ({verdict.error}), verified again in a "
                          "fresh instance; the verifier gives one on the task's clean state: the agent's failure",)
            else:
                outcome = Outcome.INFRA_ERROR
                error = f"verifier: {verdict.error} (it fails on the task's clean state too: {clean.error})"
        durations["verify_sec"] = time.monotonic() - verify_started
        durations["total_sec"] = time.monotonic() - started
        failed_verification = outcome == Outcome.FAILURE and not verdict.valid
        return _Attempt(number, outcome, Termination.VERIFIER_FAILED if failed_verification else termination,
                        verdict, final_patch, trajectory, message, error=error,
                        durations=durations, reverified=verification.reverified, cost=cost, fidelity=fidelity,
                        engine=getattr(environment, "engine", None),
                        verification=verification, actions_recorded=session.actions_recorded,
                        workdir=environment.workdir, tokens=session.tokens, cost_known=session.cost_known,
                        submitted=termination == Termination.SUBMITTED, notes=notes, canary=canary_record,
                        disk=disk, committed_patch=committed, machine_kept=machine_kept)
    finally:
        if isinstance(watch, DiskWatcher):
            watch.halt()  # already stopped, unless the attempt ended early (an engine failure)
        environment.close()


def run_item(
    task: Task,
    state: ResidualState | None,
    agent_factory: Callable[[], Agent],
    backend: Backend,
    options: RunOptions,
    on_attempt: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run one item to a record; raises DatasetError for a task or state that cannot be used."""
    acceptance = task.acceptance_tests()
    solution_path = task.solution_patch
    reference_solution = solution_path.read_text(errors="surrogateescape") if solution_path else None
    attempts: list[_Attempt] = []
    started = time.monotonic()
    agent_name = "?"
    agent: Agent | None = None
    for number in range(1, options.infra_retries + 2):
        agent = agent_factory()
        agent_name = agent.name
        attempt_started = time.monotonic()
        try:
            attempt = _one_attempt(number, task, state, agent, backend, options, acceptance, reference_solution)
        except InfraError as exc:
            attempt = _Attempt(number, Outcome.INFRA_ERROR, Termination.INFRA_ERROR, error=str(exc),
                               durations={"total_sec": time.monotonic() - attempt_started})
        attempts.append(attempt)
        if on_attempt is not None:
            on_attempt(attempt.summary().to_json())
        if attempt.outcome != Outcome.INFRA_ERROR:
            break
    final = attempts[-1]
    secrets = secret_values(passed_env_names(dict(options.agent_options)))
    inherited_patch = state.read_patch() if state is not None else None
    reference_files = sorted(changed_files(reference_solution)) if reference_solution else None
    durations = Durations(**{**(final.durations or {}), "wall_sec": time.monotonic() - started})
    verifier_notes = _verifier_notes(task, final)
    verification = _verification_record(final.verification, item_artifacts_dir(
        options.run_dir, agent_name, task, state, options.handoff, options.rollout), options.run_dir)
    opened: list[str] | None = None
    inspected_any: bool | None = None
    trajectory_path: str | None = None
    error = final.error
    if final.trajectory is not None:
        # An agent that recorded no trajectory of its own (a `cmd:` agent without a steps
        # file) may have opened anything: unknown (null), never "nothing" ([] / false).
        if final.actions_recorded:
            steps = [step.as_dict() for step in final.trajectory.steps]
            opened, inspected_any = opened_and_inspected(
                steps, workdir=final.workdir or task.config.workdir or DEFAULT_WORKDIR, residual=state is not None,
                predecessor_files=changed_files(inherited_patch) if inherited_patch else set(),
                reference_files=reference_files,
                machine_paths=state.machine_paths() if state is not None and task.track == Track.MACHINE else None)
        relative = Path("trajectories") / agent_slug(agent_name) / task.id / (
            f"{item_file_name(state, options.handoff, options.rollout)}.json"
        )
        _redact_trajectory(final.trajectory, secrets)
        try:
            final.trajectory.write(options.run_dir / relative)
            trajectory_path = relative.as_posix()
        except OSError as exc:  # a read-only or full results disk must not cost the record
            error = "; ".join(filter(None, [error, f"trajectory not written: {exc}"]))
    agent_logs, atif_trajectory = _keep_agent_logs(options.run_dir, item_agent_logs_dir(
        options.run_dir, agent_name, task, state, options.handoff, options.rollout), trajectory_path)
    _redact_artifacts(options.run_dir, [*verification["artifacts"], *filter(None, [agent_logs, atif_trajectory])],
                      secrets)
    verifier_log = _keep_verifier_log(
        final.verification, item_verifier_log(options.run_dir, agent_name, task, state, options.handoff, options.rollout),
        options.run_dir, secrets, verifier_notes)
    budget = options.budget(task)
    valid = final.verdict is not None and final.verdict.valid
    record = RunRecord(
        run_id=options.run_id,
        agent=agent_name,
        task=task.id,
        track=task.track,
        start=Start.CLEAN if state is None else Start.RESIDUAL,
        state=state.id if state else None,
        rollout=options.rollout or 0,
        predecessor=state.predecessor if state else None,
        handoff=options.handoff if state is not None and options.handoff != BLIND else None,
        outcome=final.outcome,
        reward=final.verdict.reward if final.verdict and valid else None,
        submitted=final.submitted,
        termination=final.termination or Termination.INFRA_ERROR,
        tests=dict(final.verdict.tests) if final.verdict and valid else None,
        initial_tests=dict(state.initial_tests) if state and state.initial_tests is not None else None,
        steps=len(final.trajectory.steps) if final.trajectory else None,
        final_patch=final.final_patch,
        committed_patch=final.committed_patch,
        trajectory=trajectory_path,
        atif_trajectory=atif_trajectory,
        agent_logs=agent_logs,
        attempts=tuple(a.summary() for a in attempts),
        durations=durations,
        inherited_patch=inherited_patch,
        reference_files=tuple(reference_files) if reference_files is not None else None,
        opened_files=tuple(opened) if opened is not None else None,
        inspected=inspected_any,
        budget=RecordBudget(budget.timeout_sec, budget.max_steps, budget.cost_limit),
        agent_config=AgentConfig.hashed({**options.agent_config(), **_describe(agent, options.agent_spec or agent_name)}),
        cost=final.cost if final.cost_known else None,
        tokens=Tokens(final.tokens.get("prompt"), final.tokens.get("completion")) if final.tokens is not None else None,
        fidelity=final.fidelity,
        engine=final.engine,
        message=final.message[-2000:] if final.message else None,
        error=error,
        verifier_notes=tuple(verifier_notes),
        verifier_log=verifier_log,
        contradicted=_contradiction(final.verdict),
        machine_kept=final.machine_kept,
        disk_limit=_disk_record(final.disk),
        **verification,
    )
    return redact(record.to_json(), secrets)


def _machine_kept(environment: Any, state: ResidualState | None) -> float | None:
    """The share of the predecessor's file changes (the state's machine.json) still as it left
    them, read before the verifier runs; None without a record of them, or when they cannot be read."""
    recorded = state.machine_digests() if state is not None else {}
    if not recorded:
        return None
    from swe_residual.environments.docker.machine_changes import file_digests, unchanged_share

    try:
        return unchanged_share(recorded, file_digests(environment, sorted(recorded)))
    except (InfraError, OSError):
        return None


def _contradiction(verdict: Verdict | None) -> str | None:
    """The note saying why a passing reward file was overruled, if it was."""
    if verdict is None or verdict.claimed_reward is None:
        return None
    return next((note for note in verdict.notes if note.startswith("contradicted reward")), "contradicted reward")


def _disk_record(report: DiskReport | None) -> DiskLimit | None:
    if report is None:
        return None
    return DiskLimit(storage_mb=report.storage_mb, enforcement=report.enforcement, how=report.how,
                     peak_bytes=report.peak_bytes, readings=report.readings,
                     interval_sec=round(report.interval_sec, 3) if report.interval_sec is not None else None,
                     exceeded=report.exceeded, error=report.error)


def score(verdict: Verdict, termination: str) -> str:
    """A run's outcome from a valid verdict and how the agent's run ended.

    Success needs both: the agent declared the task done (`submitted`) and the verdict
    passes. An exhausted budget (`time_limit`, `step_limit`, `cost_limit`) or the agent's own
    error is a failure whatever the final state is worth; the verdict itself stays in the
    record. Paper App. D: "In the success rates of Table 3, runs that exhaust the budget
    count as task failures."
    """
    return Outcome.SUCCESS if verdict.success and termination == Termination.SUBMITTED else Outcome.FAILURE


def item_file_name(state: ResidualState | None, handoff: str = BLIND, rollout: int | None = None) -> str:
    """An item's name in the per-item paths: `clean` or the state id, its view, then `.rN` for a
    rollout of a run with `--rollouts` above 1 (so two rollouts never share a file)."""
    return (f"{state.id}{view_suffix(handoff)}" if state else "clean") + rollout_file_suffix(rollout)


def item_artifacts_dir(run_dir: Path, agent_name: str, task: Task, state: ResidualState | None,
                       handoff: str = BLIND, rollout: int | None = None) -> Path:
    """Where an item's collected artifacts are kept, beside its trajectory."""
    return run_dir / "artifacts" / agent_slug(agent_name) / task.id / item_file_name(state, handoff, rollout)


def item_agent_logs_dir(run_dir: Path, agent_name: str, task: Task, state: ResidualState | None,
                        handoff: str = BLIND, rollout: int | None = None) -> Path:
    """Where an item's agent keeps its own logs (a Harbor agent's /logs/agent, as Harbor keeps
    them in its trial's `agent/`): under `agent/`, laid out as the artifacts are."""
    return run_dir / "agent" / agent_slug(agent_name) / task.id / item_file_name(state, handoff, rollout)


def _keep_agent_logs(run_dir: Path, logs_dir: Path, trajectory_path: str | None) -> tuple[str | None, str | None]:
    """(the agent's logs directory, its ATIF trajectory), relative to the run directory, of
    what the final attempt's agent left in `logs_dir`; the ATIF `trajectory.json` moves beside
    the suite's trajectory as `<item>.atif.json` (one copy, found where the suite's is)."""
    atif = logs_dir / "trajectory.json"
    atif_path: str | None = None
    if atif.is_file() and trajectory_path is not None:
        kept = (run_dir / trajectory_path).with_suffix(".atif.json")
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(atif, kept)
            atif_path = kept.relative_to(run_dir).as_posix()
        except OSError:
            pass  # a read-only or full results disk: not kept
    if not logs_dir.is_dir() or not any(logs_dir.iterdir()):
        return None, atif_path
    return logs_dir.relative_to(run_dir).as_posix(), atif_path


def item_verifier_log(run_dir: Path, agent_name: str, task: Task, state: ResidualState | None,
                      handoff: str = BLIND, rollout: int | None = None) -> Path:
    """Where an item's verifier output (test.sh's stdout and stderr) is kept: under `verifier/`,
    laid out as the artifacts are, in a file named as Harbor names it."""
    return (run_dir / "verifier" / agent_slug(agent_name) / task.id / item_file_name(state, handoff, rollout)
            / "test-stdout.txt")


def _keep_verifier_log(verification: _Verification | None, path: Path, run_dir: Path, secrets: list[str],
                       notes: list[str]) -> str | None:
    """Write what the verifier printed for the final verdict to `path`; its path relative to the
    run directory, or None when there was nothing to keep (no verification) or it was not written."""
    if verification is None or (not verification.output.output and verification.output.exit_code is None):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(redact(verification.output.output, secrets), encoding="utf-8", errors="replace")
    except OSError as exc:  # a read-only or full results disk must not cost the record
        notes.append(f"verifier output not kept: {exc}")
        return None
    return path.relative_to(run_dir).as_posix()


def _verifier_notes(task: Task, final: _Attempt) -> list[str]:
    notes = list(final.verdict.notes) if final.verdict else []
    notes += final.notes
    if final.verification is not None:
        output = final.verification.output
        declared = [artifact.source for artifact in task.config.artifacts]
        notes += collect_notes(output.collect, [source for source in declared if source not in output.artifacts])
    return notes


def _describe(agent: Agent | None, spec: str | None) -> dict[str, Any]:
    """An agent's own account of its configuration (harness, version, model, the digests of a
    `cmd:` agent's files), if it gives one, with a `module:` agent's source digests."""
    describe = getattr(agent, "describe", None)
    own = dict(describe()) if callable(describe) else {}
    files = agent_files(spec, agent) if agent is not None else {}
    if files:
        own["files"] = {**files, **(own.get("files") or {})}
    return own


def _redact_artifacts(run_dir: Path, artifacts: list[str], secrets: list[str]) -> None:
    """The kept copies of the artifacts hold no secret either (the verifier had the originals)."""
    for relative in artifacts:
        root = run_dir / relative
        for path in [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()):
            try:
                data = path.read_bytes()
                cleaned = data
                for secret in secrets:
                    cleaned = cleaned.replace(secret.encode(), REDACTED.encode())
                if cleaned != data:
                    path.write_bytes(cleaned)
            except OSError:  # a read-only results disk: such copies are not kept at all
                continue


def _redact_trajectory(trajectory: Trajectory, secrets: list[str]) -> None:
    """Secrets an agent printed (or echoed) never reach the trajectory file."""
    for step in trajectory.steps:
        step.output = redact(step.output, secrets)
        step.command = redact(step.command, secrets)
    trajectory.final_message = redact(trajectory.final_message, secrets)

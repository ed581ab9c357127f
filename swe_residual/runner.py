"""Running one item: a start (clean or residual), an agent, the verifier, one run record.

The failure policy of DESIGN §7: an infrastructure failure (environment, engine, verifier
without a valid verdict) is retried from a fresh instance of the same starting state, up to
`infra_retries` times, every attempt recorded; when only verification failed, the saved
final state is verified again first. A task failure (valid verdict 0, budget exhausted,
the agent's own error) is never retried.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from swe_residual.agents import (
    Agent,
    AgentSession,
    Budget,
    BudgetExhausted,
    passed_env_names,
)
from swe_residual.agents.base import AGENT_ERROR, INFRA_ERROR, SUBMITTED
from swe_residual.diffparse import changed_files
from swe_residual.environment.base import Backend, StartSpec
from swe_residual.errors import DatasetError, InfraError
from swe_residual.metrics.trajectory import inspected, opened_files
from swe_residual.patches import capture_patch
from swe_residual.records import RECORD_SCHEMA, agent_slug, item_id
from swe_residual.redaction import REDACTED, SECRET_OPTION_KEY, redact, secret_values
from swe_residual.state import ResidualState
from swe_residual.task import Task
from swe_residual.trajectory import Trajectory
from swe_residual.verifier import Verdict, evaluate

SUCCESS, FAILURE = "success", "failure"


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

    def agent_config(self) -> dict[str, Any]:
        """What configured the agent, for the record; option values that look secret are hidden."""
        options = {k: (REDACTED if SECRET_OPTION_KEY.search(k) else v) for k, v in self.agent_options}
        return {"model": self.model, "options": options}

    def budget(self, task: Task) -> Budget:
        return Budget(
            timeout_sec=task.config.agent_timeout_sec * self.timeout_multiplier,
            max_steps=self.max_steps,
            cost_limit=self.cost_limit,
        )


@dataclass
class _Attempt:
    number: int
    outcome: str
    termination: str | None = None
    verdict: Verdict | None = None
    final_patch: str | None = None
    trajectory: Trajectory | None = None
    message: str | None = None
    error: str | None = None
    durations: dict[str, float] | None = None
    reverified: bool = False
    cost: float | None = None
    fidelity: str | None = None  # how a machine-track state was restored (docker backend)

    def summary(self) -> dict[str, Any]:
        return {
            "attempt": self.number, "outcome": self.outcome, "termination": self.termination,
            "error": self.error, "reverified": self.reverified, "durations": self.durations or {},
        }


def _verify(backend: Backend, environment: Any, task: Task, acceptance: list[str] | None) -> tuple[Verdict, bool, float]:
    """Verify; if no valid verdict, verify the same final state once more before giving up."""
    started = time.monotonic()
    verdict = evaluate(backend.run_verifier(environment, task), acceptance)
    reverified = False
    if not verdict.valid:
        reverified = True
        verdict = evaluate(backend.run_verifier(environment, task), acceptance)
    return verdict, reverified, time.monotonic() - started


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
    spec = StartSpec(options.run_id, item_id(agent.name, task.id, state.id if state else None), number)
    environment = backend.start(task, state, spec)  # InfraError -> retried by the caller
    try:
        durations["setup_sec"] = time.monotonic() - started
        trajectory = Trajectory(agent=agent.name)
        session = AgentSession(
            instruction=task.instruction,
            budget=options.budget(task),
            environment=environment,
            trajectory=trajectory,
            reference_solution=reference_solution if getattr(agent, "uses_reference_solution", False) else None,
            solution_dir=task.solution_dir if getattr(agent, "uses_reference_solution", False) else None,
        )
        fidelity = getattr(environment, "fidelity", None)
        agent_started = time.monotonic()
        message = None
        result = None
        try:
            result = agent.run(session)
            termination = result.termination if result is not None else SUBMITTED
            message = result.message if result is not None else None
            if termination == SUBMITTED and session.remaining_sec() < 0:
                termination = "time_limit"  # ran past its wall time without calling the environment
        except BudgetExhausted as exhausted:
            termination, message = exhausted.termination, str(exhausted)
        except (InfraError, DatasetError):
            raise
        except Exception as exc:  # the agent's own crash is its failure, not the harness's
            termination = AGENT_ERROR
            message = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
        trajectory.final_message = message
        # What the agent spent: charged to the session, or reported on its result.
        cost = max(session.cost, (result.cost or 0.0) if result is not None else 0.0)
        durations["agent_sec"] = time.monotonic() - agent_started
        # A machine-track start has no repository to diff: its work is the machine itself.
        final_patch = capture_patch(environment) if task.track == "repo" else None
        verdict, reverified, verify_sec = _verify(backend, environment, task, acceptance)
        durations["verify_sec"] = verify_sec
        durations["total_sec"] = time.monotonic() - started
        if not verdict.valid:
            return _Attempt(number, INFRA_ERROR, termination, verdict, final_patch, trajectory, message,
                            error=f"verifier: {verdict.error}", durations=durations, reverified=reverified, cost=cost,
                            fidelity=fidelity)
        outcome = SUCCESS if verdict.success and termination != AGENT_ERROR else FAILURE
        return _Attempt(number, outcome, termination, verdict, final_patch, trajectory, message,
                        durations=durations, reverified=reverified, cost=cost, fidelity=fidelity)
    finally:
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
            attempt = _Attempt(number, INFRA_ERROR, INFRA_ERROR, error=str(exc),
                               durations={"total_sec": time.monotonic() - attempt_started})
        attempts.append(attempt)
        if on_attempt is not None:
            on_attempt(attempt.summary())
        if attempt.outcome != INFRA_ERROR:
            break
    final = attempts[-1]
    secrets = secret_values(passed_env_names(dict(options.agent_options)))
    inherited_patch = state.read_patch() if state is not None else None
    reference_files = sorted(changed_files(reference_solution)) if reference_solution else None
    record: dict[str, Any] = {
        "schema": RECORD_SCHEMA,
        "run_id": options.run_id,
        "agent": agent_name,
        "task": task.id,
        "track": task.track,
        "start": "clean" if state is None else "residual",
        "state": state.id if state else None,
        "predecessor": state.predecessor if state else None,
        "outcome": final.outcome,
        "reward": final.verdict.reward if final.verdict and final.verdict.valid else None,
        "submitted": final.termination == SUBMITTED,
        "termination": final.termination or INFRA_ERROR,
        "tests": dict(final.verdict.tests) if final.verdict and final.verdict.valid else None,
        "initial_tests": dict(state.initial_tests) if state and state.initial_tests is not None else None,
        "steps": len(final.trajectory.steps) if final.trajectory else None,
        "final_patch": final.final_patch,
        "trajectory": None,
        "attempts": [a.summary() for a in attempts],
        "durations": {**(final.durations or {}), "wall_sec": time.monotonic() - started},
        "inherited_patch": inherited_patch,
        "reference_files": reference_files,
        "opened_files": None,
        "inspected": None,
        "budget": options.budget(task).as_dict(),
        "agent_config": {**options.agent_config(), **_describe(agent)},
        "cost": final.cost,
        "fidelity": final.fidelity,
        "message": final.message[-2000:] if final.message else None,
        "error": final.error,
        "verifier_notes": list(final.verdict.notes) if final.verdict else [],
    }
    if final.trajectory is not None:
        steps = [step.as_dict() for step in final.trajectory.steps]
        predecessor_files = changed_files(inherited_patch) if inherited_patch else set()
        candidates = set(reference_files or []) | predecessor_files
        record["opened_files"] = sorted(opened_files(steps, candidates))
        record["inspected"] = inspected(steps, predecessor_files) if state is not None else None
        relative = Path("trajectories") / agent_slug(agent_name) / task.id / (
            f"{state.id}.json" if state else "clean.json"
        )
        _redact_trajectory(final.trajectory, secrets)
        try:
            final.trajectory.write(options.run_dir / relative)
            record["trajectory"] = relative.as_posix()
        except OSError as exc:  # a read-only or full results disk must not cost the record
            record["error"] = "; ".join(filter(None, [record["error"], f"trajectory not written: {exc}"]))
    return redact(record, secrets)


def _describe(agent: Agent | None) -> dict[str, Any]:
    """An agent's own account of its configuration (harness, version, model), if it gives one."""
    describe = getattr(agent, "describe", None)
    return dict(describe()) if callable(describe) else {}


def _redact_trajectory(trajectory: Trajectory, secrets: list[str]) -> None:
    """Secrets an agent printed (or echoed) never reach the trajectory file."""
    for step in trajectory.steps:
        step.output = redact(step.output, secrets)
        step.command = redact(step.command, secrets)
    trajectory.final_message = redact(trajectory.final_message, secrets)

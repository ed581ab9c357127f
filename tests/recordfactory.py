"""Run records with defaults, for metric and summary goldens."""

from __future__ import annotations

from typing import Any

from swe_residual.trial.record_model import RunRecord
from swe_residual.trial.records import read_record

INFRA = "infra_error"

#: The keys of a runner's record, in the order results.jsonl has always had them
#: (docs/records.md), with `rollout` since `--rollouts`; `handoff` only on a non-blind Residual State item.
RUNNER_KEYS = [
    "schema", "run_id", "agent", "task", "track", "start", "state", "rollout", "predecessor", "handoff", "outcome",
    "reward", "submitted", "termination", "tests", "initial_tests", "steps", "final_patch", "trajectory",
    "attempts", "durations", "inherited_patch", "reference_files", "opened_files", "inspected", "budget",
    "agent_config", "cost", "tokens", "fidelity", "engine", "message", "error", "verifier_notes", "rewards",
    "artifacts", "verifier_environment", "collect", "verifier_log",
]


def make_record(
    task: str,
    state: str | None = None,
    outcome: str = "success",
    *,
    agent: str = "A",
    pred: str = "P",
    track: str = "repo",
    attempts: int = 1,
    error: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A record of the DESIGN §5 shape; ``state=None`` makes a Clean Start record.

    ``attempts`` > 1 adds earlier attempts that ended in an infrastructure error.
    """
    tries = [{"attempt": n, "outcome": INFRA, "error": "lost container"} for n in range(1, attempts)]
    tries.append({"attempt": attempts, "outcome": outcome, "error": error})
    record: dict[str, Any] = {
        "schema": 1,
        "run_id": "r",
        "agent": agent,
        "task": task,
        "track": track,
        "start": "clean" if state is None else "residual",
        "state": state,
        "predecessor": None if state is None else pred,
        "outcome": outcome,
        "reward": {"success": 1.0, "failure": 0.0}.get(outcome),
        "submitted": outcome != INFRA,
        "termination": INFRA if outcome == INFRA else "submitted",
        "tests": None,
        "initial_tests": None,
        "steps": 10,
        "final_patch": None,
        "inherited_patch": None,
        "reference_files": None,
        "opened_files": None,
        "inspected": None,
        "trajectory": None,
        "attempts": tries,
        "durations": {},
    }
    record.update(extra)
    return record


def make_run_record(*args: Any, **kwargs: Any) -> RunRecord:
    """:func:`make_record` read as the typed record the metrics take."""
    return read_record(make_record(*args, **kwargs))

"""Stage IV's check on a reconstructed state: the verifier still fails, with a valid verdict.

Used by the docker backend once per state before the state's snapshot is tagged (so every
rollout starts from a validated copy), and by the residualization pipeline.
"""

from __future__ import annotations

from typing import Any

from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.task import Task
from swe_residual.environments.verifier.outputs import Verdict, evaluate


def check_state_verdict(backend: Any, environment: Any, task: Task, state: ResidualState) -> Verdict:
    """Run the verifier on the untouched state; raise unless it is a valid failure."""
    verdict = evaluate(backend.run_verifier(environment, task), task.acceptance_tests())
    if not verdict.valid:
        raise InfraError(f"state {task.id}/{state.id}: no valid verifier verdict: {verdict.error}", stage="validation")
    if verdict.success:
        raise DatasetError(state.path / "state.toml", "the verifier passes on this state: it is no Residual State",
                           field="validation")
    return verdict

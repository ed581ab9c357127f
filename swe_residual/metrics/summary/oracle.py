"""The oracle's own check: every start it did not solve, listed (never a silent 0%).

The oracle runs the task's reference solution, so each start it fails is a fault of the task,
the state or the suite (a solve.sh that cannot find its patch, a state that destroyed what the
task recovers from), not a score. `summary.json` holds them under `"oracle"` when the oracle
ran; every output lists them (`ORACLE_SECTION`, swe_residual/report/sections.py). `oracle_solvable` is the same check
before a dataset runs (`validate --verify`, Stage IV of `residualize build`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from swe_residual.metrics.summary.model import OracleMiss, OracleSummary
from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.values import Outcome

if TYPE_CHECKING:
    from swe_residual.environments.base import Backend
    from swe_residual.dataset.states.state import ResidualState
    from swe_residual.dataset.task import Task

ORACLE = "oracle"
MESSAGE_CHARS = 300


def _is_oracle(record: RunRecord) -> bool:
    # By what ran, not by its label (`--agent-name` may name the oracle anything).
    spec = record.agent_config.spec if record.agent_config is not None else None
    return (spec or record.agent) == ORACLE


def oracle_summary(records: Sequence[RunRecord]) -> OracleSummary | None:
    """How many starts the oracle ran and each it did not solve (task, state, outcome,
    termination, message), or None when the oracle did not run."""
    ran = [r for r in records if _is_oracle(r)]
    if not ran:
        return None
    unsolved = [
        OracleMiss(
            task=r.task,
            state=r.state,
            # as plain strings: the summary is JSON, read back as such
            outcome=str(r.outcome) if r.outcome is not None else None,
            termination=str(r.termination) if r.termination is not None else None,
            message=(str(r.error or r.message or ""))[-MESSAGE_CHARS:] or None,
        )
        for r in ran
        if r.outcome != Outcome.SUCCESS
    ]
    unsolved.sort(key=lambda e: (str(e.task), e.state or ""))
    return OracleSummary(starts=len(ran), unsolved=tuple(unsolved))


def oracle_solvable(backend: Backend, task: Task, state: ResidualState | None, run_id: str, *,
                    discard_inherited: bool = True) -> tuple[bool, str]:
    """(whether the oracle solves the start, why not / its reward): one run of the oracle from
    the Clean Start (state None) or from `state`, graded as a run grades it. With
    `discard_inherited=False` the oracle keeps a repo-track state's work too, as Harbor's oracle
    runs solve.sh on whatever it finds. Raises what `run_item` raises for a task or state that
    cannot be used."""
    from swe_residual.agents.builtin import OracleAgent
    from swe_residual.trial.runner import RunOptions, run_item

    def oracle() -> OracleAgent:
        return OracleAgent(discard_inherited=discard_inherited)

    with tempfile.TemporaryDirectory(prefix="swe-residual-oracle-") as scratch:
        run = run_item(task, state, oracle, backend, RunOptions(run_id=run_id, run_dir=Path(scratch),
                                                                   infra_retries=0))
    if run.outcome == Outcome.SUCCESS:
        return True, f"reward {run.reward}"
    why = str(run.error or run.message or "").replace("\n", " ")[-MESSAGE_CHARS:]
    return False, f"{run.outcome}, reward {run.reward}: {why}"

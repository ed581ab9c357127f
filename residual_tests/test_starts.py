"""One item per (agent, task, Clean Start) and per (agent, task, Residual State).

The fixture `residual_record` builds the start in a fresh environment, runs the agent on the
request and the hidden verifier on the result (fixtures/starts.py). The item passes when the
run produced a valid measurement, whatever the agent scored: scores are in the summary.
It fails only when the infrastructure failed on every attempt.
"""

from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.values import Outcome


def test_start(residual_record: RunRecord) -> None:
    if residual_record.outcome == Outcome.INFRA_ERROR:
        attempts = "; ".join(f"#{a.attempt}: {a.error}" for a in residual_record.attempts)
        raise AssertionError(f"no valid verdict after {len(residual_record.attempts)} attempt(s): {attempts}")

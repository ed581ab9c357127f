"""The request a predecessor was given, where it differs from the task's.

An imported run may have been made on another version of the task (a Terminal-Bench 1 trial
kept as a state of the Terminal-Bench 2 task): the request the reviewers judge the work
against is the dataset's, but the work answered the one the run recorded. Both review views
show the difference, so "task-directed" is judged knowing what the predecessor was asked.
"""

from __future__ import annotations

import difflib
from swe_residual.trial.record_model import RunRecord

HEADING = "The request the run was given (it differs from the task's)"


def request_difference(record: RunRecord, request: str) -> str | None:
    """A unified diff from the run's recorded request to the task's, or None when they agree
    (an imported run keeps its source's request under `residualize.source`, a key of its own)."""
    source = (record.extra.get("residualize") or {}).get("source") or {}
    given = source.get("instruction") if isinstance(source, dict) else None
    if not isinstance(given, str) or given.strip() == request.strip():
        return None
    lines = difflib.unified_diff(given.strip().splitlines(), request.strip().splitlines(),
                                 "the run's request", "the task's request", lineterm="")
    return "\n".join(lines)

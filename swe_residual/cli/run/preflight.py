"""What the dataset says before the first item runs: tasks that cannot be loaded and set-ups
that would grade none of the agent's work.

Both were found only late before: a malformed `task.toml` as an `E` among the results, a
separate verifier that receives nothing of the agent's only in `swe-residual validate` (an agent
fixing the code scored 0% without a word). The run's header prints these lines before any item
runs, and the summary carries them (`dataset_warnings` in summary.json, summary.md,
report.html). A malformed task does not stop the run: the DESIGN's rule is that it never stops
the other items, so its item still reports it as an error, naming the file and field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swe_residual.residualize.check import grading_warnings
from swe_residual.dataset.errors import DatasetError


def task_errors(errors: Iterable[tuple[str, DatasetError]]) -> list[str]:
    """One line per task that could not be loaded (its error names the file and field)."""
    return [f"task {name}: {error} (its item is an error; the other items run)" for name, error in errors]


def dataset_warnings(tasks: Iterable[Any]) -> list[str]:
    """One line per task whose grading would receive none of the agent's work."""
    return [f"task {task.id}: {warning}" for task in tasks for warning in grading_warnings(task)]

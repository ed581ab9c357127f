"""Headline metrics over run records: Res, Clean, Gap, CondFail and predecessor groups.

Paper Appendix C.2, equations (3)-(5) and Table 8. Pure functions over run records
(`RunRecord`, or their JSON dicts, read as `RunRecord`; DESIGN.md section 5). Records whose
outcome is ``infra_error`` are excluded, never counted as failures; a task needs a non-excluded
Clean Start record and at least one non-excluded Residual Start record of the agent to enter
the task set T. Records are deduplicated by
:func:`swe_residual.trial.records.record_key` (re-exported here with :func:`dedupe_records`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from swe_residual.trial.record_model import RecordLike, RunRecord, as_record, as_records
from swe_residual.trial.records import dedupe_records, record_key
from swe_residual.trial.values import Outcome, Start

__all__ = [
    "Record",
    "RecordLike",
    "TaskRuns",
    "StateRun",
    "record_key",
    "dedupe_records",
    "is_excluded",
    "success",
    "task_table",
    "residual_rate",
    "clean_rate",
    "cond_fail_rate",
    "by_predecessor",
    "headline",
    "UNKNOWN_PREDECESSOR",
]

Record = RunRecord

#: predecessor label used for a residual record that names none
UNKNOWN_PREDECESSOR = "unknown"


def is_excluded(record: RecordLike) -> bool:
    """An unresolved infrastructure error: excluded from every metric."""
    return as_record(record).outcome == Outcome.INFRA_ERROR


def success(record: RecordLike) -> int:
    """y = 1 if the verifier's valid verdict is success, else 0."""
    return 1 if as_record(record).outcome == Outcome.SUCCESS else 0


@dataclass(frozen=True)
class StateRun:
    """One Residual Start run of a task."""

    state: str
    predecessor: str
    y: int


@dataclass(frozen=True)
class TaskRuns:
    """A task of T: its Clean Start outcome and its Residual Start outcomes."""

    task: Hashable
    clean: int
    states: tuple[StateRun, ...]


def task_table(
    records: Iterable[RecordLike], *, key_by_track: bool = False
) -> dict[Hashable, TaskRuns]:
    """Build T for one agent: tasks with a non-excluded clean run and >= 1 non-excluded state.

    ``records`` must belong to one agent and should already be deduplicated. With
    ``key_by_track`` the task identity is (track, task), so pooling tracks never merges two
    tracks' tasks.
    """
    clean: dict[Hashable, int] = {}
    states: dict[Hashable, dict[str, StateRun]] = {}
    for rec in as_records(records):
        if is_excluded(rec):
            continue
        task: Hashable = (rec.track, rec.task) if key_by_track else rec.task
        if rec.start == Start.CLEAN:
            clean[task] = success(rec)
        elif rec.start == Start.RESIDUAL:
            pred = rec.predecessor
            state = str(rec.state)
            states.setdefault(task, {})[state] = StateRun(
                state=state,
                predecessor=str(pred) if pred is not None else UNKNOWN_PREDECESSOR,
                y=success(rec),
            )
    table: dict[Hashable, TaskRuns] = {}
    for task, y_clean in clean.items():
        runs = states.get(task)
        if runs:
            table[task] = TaskRuns(task=task, clean=y_clean, states=tuple(runs.values()))
    return table


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def residual_rate(tasks: Iterable[TaskRuns]) -> float | None:
    """Res(A) in percent (eq. 3): mean over a task's states, then over tasks."""
    per_task = [sum(s.y for s in t.states) / len(t.states) for t in tasks if t.states]
    mean = _mean(per_task)
    return None if mean is None else 100.0 * mean


def clean_rate(tasks: Iterable[TaskRuns]) -> float | None:
    """Clean(A) in percent (eq. 4) on the same tasks."""
    mean = _mean([float(t.clean) for t in tasks])
    return None if mean is None else 100.0 * mean


def cond_fail_rate(tasks: Iterable[TaskRuns]) -> float | None:
    """CondFail(A) in percent (eq. 5) over C_A = tasks solved from Clean Start; None if empty."""
    per_task = [
        sum(1 - s.y for s in t.states) / len(t.states) for t in tasks if t.clean == 1 and t.states
    ]
    mean = _mean(per_task)
    return None if mean is None else 100.0 * mean


def _gap(clean: float | None, residual: float | None) -> float | None:
    if clean is None or residual is None:
        return None
    return clean - residual


def by_predecessor(tasks: Iterable[TaskRuns]) -> dict[str, dict[str, Any]]:
    """Table 8 groups: per predecessor, tasks with >= 1 of its states, only its states averaged,
    Clean Start matched on the same tasks."""
    groups: dict[str, list[TaskRuns]] = {}
    for t in tasks:
        preds = sorted({s.predecessor for s in t.states})
        for pred in preds:
            only = tuple(s for s in t.states if s.predecessor == pred)
            groups.setdefault(pred, []).append(TaskRuns(task=t.task, clean=t.clean, states=only))
    out: dict[str, dict[str, Any]] = {}
    for pred in sorted(groups):
        group = groups[pred]
        res = residual_rate(group)
        cln = clean_rate(group)
        out[pred] = {"residual": res, "clean": cln, "gap": _gap(cln, res), "n_tasks": len(group)}
    return out


def headline(records: Iterable[RecordLike], *, key_by_track: bool = False) -> dict[str, Any]:
    """All headline metrics of one agent's records (one track, or all with ``key_by_track``).

    Returns ``{residual, clean, gap, cond_fail, n_tasks, n_states, by_predecessor}``; percentages
    are unrounded floats in 0-100 and ``gap`` is in points (clean - residual).
    """
    tasks = list(task_table(records, key_by_track=key_by_track).values())
    res = residual_rate(tasks)
    cln = clean_rate(tasks)
    return {
        "residual": res,
        "clean": cln,
        "gap": _gap(cln, res),
        "cond_fail": cond_fail_rate(tasks),
        "n_tasks": len(tasks),
        "n_states": sum(len(t.states) for t in tasks),
        "by_predecessor": by_predecessor(tasks),
    }

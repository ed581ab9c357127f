"""The summary of records as tests write them (dicts, as results.jsonl holds them, or typed
records): read once here, then summarized, as the plugin and `swe-residual report` do with a
results file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from swe_residual.metrics.summary.aggregate import summarize
from swe_residual.metrics.summary.model import Summary, summary_json
from swe_residual.trial.record_model import RunRecord
from swe_residual.trial.records import read_record


def record_of(record: RunRecord | Mapping[str, Any]) -> RunRecord:
    return record if isinstance(record, RunRecord) else read_record(record)


def records_of(records: Iterable[RunRecord | Mapping[str, Any]]) -> list[RunRecord]:
    return [record_of(record) for record in records]


def summary_of(records: Iterable[RunRecord | Mapping[str, Any]], **options: Any) -> Summary:
    """The typed summary of `records` (`options`: `summarize`'s)."""
    return summarize(records_of(records), **options)


def summary_dict(records: Iterable[RunRecord | Mapping[str, Any]], **options: Any) -> dict[str, Any]:
    """What summary.json holds for `records`."""
    return summary_json(summary_of(records, **options))


def parsed(summary: Mapping[str, Any]) -> Summary:
    """A hand-written summary.json dict as the typed summary, read as a file is."""
    return Summary.model_validate(summary)

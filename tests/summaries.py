"""The summary of records as tests write them (dicts, as results.jsonl holds them): parsed once
here, then summarized, as the plugin and `swe-residual report` do with a results file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from swe_residual.summary.aggregate import summarize
from swe_residual.summary.model import Summary, summary_json
from swe_residual.trial.record_model import RecordLike, RunRecord, as_record, as_records


def record_of(record: RecordLike) -> RunRecord:
    return as_record(record)


def records_of(records: Iterable[RecordLike]) -> list[RunRecord]:
    return as_records(records)


def summary_of(records: Iterable[RecordLike], **options: Any) -> Summary:
    """The typed summary of `records` (`options`: `summarize`'s)."""
    return summarize(as_records(records), **options)


def summary_dict(records: Iterable[RecordLike], **options: Any) -> dict[str, Any]:
    """What summary.json holds for `records`."""
    return summary_json(summary_of(records, **options))


def parsed(summary: Mapping[str, Any]) -> Summary:
    """A hand-written summary.json dict as the typed summary, read as a file is."""
    return Summary.model_validate(summary)

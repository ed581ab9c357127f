"""On an xdist worker: every report reaches the controller, or its record reaches the disk.

xdist sends each report to the controller through execnet, which encodes every string as
UTF-8: a lone surrogate (a byte that is not UTF-8, kept by `surrogateescape` in a patch, a
file name, an agent's output) raised UnicodeEncodeError there, and the whole run ended in
INTERNALERROR with the record lost. The record itself travels as one line of ASCII JSON
(`records.record_line`, lossless), so it always can be sent; this guard covers the rest of the
report too. Before xdist sends a report, the worker serializes it as xdist will; a report that
cannot be sent has its record written by the worker itself to the run's fallback file (the
`.unsaved.jsonl` that every reader of `results.jsonl` reads beside it), its property replaced
by where the record went (`UNSENT_PROPERTY`), and its text escaped so the report still arrives.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import execnet
import pytest

from plugins.context import RECORD_PROPERTY
from swe_residual.trial.records import append_record, fallback_path, read_record, read_record_line, record_line

UNSENT_PROPERTY = "swe_residual_record_unsent"  # {"path": where the worker wrote the record, "error": why}


def unsendable(config: pytest.Config, report: pytest.TestReport) -> str | None:
    """Why xdist could not send `report` (None when it can), by serializing it as xdist does."""
    try:
        data = config.hook.pytest_report_to_serializable(config=config, report=report)
        execnet.dumps(data)
    except Exception as exc:  # execnet's DumpError, UnicodeEncodeError, ...: the send would fail the same way
        return f"{type(exc).__name__}: {exc}"
    return None


def _escaped(value: Any) -> Any:
    """`value` with every string made encodable (undecodable bytes as `\\xNN`)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, (list, tuple)):
        return type(value)(_escaped(item) for item in value)
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    return value


def keep_unsendable(report: pytest.TestReport, results_path: Path, error: str) -> None:
    """Write the report's record to the fallback file, then make the report sendable."""
    properties: list[tuple[str, Any]] = []
    for name, value in report.user_properties:
        if name != RECORD_PROPERTY:
            properties.append((name, _escaped(value)))
            continue
        # a line as the fixture puts it (fixtures/starts.py); an object from a plugin that put one
        record = read_record_line(value) if isinstance(value, str) else read_record(value)
        target = fallback_path(results_path)
        try:
            append_record(target, record)
            properties.append((UNSENT_PROPERTY, {"path": str(target), "error": error}))
        except OSError as exc:  # the last place left: this worker's stderr, which xdist shows
            print(f"swe-residual: record of {report.nodeid} (not sent: {error}; {target}: {exc}):\n"
                  f"{record_line(record)}", file=sys.stderr)
            properties.append((UNSENT_PROPERTY, {"path": None, "error": f"{error}; {target}: {exc}"}))
    report.user_properties = properties
    if report.longrepr is not None:
        report.longrepr = _escaped(report.longrepr if isinstance(report.longrepr, tuple) else str(report.longrepr))
    report.sections = [(_escaped(title), _escaped(text)) for title, text in report.sections]


class WorkerGuard:
    """Registered on xdist workers only (plugins/residual.py)."""

    def __init__(self, config: pytest.Config, results_path: Path) -> None:
        self.config = config
        self.results_path = results_path

    @pytest.hookimpl(tryfirst=True)  # before xdist's own hook sends the report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        error = unsendable(self.config, report)
        if error is not None:
            keep_unsendable(report, self.results_path, error)

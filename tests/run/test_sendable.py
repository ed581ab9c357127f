"""The worker's guard (plugins/sendable.py): a report xdist cannot send keeps its record on disk.

The suite's own records always can be sent (one line of ASCII JSON); what cannot is caused
here for real, with the form a record had before (a dict holding a lone surrogate) and a
failure text holding one, and checked with execnet's own serializer, as xdist sends.
"""

from __future__ import annotations

from pathlib import Path

import execnet
import pytest

from plugins.context import RECORD_PROPERTY
from plugins.reporter import record_of
from plugins.sendable import UNSENT_PROPERTY, keep_unsendable, unsendable
from swe_residual.trial.records import fallback_path, read_records, record_line
from recordfactory import make_record, make_run_record

PATCH = "diff --git a/caf\udce9.txt b/caf\udce9.txt\n+temp\udce9rature \udcff\n"


def _report(value: object, longrepr: str | None = None) -> pytest.TestReport:
    return pytest.TestReport("residual_tests/test_starts.py::test_start[x/t/clean]", ("x", 1, "t"), {}, "passed",
                             longrepr, "call", user_properties=[(RECORD_PROPERTY, value)])


@pytest.mark.unit
def test_a_record_line_is_ascii_sendable_and_gives_back_the_same_bytes(pytestconfig: pytest.Config) -> None:
    record = make_run_record("t", final_patch=PATCH)
    line = record_line(record)
    assert line.isascii() and "\\udce9" in line
    report = _report(line)
    assert unsendable(pytestconfig, report) is None
    assert record_of(report).final_patch.encode("utf-8", "surrogateescape") == PATCH.encode("utf-8", "surrogateescape")


@pytest.mark.unit
def test_an_unsendable_report_has_its_record_written_by_the_worker(pytestconfig: pytest.Config, tmp_path: Path) -> None:
    results = tmp_path / "run" / "results.jsonl"
    record = make_record("t", final_patch=PATCH)
    report = _report(record, longrepr=f"failed on {PATCH}")
    error = unsendable(pytestconfig, report)
    assert error is not None and "utf-8" in error  # what INTERNALERROR'd the run before
    try:
        keep_unsendable(report, results, error)
        assert unsendable(pytestconfig, report) is None
        execnet.dumps(pytestconfig.hook.pytest_report_to_serializable(config=pytestconfig, report=report))
        (name, where), = report.user_properties
        assert name == UNSENT_PROPERTY and where["path"] == str(fallback_path(results))
        assert "\\xe9" in str(report.longrepr)
        (kept,) = read_records([results]).records  # read beside results.jsonl, as every reader does
        assert kept.final_patch == PATCH and record_line(kept).isascii()
    finally:
        fallback_path(results).unlink(missing_ok=True)

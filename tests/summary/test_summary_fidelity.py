"""The fidelity each machine-track state was restored with is in the summary (summary.json,
summary.md, the terminal) and in report.html, not only in the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recordfactory import make_record

from summaries import parsed, records_of, summary_dict

from swe_residual.report.html import write_report
from swe_residual.report.markdown import render_markdown
from swe_residual.report.terminal import render_terminal

pytestmark = pytest.mark.unit


def _records() -> list[dict]:
    return [
        make_record("web", None, "success", track="machine", fidelity=None),
        make_record("web", "pred-1", "failure", track="machine", fidelity="replay"),
        make_record("disk", None, "success", track="machine", fidelity=None),
        make_record("disk", "pred-1", "success", track="machine", fidelity="snapshot"),
        make_record("disk", "pred-2", "infra_error", track="machine", fidelity=None, error="replay failed"),
        make_record("calc", "pred-1", "failure"),  # repo track: no fidelity
    ]


def test_fidelity_in_the_summary_and_the_report(tmp_path: Path) -> None:
    summary = summary_dict(_records())
    assert summary["infra"]["fidelity"] == {
        "counts": {"none": 1, "replay": 1, "snapshot": 1},
        "states": [{"task": "disk", "state": "pred-1", "fidelity": "snapshot"},
                   {"task": "disk", "state": "pred-2", "fidelity": None},
                   {"task": "web", "state": "pred-1", "fidelity": "replay"}]}
    assert set(summary) == {"schema", "uncertainty", "agents", "infra"}  # the existing keys stay as they were
    json.dumps(summary)
    lines = render_terminal(parsed(summary))
    start = lines.index("Machine-track fidelity:")
    assert lines[start + 1] == "States restored by: 1 none, 1 replay, 1 snapshot."
    # the states not restored from a snapshot, as summary.md lists them (which lists all three)
    rows = [line.split()[:3] for line in lines[start + 3:start + 5]]
    assert rows == [["disk", "pred-2", "-"], ["web", "pred-1", "replay"]]
    assert "no instance started" in lines[start + 3] and not any("snapshot" in line for line in lines[start + 2:])
    markdown = render_markdown(parsed(summary))
    assert "## Machine-track fidelity" in markdown and "| web | pred-1 | replay |" in markdown
    assert "| disk | pred-1 | snapshot |" in markdown
    html = write_report(tmp_path, parsed(summary), records_of(_records())).read_text()
    assert 'id="fidelity"' in html and "replay" in html.split('id="fidelity"')[1]


def test_no_fidelity_block_without_machine_states() -> None:
    summary = summary_dict([make_record("calc", "pred-1", "failure"), make_record("calc", None, "success")])
    assert "fidelity" not in summary["infra"]
    assert not any("restored by" in line for line in render_terminal(parsed(summary)))

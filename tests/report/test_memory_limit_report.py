"""An item that reached its memory limit reads as the agent's budget in the report (issue 48):
the item page gives the limit and what the kernel killed, the terminations table counts it with
the budgets, and the summary measures it (never an exclusion)."""

from __future__ import annotations

from pathlib import Path

import pytest
from recordfactory import make_record

from summaries import record_of, records_of, summary_dict, summary_of

from swe_residual.metrics.headline import is_excluded
from swe_residual.report.html import write_report
from swe_residual.report.paths import item_href
from swe_residual.report.terminations import column_of

pytestmark = pytest.mark.unit

ACCOUNT = {"memory_mb": 512, "killed": ["sh (pid 22810, oom_score_adj 1000)"],
           "evidence": ["engine event: oom at 2026-12-06T05:03:42.313340207Z", "the engine's state: OOMKilled"]}


def test_an_item_at_its_memory_limit_says_so_with_its_figures(tmp_path: Path) -> None:
    stopped = make_record("t1", None, "failure", agent="zeta", termination="memory_limit", submitted=False,
                          memory_limit=ACCOUNT, message="out of memory: the agent's container reached its memory limit")
    solved = make_record("t2", None, "success", agent="zeta")
    record = record_of(stopped)
    assert record.memory_limit is not None and record.memory_limit.killed == tuple(ACCOUNT["killed"])
    assert column_of(record) == "budget" and not is_excluded(record)
    assert summary_dict([stopped, solved])["infra"]["excluded"] == []
    out = tmp_path / "report"
    write_report(out, summary_of([stopped, solved]), records_of([stopped, solved]), record_dirs=[tmp_path] * 2)
    page = (out / item_href(record)).read_text()
    assert "limit 512 MiB reached (memory_limit); killed: sh (pid 22810, oom_score_adj 1000)" in page
    assert "reached (memory_limit)" not in (out / item_href(record_of(solved))).read_text()

"""Agents' names in the terminal tables stay apart (swe_residual/metrics/summary/names.py)."""

from __future__ import annotations

import pytest

from summaries import records_of

from swe_residual.metrics.summary.names import distinct_names
from swe_residual.report.terminations import termination_table
from recordfactory import make_record

pytestmark = pytest.mark.unit

FIRST = "cmd:/home/ci/checkout/agents/wrappers/first-agent.sh"
SECOND = "cmd:/home/ci/checkout/agents/wrappers/second-agent.sh"


def test_two_cmd_agents_under_one_directory_are_two_cells() -> None:
    shown = distinct_names([FIRST, SECOND, "oracle"], 32)
    assert shown["oracle"] == "oracle"
    assert shown[FIRST] != shown[SECOND]
    assert all(len(cell) <= 32 for cell in shown.values())
    assert shown[FIRST].endswith("first-agent.sh") and shown[SECOND].endswith("second-agent.sh")


def test_names_differing_only_in_the_middle_keep_their_start_and_end() -> None:
    a = "cmd:./agents/alpha/run.sh --model provider/some-long-model-name"
    b = "cmd:./agents/bravo/run.sh --model provider/some-long-model-name"
    shown = distinct_names([a, b], 32)
    assert shown[a] != shown[b] and all(len(cell) <= 32 for cell in shown.values())


def test_the_termination_table_tells_them_apart() -> None:
    records = [make_record(agent=FIRST, task="t1"), make_record(agent=SECOND, task="t1")]
    rows = termination_table(records_of(records), order=[FIRST, SECOND])[2:]
    assert len({row.split()[0] for row in rows}) == 2

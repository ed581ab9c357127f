"""Reading verifier output: JUnit, CTRF, reward files, and what counts as a valid verdict."""

from __future__ import annotations

import json

import pytest

from swe_residual.environments.base import VerifierOutput
from swe_residual.environments.verifier.outputs import evaluate, parse_ctrf, parse_junit, read_reward

pytestmark = pytest.mark.unit

JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="test_calc" name="test_add" time="0.01"/>
<testcase classname="test_calc" name="test_low" time="0.01"><failure message="assert 1 == 0">...</failure></testcase>
<testcase classname="test_calc.TestClamp" name="test_high"><skipped message="later"/></testcase>
<testcase classname="test_calc" name="test_boom"><error message="fixture">...</error></testcase>
<testcase classname="test_calc" name="test_add"><error message="teardown"/></testcase>
</testsuite></testsuites>"""

CTRF = json.dumps({"results": {"tool": {"name": "vitest"}, "tests": [
    {"name": "parses dates", "status": "passed", "duration": 3},
    {"name": "rejects junk", "status": "failed", "duration": 1},
    {"name": "later", "status": "pending"},
    {"name": "weird", "status": "other"},
]}}).encode()


def output(files: dict[str, bytes], **kwargs: object) -> VerifierOutput:
    return VerifierOutput(exit_code=0, output="tail of output", timed_out=False, files=files, **kwargs)  # type: ignore[arg-type]


def test_parse_junit_statuses_and_worst_of_duplicates() -> None:
    assert parse_junit(JUNIT) == {
        "test_calc.test_add": "error",  # passed, then a teardown error: the worse one stays
        "test_calc.test_low": "failed",
        "test_calc.TestClamp.test_high": "skipped",
        "test_calc.test_boom": "error",
    }


def test_parse_ctrf_statuses() -> None:
    assert parse_ctrf(CTRF) == {"parses dates": "passed", "rejects junk": "failed", "later": "skipped", "weird": "error"}


def test_reward_json_wins_and_minus_one_is_a_verifier_error() -> None:
    assert read_reward({"reward.json": b'{"reward": 1, "f2p_total": 3}', "reward.txt": b"0"}) == (1.0, None)
    assert read_reward({"reward.txt": b" 0\n"}) == (0.0, None)
    reward, error = read_reward({"reward.txt": b"-1"})
    assert reward is None and "verifier error" in (error or "")
    reward, error = read_reward({})
    assert reward is None and "no reward file" in (error or "")
    reward, error = read_reward({"reward.txt": b"pass"})
    assert reward is None and "not a number" in (error or "")


def test_missing_reward_or_timeout_is_not_a_valid_verdict() -> None:
    assert not evaluate(output({"junit.xml": JUNIT})).valid
    assert not evaluate(output({"reward.txt": b"-1"})).valid
    timed_out = evaluate(VerifierOutput(exit_code=None, output="", timed_out=True, files={"reward.txt": b"1"}))
    assert not timed_out.valid and "timed out" in (timed_out.error or "")


def test_reading_keeps_the_reward_files_figure_and_lists_missing_acceptance_tests() -> None:
    passing = b'<testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"/></testsuite>'
    verdict = evaluate(output({"reward.txt": b"1", "junit.xml": passing}), acceptance=["t.a", "t.b"])
    assert verdict.valid and verdict.success and verdict.tests == {"t.a": "passed", "t.b": "passed"}
    assert verdict.notes == ()
    # An acceptance test missing from the report is listed as failed; whether the reward of 1
    # stands is decided after reading (swe_residual/environments/verifier/claims.py, tests/verifier/test_claims.py).
    verdict = evaluate(output({"reward.txt": b"1", "junit.xml": passing}), acceptance=["t.a", "t.b", "t.c"])
    assert verdict.valid and verdict.reward == 1.0 and verdict.tests["t.c"] == "failed"


def test_valid_failure_keeps_per_test_statuses() -> None:
    verdict = evaluate(output({"reward.txt": b"0", "junit.xml": JUNIT}))
    assert verdict.valid and not verdict.success and verdict.reward == 0.0
    assert verdict.tests["test_calc.test_low"] == "failed"


def test_corrupt_report_is_noted_not_fatal() -> None:
    verdict = evaluate(output({"reward.txt": b"0", "junit.xml": b"<testsuite><oops"}))
    assert verdict.valid and any("junit.xml" in note for note in verdict.notes)

"""The typed run record: the JSON each source has always written, read back by attribute."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields, replace

import execnet
import pytest
from recordfactory import RUNNER_KEYS, make_record

from summaries import summary_dict

from swe_residual.agents.base import AGENT_ERROR, INFRA_ERROR, SUBMITTED, TIME_LIMIT, VERIFIER_FAILED
from swe_residual.agents.identity import check_agent_configs, config_hash, record_config_hash
from swe_residual.dataset.tracks import MACHINE, REPO, TRACKS
from swe_residual.trial.record_model import (
    AgentConfig, Attempt, Canary, Durations, RecordBudget, RunRecord, Tokens, as_record,
)
from swe_residual.trial.records import OUTCOMES, REQUIRED_FIELDS, infra_error_record, record_key, validate_record
from swe_residual.trial.values import Outcome, Start, Termination, Track

def runner_json() -> dict:
    """A Residual State record under the `trace` view, as the runner writes one."""
    return {
        "schema": 1, "run_id": "r1", "agent": "mini-swe-agent[m]", "task": "t1", "track": "repo",
        "start": "residual", "state": "drafter-1", "rollout": 0, "predecessor": "drafter", "handoff": "trace",
        "outcome": "failure", "reward": 1.0, "submitted": False, "termination": "step_limit",
        "tests": {"a.test_one": "passed"}, "initial_tests": {"a.test_one": "failed"}, "steps": 3,
        "final_patch": "diff --git a/x b/x\n", "trajectory": "trajectories/m/t1/drafter-1@trace.json",
        "attempts": [
            {"attempt": 1, "outcome": "infra_error", "termination": "infra_error", "error": "lost engine",
             "reverified": False, "durations": {"total_sec": 0.5}},
            {"attempt": 2, "outcome": "failure", "termination": "step_limit", "error": None, "reverified": True,
             "durations": {"setup_sec": 1, "agent_sec": 2.5, "verify_sec": 0.25, "total_sec": 4.0},
             "canary": {"valid": True, "reward": 1.0, "error": None}},
        ],
        "durations": {"setup_sec": 1, "agent_sec": 2.5, "verify_sec": 0.25, "total_sec": 4.0, "wall_sec": 5.0},
        "inherited_patch": "diff --git a/y b/y\n", "reference_files": ["x"], "opened_files": [], "inspected": True,
        "budget": {"timeout_sec": 600.0, "max_steps": 3, "cost_limit": None},
        "agent_config": {"spec": "mini-swe-agent", "model": "m", "options": {}, "hash": "0123456789abcdef"},
        "cost": None, "tokens": {"prompt": 10, "completion": 2}, "fidelity": None, "engine": None,
        "message": "stopped", "error": None, "verifier_notes": ["a note"], "rewards": {"reward": 1.0},
        "artifacts": ["artifacts/m/t1/drafter-1@trace/logs/out.txt"], "verifier_environment": "shared",
        "collect": [{"command": "cat log", "exit_code": 0, "timed_out": False, "duration_sec": 0.1,
                     "output_tail": ""}],
        "verifier_log": "verifier/m/t1/drafter-1@trace/test-stdout.txt",
    }


def test_the_enums_are_the_strings_they_stand_for() -> None:
    assert [str(o) for o in Outcome] == ["success", "failure", "infra_error"] == list(OUTCOMES)
    assert [str(t) for t in Termination] == ["submitted", "time_limit", "step_limit", "cost_limit", "disk_limit",
                                             "agent_error", "verifier_failed_on_final_state", "infra_error"]
    assert [str(s) for s in Start] == ["clean", "residual"]
    assert [str(t) for t in Track] == ["repo", "machine"] == list(TRACKS)
    # the older constants are the members themselves: one definition
    assert (SUBMITTED, TIME_LIMIT, AGENT_ERROR, INFRA_ERROR, VERIFIER_FAILED) == (
        Termination.SUBMITTED, Termination.TIME_LIMIT, Termination.AGENT_ERROR, Termination.INFRA_ERROR,
        Termination.VERIFIER_FAILED)
    assert REPO is Track.REPO and MACHINE is Track.MACHINE
    # a member is its string: equal, same hash (a dict key), formatted and written as the string
    assert Outcome.SUCCESS == "success" and {"success": 1}[Outcome.SUCCESS] == 1
    assert f"{Termination.STEP_LIMIT}" == "step_limit" and str(Track.MACHINE) == "machine"
    assert json.dumps({Start.CLEAN: [Outcome.INFRA_ERROR]}) == '{"clean": ["infra_error"]}'
    assert json.dumps([Track.REPO], indent=1) == '[\n "repo"\n]'


def test_a_runner_record_reads_and_writes_back_byte_for_byte() -> None:
    data = runner_json()
    record = RunRecord.from_json(data)
    assert list(record.to_json()) == RUNNER_KEYS
    assert json.dumps(record.to_json()) == json.dumps(data)
    # read by attribute, the nested parts typed
    assert (record.track, record.start, record.outcome, record.termination) == (
        Track.REPO, Start.RESIDUAL, Outcome.FAILURE, Termination.STEP_LIMIT)
    assert record.attempts[1] == Attempt(2, Outcome.FAILURE, Termination.STEP_LIMIT, None, reverified=True,
                                         durations=Durations(1, 2.5, 0.25, 4.0), canary=Canary(True, 1.0, None))
    assert record.durations.wall_sec == 5.0 and record.durations.to_json()["setup_sec"] == 1  # an int stays one
    assert record.budget == RecordBudget(600.0, 3, None)
    assert record.tokens == Tokens(10, 2) and record.tokens.total == 12
    assert record.agent_config is not None and record.agent_config.hash == "0123456789abcdef"
    assert record.agent_config.spec == "mini-swe-agent"
    assert record.opened_files == () and record.reference_files == ("x",) and record.verifier_notes == ("a note",)
    assert record_key(record) == record_key(data) == ("mini-swe-agent[m]", "repo", "t1", "residual", "drafter-1",
                                                      "trace")


def test_what_a_record_writes_is_plain_json_types() -> None:
    """The xdist controller receives records through execnet, which refuses enum members."""
    with pytest.raises(execnet.DataFormatError):
        execnet.dumps({"outcome": Outcome.SUCCESS})
    written = RunRecord.from_json(runner_json()).to_json()
    assert execnet.loads(execnet.dumps(written)) == runner_json()
    assert type(written["outcome"]) is str and type(written["attempts"][0]["termination"]) is str
    # so is an item's key (resume hands the finished ones to the workers)
    key = record_key(RunRecord.from_json(runner_json()))
    assert [type(part) for part in key] == [str] * 6 and execnet.loads(execnet.dumps(key)) == key


def test_a_blind_item_has_no_handoff_key() -> None:
    data = runner_json()
    del data["handoff"]
    record = RunRecord.from_json(data)
    assert record.handoff is None and "handoff" not in record.to_json()
    assert list(record.to_json()) == [k for k in RUNNER_KEYS if k != "handoff"]
    assert list(replace(record, handoff="notes").to_json()) == RUNNER_KEYS


def test_the_lost_item_placeholder_is_what_it_always_was_with_its_rollout() -> None:
    written = infra_error_record("r", "noop", "t", Track.REPO, "s1", "drafter", "worker crashed: boom",
                                 handoff="structured")
    assert json.dumps(written) == json.dumps({
        "schema": 1, "run_id": "r", "agent": "noop", "task": "t", "track": "repo", "start": "residual",
        "state": "s1", "rollout": 0, "predecessor": "drafter", "handoff": "structured", "outcome": "infra_error",
        "reward": None,
        "submitted": False, "termination": "infra_error", "tests": None, "initial_tests": None, "steps": None,
        "final_patch": None, "trajectory": None,
        "attempts": [{"attempt": 1, "outcome": "infra_error", "termination": "infra_error",
                      "error": "worker crashed: boom"}],
        "durations": {}, "error": "worker crashed: boom",
    })
    assert validate_record(written) is None
    clean = infra_error_record("r", "noop", "t", "repo", None, None, "x", handoff="blind")
    assert clean["start"] == "clean" and "handoff" not in clean
    # and it reads back to itself
    assert RunRecord.from_json(written).to_json() == written and list(RunRecord.from_json(written).to_json()) == \
        list(written)


def test_a_harbor_trial_keeps_its_keys_and_its_order() -> None:
    data = {
        "schema": 1, "run_id": "h", "agent": "terminus-2+m", "task": "t", "track": "repo", "start": "clean",
        "state": None, "predecessor": None, "outcome": "success", "reward": 1.0, "submitted": True,
        "termination": "submitted", "tests": {}, "initial_tests": None, "steps": None, "final_patch": "",
        "trajectory": None,
        "attempts": [{"attempt": 1, "outcome": "success", "termination": "submitted", "error": None,
                      "harbor_trial": "job/trial-1"}],
        "durations": {"agent_sec": 3.0}, "inherited_patch": None, "reference_files": None, "opened_files": None,
        "inspected": None, "agent_config": {"agent": "terminus-2", "version": "1", "model": "m", "hash": "h1"},
        "cost": 0.5, "tokens": {"prompt": 0, "completion": 7}, "message": None, "error": None,
        "rewards": {"reward": 1.0}, "harbor_trial": "job/trial-1",
    }
    record = RunRecord.from_json(data)
    assert json.dumps(record.to_json()) == json.dumps(data)
    assert record.attempts[0].harbor_trial == "job/trial-1" and record.attempts[0].reverified is None
    assert not record.has("budget") and not record.has("verifier_log") and record.has("harbor_trial")


def test_an_old_record_loads_and_an_unknown_key_is_kept() -> None:
    """Records of an older suite lack fields; another tool may add its own: both survive."""
    old = {k: v for k, v in runner_json().items()
           if k not in ("handoff", "verifier_log", "agent_config", "tokens", "fidelity", "engine")}
    old["residualize"] = {"attempt": 1}
    record = RunRecord.from_json(old)
    assert record.verifier_log is None and record.agent_config is None and record.tokens is None
    assert not record.has("fidelity") and record.has("residualize") and record.extra == {"residualize": {"attempt": 1}}
    written = record.to_json()
    assert written == old and list(written) == list(old)
    assert record_config_hash(old) is None and record_config_hash(runner_json()) == "0123456789abcdef"


def test_partial_records_read_as_the_readers_always_read_them() -> None:
    """A hand-made record (the tests' factory) has only some keys: the rest reads as empty."""
    record = as_record({"agent": "A", "task": "t", "outcome": "weird", "attempts": [{"attempt": 1}, "junk"]})
    assert record.outcome == "weird" and record.start is None and record.durations == Durations()
    assert len(record.attempts) == 2 and record.attempts[1].error is None
    assert record.verifier_notes == () and record.tokens is None and record.cost is None
    assert as_record(record) is record


def test_agent_config_hash_is_the_digest_of_its_settings() -> None:
    settings = {"spec": "noop", "model": None, "options": {}, "limits": {"max_steps": None}}
    config = AgentConfig.hashed(settings)
    assert config.hash == config_hash(settings) and config.to_json() == {**settings, "hash": config.hash}
    a = make_record("t", agent_config={"hash": "one"})
    b = RunRecord.from_json(make_record("u", agent_config={"hash": "two"}))
    with pytest.raises(Exception, match="two configurations"):
        check_agent_configs([a, b])  # a dict and a RunRecord, read alike


def test_the_summary_is_the_same_from_dicts_and_from_records() -> None:
    dicts = [make_record("t1"), make_record("t1", "s1", "failure"), make_record("t1", "s2"),
             make_record("t2", outcome="failure"), make_record("t2", "s3", "infra_error", attempts=2),
             make_record("t3", track="machine"), make_record("t3", "m1", track="machine", fidelity="replay")]
    typed = [RunRecord.from_json(d) for d in dicts]
    assert json.dumps(summary_dict(typed, compare=True), sort_keys=True) == json.dumps(
        summary_dict(dicts, compare=True), sort_keys=True)
    summary = summary_dict(dicts)
    assert summary["agents"]["A"]["tracks"]["repo"]["residual"] == 50.0
    assert summary["infra"]["retried"] == 1 and summary["infra"]["fidelity"]["counts"] == {"replay": 1}


def test_the_fields_every_record_holds_are_the_ones_the_reader_requires() -> None:
    required = [f.name for f in fields(RunRecord) if f.default is MISSING and f.default_factory is MISSING]
    assert ["schema", *required] == list(REQUIRED_FIELDS)

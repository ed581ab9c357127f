"""The typed run record: the JSON each source has always written, read back by attribute."""

from __future__ import annotations

import json
import execnet
import pytest
from pydantic import ValidationError
from recordfactory import RUNNER_KEYS, make_record

from summaries import summary_dict

from swe_residual.agents.base import AGENT_ERROR, INFRA_ERROR, SUBMITTED, TIME_LIMIT, VERIFIER_FAILED
from swe_residual.agents.identity import config_hash
from swe_residual.metrics.agent_configs import check_agent_configs, record_config_hash
from swe_residual.dataset.tracks import MACHINE, REPO, TRACKS
from swe_residual.trial.record_model import AgentConfig, Attempt, Canary, Durations, RecordBudget, RunRecord, Tokens
from swe_residual.trial.records import (
    OUTCOMES, REQUIRED_FIELDS, infra_error_record, read_record, read_records, record_json, record_key, record_line,
    validate_record,
)
from swe_residual.trial.runner import redact_record
from swe_residual.dataset.values import Outcome, Start, Termination, Track

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
    assert [str(t) for t in Termination] == ["submitted", "time_limit", "step_limit", "cost_limit", "disk_limit", "memory_limit",
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
    record = read_record(data)
    assert list(record_json(record)) == RUNNER_KEYS
    assert record_line(record) == json.dumps(data)
    # read by attribute, the nested parts typed
    assert (record.track, record.start, record.outcome, record.termination) == (
        Track.REPO, Start.RESIDUAL, Outcome.FAILURE, Termination.STEP_LIMIT)
    assert record.attempts[1] == Attempt(attempt=2, outcome=Outcome.FAILURE, termination=Termination.STEP_LIMIT, reverified=True,
                                         durations=Durations(setup_sec=1, agent_sec=2.5, verify_sec=0.25, total_sec=4.0),
                                         canary=Canary(valid=True, reward=1.0))
    assert record.durations.wall_sec == 5.0 and record_json(record)["durations"]["setup_sec"] == 1  # an int stays one
    assert type(record.durations.setup_sec) is int and type(record.durations.agent_sec) is float
    assert record.budget == RecordBudget(timeout_sec=600.0, max_steps=3)
    assert record.tokens == Tokens(prompt=10, completion=2) and record.tokens.total == 12
    assert record.agent_config is not None and record.agent_config.hash == "0123456789abcdef"
    assert record.agent_config.spec == "mini-swe-agent"
    assert record.opened_files == () and record.reference_files == ("x",) and record.verifier_notes == ("a note",)
    assert record_key(record) == ("mini-swe-agent[m]", "repo", "t1", "residual", "drafter-1", "trace")


def test_what_a_record_writes_is_plain_json_types() -> None:
    """The xdist controller receives records through execnet, which refuses enum members."""
    with pytest.raises(execnet.DataFormatError):
        execnet.dumps({"outcome": Outcome.SUCCESS})
    written = record_json(read_record(runner_json()))
    assert execnet.loads(execnet.dumps(written)) == runner_json()
    assert type(written["outcome"]) is str and type(written["attempts"][0]["termination"]) is str
    # so is an item's key (resume hands the finished ones to the workers)
    key = record_key(read_record(runner_json()))
    assert [type(part) for part in key] == [str] * 6 and execnet.loads(execnet.dumps(key)) == key


def test_a_blind_item_has_no_handoff_key() -> None:
    data = runner_json()
    del data["handoff"]
    record = read_record(data)
    assert record.handoff is None and "handoff" not in record_json(record)
    assert list(record_json(record)) == [k for k in RUNNER_KEYS if k != "handoff"]
    assert list(record_json(record.model_copy(update={"handoff": "notes"}))) == RUNNER_KEYS


def test_the_lost_item_placeholder_is_what_it_always_was_with_its_rollout() -> None:
    written = record_json(infra_error_record("r", "noop", "t", Track.REPO, "s1", "drafter", "worker crashed: boom",
                                             handoff="structured"))
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
    assert clean.start == "clean" and "handoff" not in record_json(clean)
    # and it reads back to itself
    assert record_json(read_record(written)) == written and list(record_json(read_record(written))) == list(written)


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
    record = read_record(data)
    assert record_line(record) == json.dumps(data)
    assert record.attempts[0].harbor_trial == "job/trial-1" and record.attempts[0].reverified is None
    assert not record.has("budget") and not record.has("verifier_log") and record.has("harbor_trial")


def test_an_old_record_loads_and_an_unknown_key_is_kept() -> None:
    """Records of an older suite lack fields; another tool may add its own: both survive."""
    old = {k: v for k, v in runner_json().items()
           if k not in ("handoff", "verifier_log", "agent_config", "tokens", "fidelity", "engine")}
    old["residualize"] = {"attempt": 1}
    record = read_record(old)
    assert record.verifier_log is None and record.agent_config is None and record.tokens is None
    assert not record.has("fidelity") and record.has("residualize") and record.extra == {"residualize": {"attempt": 1}}
    written = record_json(record)
    assert written == old and list(written) == list(old)
    assert record_config_hash(record) is None and record_config_hash(read_record(runner_json())) == "0123456789abcdef"


def test_partial_records_read_as_the_readers_always_read_them() -> None:
    """A record of another suite has only some keys: the rest reads as empty, an unknown value
    stays the string it was, and a part that is not an object reads as an empty one."""
    record = read_record({"run_id": "r", "agent": "A", "task": "t", "track": "moon", "start": "clean",
                          "submitted": False, "outcome": "weird", "attempts": [{"attempt": 1}, "junk"]})
    assert record.outcome == "weird" and type(record.outcome) is str and record.track == "moon"
    assert record.state is None and record.durations == Durations() and record.absent >= {"state", "durations"}
    assert len(record.attempts) == 2 and record.attempts[1] == Attempt()
    assert record.verifier_notes == () and record.tokens is None and record.cost is None
    assert record_json(record)["attempts"][1] == {"attempt": None, "outcome": None, "termination": None, "error": None}
    assert "durations" not in record_json(record) and record_json(record)["outcome"] == "weird"


def test_a_record_without_its_identity_or_with_a_wrong_type_is_refused_naming_the_field(tmp_path) -> None:
    with pytest.raises(ValidationError, match="run_id"):
        read_record({"agent": "A", "task": "t", "track": "repo", "start": "clean", "submitted": False})
    results = tmp_path / "results.jsonl"
    good = make_record("t")
    results.write_text(json.dumps(good) + "\n" + json.dumps({**good, "reward": "high"}) + "\n")
    loaded = read_records([results])
    assert [r.task for r in loaded.records] == ["t"] and len(loaded.problems) == 1
    assert loaded.problems[0].startswith(f"{results}:2: reward:") and "'high'" in loaded.problems[0]


def test_a_record_built_in_code_holds_every_field_read_one_its_keys() -> None:
    built = RunRecord(run_id="r", agent="A", task="t", track=Track.REPO, start=Start.CLEAN, state=None,
                      predecessor=None, outcome=Outcome.SUCCESS, reward=1.0, submitted=True,
                      termination=Termination.SUBMITTED, tests=None, initial_tests=None, steps=1, final_patch=None,
                      trajectory=None, attempts=(), durations=Durations())
    assert record_json(built)["budget"] is None and built.absent == frozenset()
    assert read_record(record_json(built)) == built
    with pytest.raises(ValidationError):
        built.model_copy().__setattr__("reward", 0.0)  # frozen


def test_agent_config_hash_is_the_digest_of_its_settings() -> None:
    settings = {"spec": "noop", "model": None, "options": {}, "limits": {"max_steps": None}}
    config = AgentConfig.hashed(settings)
    assert config.hash == config_hash(settings) and config.model_dump(mode="json") == {**settings, "hash": config.hash}
    assert config.settings == settings and list(config.model_dump()) == [*settings, "hash"]
    assert AgentConfig.model_validate({"hash": "h", "spec": "x"}).model_dump() == {"spec": "x", "hash": "h"}
    a = read_record(make_record("t", agent_config={"hash": "one"}))
    b = read_record(make_record("u", agent_config={"hash": "two"}))
    with pytest.raises(Exception, match="two configurations"):
        check_agent_configs([a, b])


def test_the_summary_is_the_same_from_dicts_and_from_records() -> None:
    dicts = [make_record("t1"), make_record("t1", "s1", "failure"), make_record("t1", "s2"),
             make_record("t2", outcome="failure"), make_record("t2", "s3", "infra_error", attempts=2),
             make_record("t3", track="machine"), make_record("t3", "m1", track="machine", fidelity="replay")]
    typed = [read_record(d) for d in dicts]
    assert json.dumps(summary_dict(typed, compare=True), sort_keys=True) == json.dumps(
        summary_dict(dicts, compare=True), sort_keys=True)
    summary = summary_dict(dicts)
    assert summary["agents"]["A"]["tracks"]["repo"]["residual"] == 50.0
    assert summary["infra"]["retried"] == 1 and summary["infra"]["fidelity"]["counts"] == {"replay": 1}


def test_the_fields_every_record_holds_are_the_ones_the_reader_requires() -> None:
    required = [name for name, info in RunRecord.model_fields.items() if info.is_required()]
    assert ["schema", *required] == list(REQUIRED_FIELDS)


def test_secrets_are_replaced_on_the_typed_record_wherever_they_stand() -> None:
    secret = "sk-0123456789abcdef"
    data = {**runner_json(), "message": f"using {secret}", "error": secret,
            "collect": [{"command": "env", "output_tail": f"KEY={secret}"}]}
    redacted = redact_record(read_record(data), [secret])
    assert secret not in record_line(redacted) and redacted.message == "using [REDACTED]"
    assert redacted.collect[0]["output_tail"] == "KEY=[REDACTED]" and redacted.outcome is Outcome.FAILURE
    assert list(record_json(redacted)) == list(data)  # the same keys, in the same order
    same = read_record(runner_json())
    assert redact_record(same, []) is same

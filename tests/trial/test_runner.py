"""One item to one run record: outcomes, budgets, the infra-retry policy."""

from __future__ import annotations

import json
from pathlib import Path

import execnet
import pytest
from recordfactory import RUNNER_KEYS
from taskfactory import make_task

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.dataset.errors import EnvironmentLostByAgent
from swe_residual.dataset.values import Outcome, Start
from swe_residual.trial.records import REQUIRED_FIELDS, record_json
from swe_residual.trial.runner import RunOptions, run_item


@pytest.fixture
def setup(tmp_path: Path):
    def make(**task_kwargs):
        make_task(tmp_path / "data", **task_kwargs)
        entry = load_dataset(tmp_path / "data").entries[0]
        backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
        options = RunOptions(run_id="run-1", run_dir=tmp_path / "run", infra_retries=2)
        return entry, backend, options
    return make


def test_oracle_solves_and_noop_fails_from_every_start(setup) -> None:
    entry, backend, options = setup()
    for state in (None, entry.states[0]):
        solved = run_item(entry.task, state, resolve_agent("oracle"), backend, options)
        assert solved.outcome == "success" and solved.reward == 1.0
        assert set(solved.tests.values()) == {"passed"}
        unsolved = run_item(entry.task, state, resolve_agent("noop"), backend, options)
        assert unsolved.outcome == "failure" and unsolved.reward == 0.0
        assert unsolved.termination == "submitted" and unsolved.submitted is True


def test_record_has_the_contract_fields(setup) -> None:
    entry, backend, options = setup()
    state = entry.states[0]
    typed = run_item(entry.task, state, resolve_agent("noop"), backend, options)
    record = record_json(typed)
    assert set(REQUIRED_FIELDS) <= set(record)
    assert record["start"] == "residual" and record["state"] == "drafter-1" and record["predecessor"] == "drafter"
    assert record["initial_tests"]["test_calc.test_clamp_high"] == "failed"
    # noop leaves the state as it was: the final diff is the inherited one
    assert "max(low, value)" in record["final_patch"] and "debug.log" in record["final_patch"]
    assert record["inherited_patch"] == state.read_patch()
    assert record["reference_files"] == ["calc.py"]
    assert record["tests"]["test_calc.test_clamp_high"] == "failed"
    assert len(record["attempts"]) == 1 and record["attempts"][0]["outcome"] == "failure"
    assert {"setup_sec", "agent_sec", "verify_sec", "total_sec"} <= set(record["durations"])
    trajectory = json.loads((options.run_dir / record["trajectory"]).read_text())
    assert trajectory["schema"] == 1 and trajectory["steps"] == []
    # what test.sh printed for the verdict is kept beside the record (Harbor's test-stdout.txt)
    assert record["verifier_log"] == f"verifier/noop/{entry.task.id}/drafter-1/test-stdout.txt"
    log = (options.run_dir / record["verifier_log"]).read_text()
    assert "test_clamp_high" in log and "failed" in log.lower()
    json.dumps(record)  # serializable as it is
    # the contract's order, keys and plain types (execnet, xdist's transport, takes nothing else)
    assert list(record) == [key for key in RUNNER_KEYS if key != "handoff"]
    assert execnet.loads(execnet.dumps(record)) == record
    # and the typed record reads the same: enum members, tuples, the parts by attribute
    assert typed.start is Start.RESIDUAL and typed.reference_files == ("calc.py",)
    assert typed.attempts[0].outcome is Outcome.FAILURE and typed.durations.wall_sec > 0


def test_cmd_agent_gets_the_request_and_its_trajectory_is_read(setup) -> None:
    entry, backend, options = setup()
    script = (
        'grep -q clamp "$SWE_RESIDUAL_INSTRUCTION_FILE" && [[ "$SWE_RESIDUAL_INSTRUCTION" == *clamp* ]] || exit 9; '
        "sed -i 's/return value/return max(low, min(value, high))/' calc.py; "
        'echo \'{"command": "cat calc.py", "output": "def clamp"}\' > "$SWE_RESIDUAL_TRAJECTORY_FILE"; '
        'echo \'{"command": "sed -i ... calc.py", "output": ""}\' >> "$SWE_RESIDUAL_TRAJECTORY_FILE"'
    )
    record = run_item(entry.task, None, resolve_agent(f"cmd:{script}"), backend, options)
    assert record.outcome == "success" and record.steps == 2
    assert record.opened_files == ("calc.py",)


def test_agent_errors_and_budgets_are_task_failures(setup) -> None:
    entry, backend, options = setup(agent_timeout_sec=1)
    crashed = run_item(entry.task, None, resolve_agent("cmd:exit 3"), backend, options)
    assert (crashed.outcome, crashed.termination, crashed.submitted) == ("failure", "agent_error", False)
    slow = run_item(entry.task, None, resolve_agent("cmd:sleep 30"), backend, options)
    assert (slow.outcome, slow.termination) == ("failure", "time_limit")
    assert len(slow.attempts) == 1  # never retried
    raised = run_item(entry.task, None, resolve_agent("module:scripted_agents:Crashes"), backend, options)
    assert raised.termination == "agent_error" and "fell over" in raised.message


def test_step_limit(setup) -> None:
    entry, backend, _ = setup()
    options = RunOptions(run_id="r", run_dir=entry.task.path.parent.parent / "run", max_steps=3)
    record = run_item(entry.task, None, resolve_agent("module:scripted_agents:LoopsForever"), backend, options)
    assert (record.termination, record.steps, record.outcome) == ("step_limit", 3, "failure")
    assert record.budget.max_steps == 3


def test_infra_error_is_retried_from_a_fresh_instance(setup, tmp_path: Path, monkeypatch) -> None:
    entry, backend, options = setup()
    monkeypatch.setenv("FLAKY_INFRA_DIR", str(tmp_path))
    record = run_item(entry.task, entry.states[0], resolve_agent("module:scripted_agents:FlakyInfra"), backend, options)
    assert [a.outcome for a in record.attempts] == ["infra_error", "failure"]
    assert "container lost" in record.attempts[0].error
    assert record.outcome == "failure" and record.steps == 1


def test_unresolved_infra_error_after_all_retries(setup, tmp_path: Path, monkeypatch) -> None:
    entry, backend, options = setup()
    monkeypatch.setenv("FLAKY_INFRA_DIR", str(tmp_path))
    monkeypatch.setattr("scripted_agents.FlakyInfra.failures", 99)
    record = run_item(entry.task, None, resolve_agent("module:scripted_agents:FlakyInfra"), backend, options)
    assert record.outcome == "infra_error" and len(record.attempts) == 3
    assert record.tests is None and record.reward is None


def test_verifier_crash_reverifies_the_saved_state_first(setup, tmp_path: Path) -> None:
    marker = tmp_path / "verifier-crashed-once"
    flaky = (
        '#!/bin/bash\nmkdir -p "$VERIFIER_LOGS_DIR"\n'
        f'if [ ! -e {marker} ]; then touch {marker}; echo -1 > "$VERIFIER_LOGS_DIR/reward.txt"; exit 0; fi\n'
        'echo 0 > "$VERIFIER_LOGS_DIR/reward.txt"\n'
    )
    entry, backend, options = setup(test_sh=flaky)
    record = run_item(entry.task, None, resolve_agent("noop"), backend, options)
    assert record.outcome == "failure" and len(record.attempts) == 1
    assert record.attempts[0].reverified is True


def test_verifier_that_never_gives_a_verdict_is_infra(setup) -> None:
    entry, backend, options = setup(test_sh="#!/bin/bash\necho -1 > \"$VERIFIER_LOGS_DIR/reward.txt\"\n")
    record = run_item(entry.task, None, resolve_agent("oracle"), backend, options)
    assert record.outcome == "infra_error" and len(record.attempts) == 3
    assert all("verifier" in a.error for a in record.attempts)


def test_reward_files_written_by_the_agent_gain_nothing(setup) -> None:
    entry, backend, options = setup()
    record = run_item(entry.task, None, resolve_agent("module:scripted_agents:WritesRewardFiles"), backend, options)
    assert record.outcome == "failure" and record.reward == 0.0


class LosesAnotherContainer:
    """Stands in for a container other than the agent's (a separate verifier's) found stopped with
    no cause from outside it: raised by hand, as no local environment can be lost that way."""

    name = "loses-another-container"

    def run(self, session):
        raise EnvironmentLostByAgent("the container stopped with no cause from outside it", environment_id="other")


def test_a_container_lost_with_no_cause_that_is_not_the_agents_stays_infra(setup) -> None:
    entry, backend, options = setup()
    record = run_item(entry.task, None, LosesAnotherContainer, backend, options)
    assert record.outcome == "infra_error" and len(record.attempts) == 3
    assert all("no cause from outside it" in attempt.error for attempt in record.attempts)

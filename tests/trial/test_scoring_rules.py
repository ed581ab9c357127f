"""Scoring rules (issue 12): what a run's outcome is, and what is the agent's failure.

1. An exhausted budget is a task failure, even when the final state passes the verifier.
2. A model-service failure is an infrastructure failure: retried from a fresh instance.
3. The task's own reward is the verdict: the reports are kept and flagged, never overrule it.
4. An agent that recorded no trajectory has unknown Opened and Inspected (null).

Every run here is a real item (a small task from `taskfactory`, the local backend, the real
verifier); nothing reads the paper: its sentences are cited beside the tests.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from scripted_agents import FIX_CLAMP
from taskfactory import make_task

from swe_residual.agents import AgentResult, AgentSession, resolve_agent
from swe_residual.dataset.load import TaskEntry, load_dataset
from swe_residual.environments.base import VerifierOutput
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item
from swe_residual.environments.verifier.outputs import evaluate

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def make_entry(tmp_path: Path, **task_kwargs: Any) -> tuple[TaskEntry, LocalBackend]:
    make_task(tmp_path / "data", **task_kwargs)
    entry = load_dataset(tmp_path / "data").entries[0]
    return entry, LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)


def options(tmp_path: Path, **kwargs: Any) -> RunOptions:
    return RunOptions(run_id="scoring", run_dir=tmp_path / "run", infra_retries=2, **kwargs)


# -- 1. an exhausted budget is a task failure -------------------------------------------------

class FixesThenOverruns:
    """Fixes the task at once, then never declares done: it runs until its budget ends it."""

    name = "fixes-then-overruns"

    def __init__(self, spend: str) -> None:
        self.spend = spend

    def run(self, session: AgentSession) -> AgentResult:
        session.exec(FIX_CLAMP)
        while True:
            if self.spend == "cost":
                session.add_cost(1.0)
            session.exec("true")


@pytest.mark.parametrize(("spend", "limits", "termination"), [
    ("steps", {"max_steps": 3}, "step_limit"),
    ("cost", {"cost_limit": 2.5}, "cost_limit"),
])
def test_an_exhausted_budget_is_a_failure_even_when_the_final_state_passes(
    tmp_path: Path, spend: str, limits: dict[str, float], termination: str,
) -> None:
    # Paper App. D: "In the success rates of Table 3, runs that exhaust the budget count as
    # task failures." The verdict itself stays in the record.
    entry, backend = make_entry(tmp_path)
    record = record_json(run_item(entry.task, None, lambda: FixesThenOverruns(spend), backend, options(tmp_path, **limits)))
    assert (record["outcome"], record["termination"], record["submitted"]) == ("failure", termination, False)
    assert record["reward"] == 1.0 and record["rewards"] == {"reward": 1.0}
    assert set(record["tests"].values()) == {"passed"}
    assert [a["outcome"] for a in record["attempts"]] == ["failure"]  # a task failure: never retried


def test_a_command_killed_at_its_time_limit_is_a_failure_even_when_its_work_passes(tmp_path: Path) -> None:
    # Paper App. D: "In the success rates of Table 3, runs that exhaust the budget count as
    # task failures." (App. C: "If an evaluated agent exhausts its budget without solving the
    # task, the run counts as a task failure.")
    entry, backend = make_entry(tmp_path, agent_timeout_sec=1)
    record = record_json(run_item(entry.task, None, resolve_agent(f"cmd:{FIX_CLAMP} && sleep 30"), backend, options(tmp_path)))
    assert (record["outcome"], record["termination"], record["reward"]) == ("failure", "time_limit", 1.0)


# -- 2. a model-service failure is infrastructure -------------------------------------------

def test_a_cmd_agent_exiting_75_is_a_model_service_failure_retried_from_a_fresh_instance(tmp_path: Path) -> None:
    # Paper App. C: "If a run is interrupted by an infrastructure problem, such as a transient
    # network, model-service, or container failure, we restart it from an independent
    # instance of the same initial state." Exit status 75 (EX_TEMPFAIL) is how a `cmd:` agent
    # says so (README, docs/agents.md).
    entry, backend = make_entry(tmp_path)
    always = record_json(run_item(entry.task, None, resolve_agent("cmd:echo 'HTTP 429 from the model' >&2; exit 75"),
                      backend, options(tmp_path)))
    assert always["outcome"] == "infra_error" and always["termination"] == "infra_error"
    assert [a["outcome"] for a in always["attempts"]] == ["infra_error"] * 3
    assert all(a["error"].startswith("model: ") and "429" in a["error"] for a in always["attempts"])
    assert always["reward"] is None and always["tests"] is None

    # Rate-limited once: the second attempt starts from a fresh instance and is the measurement.
    marker = tmp_path / "rate-limited-once"
    once = f"if [ ! -e {marker} ]; then touch {marker}; {FIX_CLAMP}; exit 75; fi; true"
    record = record_json(run_item(entry.task, entry.states[0], resolve_agent(f"cmd:{once}"), backend, options(tmp_path)))
    assert [a["outcome"] for a in record["attempts"]] == ["infra_error", "failure"]
    # The first attempt's fix died with its instance: the residual state is graded as it was.
    assert record["outcome"] == "failure" and record["termination"] == "submitted" and record["reward"] == 0.0


class RateLimitedModel:
    """mini-swe-agent's own scripted model behind a service that answers 429 (rate limit)
    to the calls after the first, `failures_left` times in all (counted across instances).

    A stand-in: a real rate-limited endpoint cannot be caused offline, so the model raises
    what litellm raises for an HTTP 429 (`litellm.RateLimitError`, after mini-swe-agent's
    own retries have given up). Loaded by mini-swe-agent from its `model_class` path.
    """

    failures_left = 0

    def __init__(self, **kwargs: Any) -> None:
        from minisweagent.models.test_models import DeterministicModel

        self.scripted = DeterministicModel(**kwargs)

    def query(self, messages: list[dict[str, str]], **kwargs: Any) -> dict:
        if self.scripted.current_index >= 0 and RateLimitedModel.failures_left > 0:
            RateLimitedModel.failures_left -= 1
            import litellm

            raise litellm.RateLimitError(message="429 Too Many Requests (offline stand-in)",
                                         llm_provider="openai", model="gpt-stand-in")
        return self.scripted.query(messages, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.scripted, name)


@pytest.mark.slow
def test_a_rate_limited_model_is_infra_retried_never_the_agents_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Paper App. C: "If a run is interrupted by an infrastructure problem, such as a transient
    # network, model-service, or container failure, we restart it from an independent
    # instance of the same initial state."
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no cost-map fetch on import
    entry, backend = make_entry(tmp_path)
    script = tmp_path / "solve.json"
    script.write_text(json.dumps([FIX_CLAMP, SUBMIT]))
    agent = resolve_agent("mini-swe-agent", {"script": str(script), "model_class": f"{__name__}.RateLimitedModel"},
                          "deterministic")
    monkeypatch.setattr(RateLimitedModel, "failures_left", 1)
    record = record_json(run_item(entry.task, None, agent, backend, options(tmp_path)))
    assert [a["outcome"] for a in record["attempts"]] == ["infra_error", "success"]
    assert record["attempts"][0]["error"].startswith("model: RateLimitError")
    assert (record["outcome"], record["termination"], record["steps"]) == ("success", "submitted", 2)

    monkeypatch.setattr(RateLimitedModel, "failures_left", 99)
    unresolved = record_json(run_item(entry.task, None, agent, backend, options(tmp_path)))
    assert unresolved["outcome"] == "infra_error" and len(unresolved["attempts"]) == 3
    assert all(a["outcome"] == "infra_error" for a in unresolved["attempts"])


@pytest.mark.slow
def test_which_model_errors_are_the_service_failing() -> None:
    # The service failing (retry from a fresh instance) versus the request being refused (the
    # agent's own failure: a fresh instance would be refused the same way).
    import litellm
    import requests

    from swe_residual.agents.mini_swe import is_model_service_failure

    where = {"llm_provider": "openai", "model": "gpt-x"}
    failing = [
        litellm.RateLimitError(message="429", **where),
        litellm.APIConnectionError(message="connection reset", **where),
        litellm.Timeout(message="timed out", **where),
        litellm.ServiceUnavailableError(message="503", **where),
        litellm.InternalServerError(message="500", **where),
        litellm.APIError(status_code=502, message="bad gateway", **where),
    ]
    wrapped = RuntimeError("Request failed")  # as mini-swe-agent's OpenRouter model wraps requests' errors
    wrapped.__cause__ = requests.exceptions.ConnectionError("connection refused")
    failing.append(wrapped)
    refused = [
        litellm.BadRequestError(message="bad request", **where),
        litellm.ContextWindowExceededError(message="too long", **where),
        litellm.AuthenticationError(message="bad key", **where),
        litellm.NotFoundError(message="no such model", **where),
        litellm.APIError(status_code=400, message="bad", **where),
        IndexError("list index out of range"),  # its scripted model ran out of outputs
    ]
    assert [is_model_service_failure(exc) for exc in failing] == [True] * len(failing)
    assert [is_model_service_failure(exc) for exc in refused] == [False] * len(refused)


# -- 3. the task's reward is the verdict ----------------------------------------------------

SKIPPED_HIGH = textwrap.dedent(
    """\
    #!/bin/bash
    # The task's own verifier: reward 1, with test_clamp_high skipped in its report.
    mkdir -p "$VERIFIER_LOGS_DIR"
    cat > "$VERIFIER_LOGS_DIR/junit.xml" <<'XML'
    <testsuite>
    <testcase classname="test_calc" name="test_add"/>
    <testcase classname="test_calc" name="test_clamp_low"/>
    <testcase classname="test_calc" name="test_clamp_high"><skipped message="not on this platform"/></testcase>
    <testcase classname="test_calc" name="test_clamp_inside"/>
    </testsuite>
    XML
    echo 1 > "$VERIFIER_LOGS_DIR/reward.txt"
    """
)


def test_reward_one_with_a_skipped_acceptance_test_is_a_contradicted_reward(tmp_path: Path) -> None:
    # The task's reward is the verdict as far as its per-test report backs it (issue 33): an
    # acceptance test of tests/config.json that did not pass contradicts a reward of 1, so the
    # run is a failure, with the reward file's figure kept in `rewards` and the reason recorded.
    entry, backend = make_entry(tmp_path, test_sh=SKIPPED_HIGH, environment_mode="shared")
    record = record_json(run_item(entry.task, None, resolve_agent("noop"), backend, options(tmp_path)))
    assert (record["outcome"], record["reward"], record["rewards"]) == ("failure", 0.0, {"reward": 1.0})
    assert record["tests"]["test_calc.test_clamp_high"] == "skipped"  # the statuses are kept
    assert "1 of 4 acceptance test(s)" in record["contradicted"] and "test_clamp_high skipped" in record["contradicted"]
    assert record["contradicted"] in record["verifier_notes"]


@pytest.mark.unit
def test_the_verdict_keeps_statuses_and_lists_missing_acceptance_tests_as_failed() -> None:
    skipped = b'<testsuite><testcase classname="t" name="a"><skipped/></testcase><testcase classname="t" name="b"/></testsuite>'
    files = {"reward.txt": b"1", "junit.xml": skipped}
    verdict = evaluate(VerifierOutput(exit_code=0, output="", timed_out=False, files=files),
                       acceptance=["t.a", "t.b", "t.missing"])
    # Reading alone keeps the reward file's figure; verifier/claims.py decides whether it stands.
    assert verdict.valid and verdict.success and verdict.reward == 1.0 and verdict.notes == ()
    assert verdict.tests == {"t.a": "skipped", "t.b": "passed", "t.missing": "failed"}


# -- 4. no recorded trajectory: Opened and Inspected unknown --------------------------------

def test_a_cmd_agent_that_records_no_trajectory_has_unknown_opened_and_inspected(tmp_path: Path) -> None:
    # Paper App. D: Opened counts continuations "whose actions showed such a file's contents",
    # and Inspection needs the agent's actions too: with no recorded actions neither is known.
    entry, backend = make_entry(tmp_path)
    state = entry.states[0]
    silent = record_json(run_item(entry.task, state, resolve_agent("cmd:git diff; cat calc.py"), backend, options(tmp_path)))
    assert silent["opened_files"] is None and silent["inspected"] is None
    assert silent["steps"] == 1  # the invocation, which is all the session saw

    # The same work, with its steps written to $SWE_RESIDUAL_TRAJECTORY_FILE: known.
    steps = "".join(json.dumps({"command": c, "output": "x"}).replace("'", "") + "\\n" for c in ("git diff", "cat calc.py"))
    recorded = record_json(run_item(entry.task, state, resolve_agent(
        f"""cmd:git diff; cat calc.py; printf '{steps}' > "$SWE_RESIDUAL_TRAJECTORY_FILE\""""), backend, options(tmp_path)))
    assert recorded["opened_files"] == ["calc.py"] and recorded["inspected"] is True

    # An in-process agent acts only through the session: none of its actions is unseen, so
    # "opened nothing" is a fact, not a gap.
    noop = record_json(run_item(entry.task, state, resolve_agent("noop"), backend, options(tmp_path)))
    assert noop["opened_files"] == [] and noop["inspected"] is False

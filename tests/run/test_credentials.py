"""A model's key, checked once before the run (issue 33): an agent whose model needs a variable
that is not set stops the run with a usage error (exit status 4) naming it, and nothing runs,
instead of every attempt failing as infrastructure and being retried. Models that need no key
(mini-swe-agent's scripted model, a local endpoint given a dummy key) still run.

Through the real plugin in subprocesses, on the local backend; Harbor's agents with Harbor's
own Python (its preflight runs there), which needs no engine to refuse before the run.
"""

from __future__ import annotations

import json
import os

import pytest
from test_plugin import run, suite  # noqa: F401  (the `suite` fixture)

from swe_residual.agents.credentials import missing_model_keys
from swe_residual.agents.harbor_bridge import HARBOR_PYTHON_ENV, harbor_python

HARBOR_PYTHON = harbor_python()  # the machine's, before a test points the cache elsewhere
KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm offline


def _refused(suite: pytest.Pytester, *args: str) -> pytest.RunResult:  # noqa: F811
    result = run(suite, *args, "-m", "clean", "--run-id=keys")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert not (suite.path / "out" / "keys" / "results.jsonl").exists()  # nothing ran
    return result


@pytest.mark.extras  # litellm's knowledge of the models
def test_litellm_names_the_variable_a_model_needs(no_keys: None) -> None:
    assert missing_model_keys("anthropic/claude-sonnet-4-5") == ["ANTHROPIC_API_KEY"]
    assert missing_model_keys("hosted_vllm/served", api_base="http://127.0.0.1:9/v1") == []
    assert missing_model_keys("anthropic/claude-sonnet-4-5", api_key="given-in-the-config") == []


@pytest.mark.slow
def test_mini_swe_agent_without_its_models_key_is_a_usage_error_naming_it(suite: pytest.Pytester,  # noqa: F811
                                                                          no_keys: None) -> None:
    result = _refused(suite, "--agent=mini-swe-agent", "--model=anthropic/claude-sonnet-4-5")
    result.stderr.fnmatch_lines(["*--agent=mini-swe-agent --model=anthropic/claude-sonnet-4-5: the model needs "
                                 "ANTHROPIC_API_KEY in the environment*"])


@pytest.mark.slow
def test_models_that_need_no_key_still_run(suite: pytest.Pytester, no_keys: None,  # noqa: F811
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (suite.path / "s.json").write_text(json.dumps(["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]))
    scripted = run(suite, "--agent=mini-swe-agent", "--model=deterministic", "--agent-option=script=s.json",
                   "-m", "clean", "-k", "alpha", "--run-id=scripted")
    assert scripted.ret == 0, scripted.stdout.str() + scripted.stderr.str()
    # A local endpoint with a dummy key passes the check (nothing listens: --collect-only runs nothing).
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    local = run(suite, "--agent=mini-swe-agent", "--model=openai/served", "--agent-option=api_base=http://127.0.0.1:9/v1",
                "--collect-only", "-q")
    assert local.ret == 0, local.stdout.str() + local.stderr.str()


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "model", "variable"), [
    ("harbor:terminus-2", "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),  # Harbor's preflight (litellm)
    ("harbor:claude-code", "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),  # its vendor's login
])
def test_a_harbor_agent_without_its_models_key_is_a_usage_error_naming_it(
        suite: pytest.Pytester, no_keys: None, agent: str, model: str, variable: str,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.access(HARBOR_PYTHON, os.X_OK):
        pytest.fail(f"Harbor is not installed at {HARBOR_PYTHON}: run scripts/setup-tests")
    monkeypatch.setenv(HARBOR_PYTHON_ENV, str(HARBOR_PYTHON))
    result = _refused(suite, f"--agent={agent}", f"--model={model}")
    result.stderr.fnmatch_lines([f"*--agent={agent} --model={model}: the model needs *{variable}* in the environment*"])

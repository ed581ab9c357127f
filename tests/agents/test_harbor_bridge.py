"""The suite's side of `--agent=harbor:NAME`, without Harbor: what keys an agent's install layer,
what of its options a record keeps, and what it reads from a helper it killed (the helper
itself runs in test_harbor_agents.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_residual.agents.base import AgentSession, Budget
from swe_residual.agents.harbor_bridge import AGENT_LOGS, HarborAgent
from swe_residual.agents.trajectory import Trajectory
from swe_residual.agents.redaction import REDACTED

pytestmark = pytest.mark.unit

INSTALLED = {"error": None, "harbor": "0.25.0", "install": "installed"}


def key(checked: dict, model: str | None, **options: str) -> str | None:
    step = HarborAgent("claude-code", model, options, checked).install_step
    return None if step is None else step.key


def test_the_install_layer_is_keyed_by_what_decides_what_gets_installed() -> None:
    base = key(INSTALLED, "anthropic/a", api_base="http://one:1/v1", version="2.0.1")
    assert base is not None
    # another model or endpoint: the same install serves it
    assert key(INSTALLED, "anthropic/b", api_base="http://two:2/v1", version="2.0.1") == base
    # another version of the agent, or of Harbor: another layer
    assert key(INSTALLED, "anthropic/a", api_base="http://one:1/v1", version="2.0.2") != base
    assert key({**INSTALLED, "harbor": "0.25.1"}, "anthropic/a", api_base="http://one:1/v1", version="2.0.1") != base
    # Terminus-2 records with asciinema or not: that decides what its set-up installs
    tmux = {**INSTALLED, "install": "tmux"}
    assert key(tmux, None, record_terminal_session="false") != key(tmux, None, record_terminal_session="true")
    # an agent with nothing to install has no layer
    assert key({**INSTALLED, "install": None}, "m") is None


def test_the_steps_are_named_for_their_messages() -> None:
    step = HarborAgent("claude-code", None, None, INSTALLED).install_step
    assert step is not None and (step.agent, step.step) == ("harbor:claude-code", "Harbor's install() of claude-code")
    tmux = HarborAgent("terminus-2", None, None, {**INSTALLED, "install": "tmux"}).install_step
    assert tmux is not None and tmux.step == "the tmux install of terminus-2's terminal session"


def test_secret_looking_options_are_redacted_in_the_record_at_any_depth() -> None:
    agent = HarborAgent("terminus-2", "openai/m", {
        "api_key": "sk-live-0123456789", "max_turns": "5",
        "extra_headers": '{"Authorization": "Bearer abcdefgh", "X-Trace": "on"}',
        "llm_kwargs": '{"client": {"access_token": "tok-0123456789"}}'})
    described = agent.describe()["kwargs"]
    assert described["api_key"] == REDACTED and described["max_turns"] == 5
    assert described["extra_headers"] == {"Authorization": REDACTED, "X-Trace": "on"}
    assert described["llm_kwargs"] == {"client": {"access_token": REDACTED}}
    # the agent itself still gets them
    assert agent.kwargs["api_key"] == "sk-live-0123456789"
    assert agent.kwargs["extra_headers"]["Authorization"] == "Bearer abcdefgh"


def test_an_install_error_names_the_agent_the_step_and_why_in_one_line() -> None:
    from swe_residual.environments.agent_environment import InstallFailed
    from swe_residual.environments.docker.agent_setup import InstallUnreachable, install_error

    step = HarborAgent("mini-swe-agent", "openai/m", None, INSTALLED).install_step
    assert step is not None
    output = ("NetworkConnectionError: Command failed (exit 6): set -euo pipefail; if ! command -v uv; then curl ...\n"
              "stdout: None\nstderr: curl: (6) Could not resolve host: example.invalid\n")
    unreachable = install_error(step, InstallFailed(output, unreachable=True), "bridge", "t1")
    assert isinstance(unreachable, InstallUnreachable) and unreachable.stage == "agent-setup"
    assert str(unreachable) == (
        "agent-setup: harbor:mini-swe-agent: its install step (Harbor's install() of mini-swe-agent, run once per "
        "task image in the agent set-up layer) needs the network, and what it downloads was not reachable from the "
        "set-up container (network 'bridge'): NetworkConnectionError: Command failed (exit 6): set -euo pipefail; "
        "if ! command -v uv; then curl ... / stdout: None / stderr: curl: (6) Could not resolve host: example.invalid")
    offline = install_error(step, InstallFailed("E: Unable to locate package curl"), "none", "t1")
    assert isinstance(offline, InstallUnreachable) and "has none (network 'none')" in str(offline)
    broken = install_error(step, InstallFailed("exit 2: no such option"), "bridge", "t1")
    assert not isinstance(broken, InstallUnreachable)  # another failure: per task image, not for the agent
    assert str(broken).endswith("failed in the image of t1: exit 2: no such option")


def test_a_helper_killed_at_the_limit_leaves_its_tokens_timings_and_logs(tmp_path: Path) -> None:
    """What the suite reads when it had to kill the helper (a hang past run()'s own timeout,
    which a real Harbor cannot be made to do on cue: the helper's files are written here as it
    leaves them): no result.json, so the tokens come from the ATIF trajectory Terminus-2 wrote
    after its last turn, the timings from phases.json, and /logs/agent's files are kept."""
    logs = tmp_path / "helper"
    agent_logs = logs / AGENT_LOGS
    agent_logs.mkdir(parents=True)
    turn = {"step_id": 2, "source": "agent", "message": "Analysis: looking",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "bash_command", "arguments": {"keystrokes": "ls\n"}}],
            "observation": {"results": [{"content": "a b"}]}, "metrics": {"prompt_tokens": 100, "completion_tokens": 20}}
    (agent_logs / "trajectory.json").write_text(json.dumps({
        "schema_version": "ATIF-v1.5", "steps": [{"step_id": 1, "source": "user", "message": "task"}, turn],
        "final_metrics": {"total_prompt_tokens": 800, "total_completion_tokens": 160, "total_cost_usd": None}}))
    (agent_logs / "terminus_2.pane").write_text("$ ls\na b\n")
    (logs / "phases.json").write_text(json.dumps({"agent_setup_sec": 1.5}))
    session = AgentSession(instruction="task", budget=Budget(30.0), environment=None,  # type: ignore[arg-type]
                           trajectory=Trajectory(agent="harbor:terminus-2"), logs_dir=tmp_path / "kept")
    result = HarborAgent("terminus-2", "openai/m", None, {**INSTALLED, "install": "tmux"})._collect(session, logs, True)
    assert result.termination == "time_limit"
    assert session.tokens == {"prompt": 800, "completion": 160} and session.cost_known is False
    assert session.phases == {"agent_setup_sec": 1.5}
    assert [(s.action, s.command, s.output) for s in session.trajectory.steps] == [("command", "ls", "a b")]
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["terminus_2.pane", "trajectory.json"]
    # the helper's own result, when it wrote one, wins over the trajectory's last figures
    (logs / "result.json").write_text(json.dumps({"timed_out": True, "phases": {"agent_run_sec": 30.0},
                                                  "context": {"n_input_tokens": 900, "n_output_tokens": 180,
                                                              "cost_usd": 0.25}}))
    session.phases.clear()
    HarborAgent("terminus-2", "openai/m", None, None)._collect(session, logs, False)
    assert (session.tokens, session.cost, session.phases) == ({"prompt": 900, "completion": 180}, 0.25,
                                                              {"agent_run_sec": 30.0})

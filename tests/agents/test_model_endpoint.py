"""mini-swe-agent's real litellm model class against an OpenAI-compatible server (issue 18).

`model_server.ModelServer` plays a script of tool calls on 127.0.0.1, as a self-hosted model
behind vLLM would, and can fail on demand. The runs go through `run_item`, litellm and the
openai client over HTTP: a scripted solve is submitted and verified; a service that keeps
failing (429, 5xx, refused connection, a hung call) is an infrastructure error retried from a
fresh instance, never a failure; a reply in the wrong format is the agent's failure; token
usage reaches the trajectory and the record; an unpriced model's cost is null.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

# litellm fetches its price list from the internet at import unless told to use its bundled
# copy; these tests may use 127.0.0.1 only. Set before anything imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402
from dockerneeded import engine_needed, requires_docker  # noqa: E402,F401 - engine_needed is autouse
from model_server import ModelServer, Reply  # noqa: E402
from test_mini_swe_agent import SUBMIT, copy_sample_task, solving_script  # noqa: E402

from swe_residual.agents import resolve_agent  # noqa: E402
from swe_residual.dataset.load import TaskEntry, load_dataset  # noqa: E402
from swe_residual.environments.local import LocalBackend  # noqa: E402
from swe_residual.dataset.errors import ConfigError  # noqa: E402
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item  # noqa: E402

SERVED = "served-model"  # the name the server serves; litellm's "openai/" prefix picks the protocol
QUICK = {"model_retries": "0"}  # fail fast: no retry inside an attempt unless a test asks for one


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # No cost-tracking or retry tricks in the environment: the adapter's options must do.
    for name in ("MSWEA_COST_TRACKING", "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")  # the openai client wants one; the server ignores it


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory) -> TaskEntry:
    data = tmp_path_factory.mktemp("data")
    copy_sample_task(data)
    return load_dataset(data).entries[0]


@pytest.fixture
def local(tmp_path: Path) -> LocalBackend:
    return LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(script=solving_script(), served_model=SERVED) as started:
        yield started


def agent(api_base: str, model: str = f"openai/{SERVED}", **options: str):
    return resolve_agent("mini-swe-agent", {"api_base": api_base, **QUICK, **options}, model)


def run(entry: TaskEntry, backend, factory, tmp_path: Path, **options) -> dict:
    return record_json(run_item(entry.task, None, factory, backend, RunOptions(run_id="m", run_dir=tmp_path / "run", **options)))


def free_port() -> int:
    """A port nothing listens on (bound and released at once): connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_scripted_solve_is_submitted_verified_and_its_tokens_recorded(entry, local, server, tmp_path: Path) -> None:
    assert "MSWEA_COST_TRACKING" not in os.environ
    record = run(entry, local, agent(server.url), tmp_path, max_steps=10)
    assert (record["outcome"], record["termination"], record["submitted"]) == ("success", "submitted", True), record
    assert server.requests == record["steps"] == len(solving_script()) == 4
    # Went through litellm's OpenAI-compatible client with mini-swe-agent's tool-calling format.
    assert {body["model"] for body in server.bodies} == {SERVED}
    assert all([t["function"]["name"] for t in body["tools"]] == ["bash"] for body in server.bodies)
    assert record["tokens"] == {"prompt": 4 * 100, "completion": 4 * 20}
    assert record["cost"] is None  # an unpriced model: unknown, not 0.0 and not an error
    steps = json.loads((tmp_path / "run" / record["trajectory"]).read_text())["steps"]
    assert [s["command"] for s in steps] == solving_script()
    assert [(s["prompt_tokens"], s["completion_tokens"]) for s in steps] == [(100, 20)] * 4
    assert record["agent_config"]["api_base"] == server.url


@pytest.mark.slow
def test_unpriced_model_under_a_cost_limit_warns_once_and_keeps_steps_and_time(
        entry, local, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ModelServer(then="echo working", served_model="unpriced") as endless:
        factory = agent(endless.url, model="openai/unpriced")
        first = run(entry, local, factory, tmp_path / "a", max_steps=3, cost_limit=0.01)
        second = run(entry, local, factory, tmp_path / "b", max_steps=2, cost_limit=0.01)
    assert (first["termination"], first["steps"], first["cost"]) == ("step_limit", 3, None)
    assert (second["termination"], second["steps"], second["cost"]) == ("step_limit", 2, None)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "no known price" in line]
    assert len(warnings) == 1 and "openai/unpriced" in warnings[0] and "not enforced" in warnings[0]


@pytest.mark.slow
def test_a_priced_model_keeps_its_cost(entry, local, tmp_path: Path) -> None:
    # The same endpoint under a name litellm has a price for: the cost is known, not null.
    with ModelServer(script=[SUBMIT], served_model="gpt-4o-mini") as priced:
        record = run(entry, local, agent(priced.url, model="openai/gpt-4o-mini"), tmp_path)
    assert record["termination"] == "submitted"
    assert isinstance(record["cost"], float) and record["cost"] > 0
    assert record["tokens"] == {"prompt": 100, "completion": 20}


def test_rate_limited_every_time_is_an_infra_error_retried_from_fresh_instances(entry, local, tmp_path: Path) -> None:
    started = time.monotonic()
    with ModelServer(then=Reply(status=429)) as limited:
        record = run(entry, local, agent(limited.url), tmp_path, infra_retries=2)
    assert (record["outcome"], record["termination"]) == ("infra_error", "infra_error")
    assert [a["outcome"] for a in record["attempts"]] == ["infra_error"] * 3  # retries + 1
    assert all(a["error"].startswith("model: RateLimitError") for a in record["attempts"]), record["attempts"]
    assert limited.requests == 3  # model_retries=0: one call per attempt
    assert time.monotonic() - started < 60


def test_model_retries_bounds_the_model_layers_own_retries(entry, local, tmp_path: Path) -> None:
    with ModelServer(then=Reply(status=500)) as failing:
        record = run(entry, local, agent(failing.url, model_retries="1"), tmp_path, infra_retries=0)
    assert (record["outcome"], len(record["attempts"])) == ("infra_error", 1)
    assert "InternalServerError" in record["error"]
    assert failing.requests == 2  # the call and one retry, then the attempt ends


def test_a_refused_connection_is_an_infra_error(entry, local, tmp_path: Path) -> None:
    record = run(entry, local, agent(f"http://127.0.0.1:{free_port()}/v1"), tmp_path, infra_retries=1)
    assert (record["outcome"], record["termination"]) == ("infra_error", "infra_error")
    assert len(record["attempts"]) == 2
    # litellm reports it as an InternalServerError ("Connection error") over openai's APIConnectionError
    assert all("Connection error" in a["error"] for a in record["attempts"]), record["attempts"]


def test_a_call_past_its_timeout_is_an_infra_error(entry, local, tmp_path: Path) -> None:
    with ModelServer(then=Reply(hang_sec=30)) as hung:
        record = run(entry, local, agent(hung.url, **{"model.model_kwargs.timeout": "1"}), tmp_path, infra_retries=1)
    assert (record["outcome"], len(record["attempts"])) == ("infra_error", 2)
    assert all("Timeout" in a["error"] for a in record["attempts"]), record["attempts"]
    assert hung.requests == 2


def test_malformed_output_is_the_agents_failure(entry, local, tmp_path: Path) -> None:
    # Text without a tool call, every time: mini-swe-agent's format-error rule (3 in a row).
    with ModelServer(then=Reply(content="I would edit the cache now.")) as chatty:
        record = run(entry, local, agent(chatty.url), tmp_path, infra_retries=2)
    assert (record["outcome"], record["termination"]) == ("failure", "agent_error")
    assert len(record["attempts"]) == 1 and chatty.requests == 3
    assert record["tokens"] == {"prompt": 300, "completion": 60}  # billed calls, even in the wrong format
    steps = json.loads((tmp_path / "run" / record["trajectory"]).read_text())["steps"]
    assert [s["action"] for s in steps] == ["message"] * 3


@pytest.mark.extras  # mini-swe-agent reads the configuration
def test_options_are_checked_and_mapped(server) -> None:
    with pytest.raises(ConfigError, match="model_retries"):
        agent(server.url, model_retries="-1")()
    made = agent(server.url, model_retries="2")()
    kwargs = made.model_config["model_kwargs"]
    assert (kwargs["api_base"], kwargs["max_retries"]) == (server.url, 0)
    assert made.model_config["cost_tracking"] == "ignore_errors"
    strict = agent(server.url, **{"model.cost_tracking": "default", "model.model_kwargs.max_retries": "3"})()
    assert strict.model_config["cost_tracking"] == "default"
    assert strict.model_config["model_kwargs"]["max_retries"] == 3


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=requires_docker)])
def test_the_agent_loop_reaches_the_host_server_with_docker(entry, server, backend_name, tmp_path: Path) -> None:
    """The loop and its model calls run in this process; only the commands run in the container."""
    from swe_residual.environments.docker import LABEL, DockerBackend
    from swe_residual.environments.docker.base_image import ensure_base_image

    ensure_base_image(progress=lambda line: None)
    with DockerBackend(cache_dir=tmp_path / "docker-cache", progress=lambda line: None) as backend:
        record = run(entry, backend, agent(server.url), tmp_path, max_steps=10)
    assert (record["outcome"], record["termination"]) == ("success", "submitted"), record
    assert server.requests == record["steps"] == 4
    assert record["tokens"] == {"prompt": 400, "completion": 80}
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}.pid={os.getpid()}"],
                          capture_output=True, text=True, check=False).stdout.split()
    assert left == []

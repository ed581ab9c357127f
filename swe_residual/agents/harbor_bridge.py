"""`--agent=harbor:NAME`: one of Harbor's agents, unmodified, on the suite's own container.

Harbor needs Python >= 3.12 and the suite runs on 3.11, so Harbor is never imported here: the
agent runs in a helper process of Harbor's own virtual environment (`harbor_helper.py`), which
implements Harbor's `BaseEnvironment` over the suite's running container, named by its id.
The suite keeps what it owns: the container's start and stop, the handoff view, the budget
(the helper is killed when the session's wall time is spent: a time limit) and the verifier.

What an agent installs (an installed agent's `install()`, Terminus-2's tmux) is installed once
per task image in the docker backend's set-up layer, with the engine's default network, by
the same helper in install mode (`install_step`, an `AgentInstall`); the measured runs start
from that layer with the task's own network mode and install nothing.

What comes back: the agent's ATIF trajectory, which becomes the suite's trajectory (so
Opened, Inspected and Kept are computed as for any agent), and its context (tokens, cost).
`--model` is the agent's `model_name`; every `--agent-option KEY=VALUE` is one more keyword
argument of the agent's constructor (a value that reads as JSON is passed as that JSON:
`max_turns=5`, `record_terminal_session=false`).

Docker backend only: the helper drives a container by id, and the local backend has none.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.agents.base import AGENT_ERROR, SUBMITTED, TIME_LIMIT, AgentResult, AgentSession
from swe_residual.agents.credentials import credentials_error
from swe_residual.environments.agent_environment import AgentInstall, InstallFailed
from swe_residual.environments.cache import default_cache_dir
from swe_residual.dataset.errors import ConfigError, InfraError
from swe_residual.agents.atif import atif_to_trajectory
from swe_residual.dataset.harbor_layout import read_object
from swe_residual.agents.redaction import redact_options

PREFIX = "harbor:"
HELPER = Path(__file__).with_name("harbor_helper.py")
HARBOR_PYTHON_ENV = "SWE_RESIDUAL_HARBOR_PYTHON"
INSTALL_TIMEOUT_SEC = 1800.0  # an install step downloads an agent and its runtime
# Harbor's BaseAgent.DEFAULT_SETUP_TIMEOUT_SEC (harbor/agents/base.py:65), when `--check` does not say.
SETUP_TIMEOUT_SEC = 360.0
# The helper's own start (Harbor's import, ~4 s) and its copying of the agent's logs: beyond
# setup()'s and run()'s timeouts (which the helper enforces), it is killed after this much more.
START_GRACE_SEC = 60.0
# Where the helper leaves the agent's logs directory (Harbor's TrialPaths(trial_dir).agent_dir).
AGENT_LOGS = Path("trial") / "agent"
AGENT_PHASES = ("agent_setup_sec", "agent_run_sec")
# Error types of litellm that mean the model service failed, not the agent (paper App. C: retried).
_MODEL_SERVICE_ERRORS = ("APIConnectionError", "RateLimitError", "ServiceUnavailableError", "InternalServerError",
                         "Timeout", "APIError")
# Harbor's error types for an install whose downloads could not be reached.
UNREACHABLE_ERRORS = ("NetworkConnectionError",)
# What the helper's `--check` says an agent needs installed before its runs.
INSTALL_STEPS = {"installed": "Harbor's install() of {name}", "tmux": "the tmux install of {name}'s terminal session"}
# Offline: litellm would fetch its price list from the network at import (and wait for it).
_HELPER_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def harbor_python() -> Path:
    given = os.environ.get(HARBOR_PYTHON_ENV)
    return Path(given) if given else default_cache_dir() / "harbor-venv" / "bin" / "python"


def option_value(text: str) -> Any:
    """An `--agent-option` value as the agent's keyword argument: JSON when it reads as JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def container_id(environment: Any) -> str | None:
    """The container behind the session's environment (through any view that wraps it)."""
    seen = 0
    while environment is not None and seen < 8:
        found = getattr(environment, "container_id", None)
        if isinstance(found, str):
            return found
        environment = getattr(environment, "_environment", None) or getattr(environment, "environment", None)
        seen += 1
    return None


# What `--check` answered, by Harbor's Python, agent, model and options: the runner resolves the
# agent for every item, and the check (Harbor's import, ~4 s) is once per process.
_CHECKED: dict[str, dict[str, Any]] = {}


def check_agent(harbor_name: str, model: str | None = None, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What Harbor's helper says of the agent (its Harbor version, what it needs installed, its
    setup timeout); a ConfigError, before any item runs, for a name Harbor lacks, an agent it
    cannot make, or a model whose credentials are not in the environment (each attempt would
    fail on them). Asked once per process for the same agent, model and options."""
    key = json.dumps([str(harbor_python()), harbor_name, model, dict(options or {})], sort_keys=True)
    if key not in _CHECKED:
        _CHECKED[key] = _check_agent(harbor_name, model, options)
    return _CHECKED[key]


def _check_agent(harbor_name: str, model: str | None, options: Mapping[str, str] | None) -> dict[str, Any]:
    python = harbor_python()
    if not os.access(python, os.X_OK):
        raise ConfigError(f"--agent={PREFIX}{harbor_name}: Harbor's Python is not at {python} "
                          f"(install it with `swe-residual setup harbor`, or set ${HARBOR_PYTHON_ENV} to a Python that has it)")
    kwargs = {key: option_value(value) for key, value in (options or {}).items()}
    done = subprocess.run([str(python), str(HELPER), "--check", harbor_name, model or "", json.dumps(kwargs)],
                          capture_output=True, text=True, timeout=120, check=False, env={**os.environ, **_HELPER_ENV})
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
        why = found["error"]
    except (ValueError, IndexError, KeyError, TypeError):
        raise ConfigError(f"--agent={PREFIX}{harbor_name}: Harbor at {python} does not answer: "
                          f"{(done.stderr or done.stdout).strip()[-500:]}") from None
    if why:
        raise ConfigError(f"--agent={PREFIX}{harbor_name}: {why}")
    lacking = found.get("credentials")
    if lacking:
        raise ConfigError(credentials_error(f"--agent={PREFIX}{harbor_name}" + (f" --model={model}" if model else ""),
                                            lacking.get("variables") or [], lacking.get("message", "")))
    return found


def read_result(logs: Path) -> dict[str, Any]:
    """What the helper left in `logs/result.json` ({} when it left nothing)."""
    path = logs / "result.json"
    return json.loads(path.read_text()) if path.is_file() else {}


class HarborAgent:
    """Harbor's agent `harbor_name`, run by the helper process on the session's container."""

    def __init__(self, harbor_name: str, model: str | None, options: Mapping[str, str] | None = None,
                 checked: Mapping[str, Any] | None = None) -> None:
        self.harbor_name, self.model = harbor_name, model
        self.spec = self.name = f"{PREFIX}{harbor_name}"  # the runner names it (with its model): `spec` stays
        self.kwargs: dict[str, Any] = {key: option_value(value) for key, value in (options or {}).items()}
        if model:
            self.kwargs["model_name"] = model
        checked = checked or {}
        setup_timeout = checked.get("setup_timeout_sec")
        self.setup_timeout_sec = float(setup_timeout) if isinstance(setup_timeout, (int, float)) else SETUP_TIMEOUT_SEC
        # The runner's allowance beyond the budget (trial/agent_run.py, outside_budget): setup() and start-up,
        # timed apart by the helper, which enforces run()'s limit itself.
        self.outside_budget_sec = self.setup_timeout_sec + START_GRACE_SEC
        self.install_step: AgentInstall | None = None  # a layer under its starts (runner -> backend)
        needed = checked.get("install")
        if needed in INSTALL_STEPS:
            # Keyed by what decides what gets installed: Harbor's version, the agent, its version
            # options (`version=`, `git_version=`, ...) and whether Terminus-2 records (asciinema);
            # not its model or endpoint, so one install serves every model.
            decides = {k: v for k, v in self.kwargs.items() if "version" in k or k == "record_terminal_session"}
            key = json.dumps({"harbor": checked.get("harbor"), "agent": harbor_name, "install": needed,
                              "options": decides}, sort_keys=True, default=str)
            self.install_step = AgentInstall(agent=self.spec, step=INSTALL_STEPS[needed].format(name=harbor_name),
                                             key=key, install=self._install)

    def describe(self) -> dict[str, Any]:
        """For the record's agent_config: option values that look secret (by key) are redacted."""
        return {"harness": self.spec, "model": self.model, "kwargs": redact_options(dict(sorted(self.kwargs.items())))}

    def _install(self, container: Any) -> None:
        """The install step in the set-up container `container` (agent_setup.py builds the layer)."""
        with tempfile.TemporaryDirectory(prefix="swe-residual-harbor-install-") as scratch:
            logs = Path(scratch)
            if self._call_helper(logs, "install", container.container_id, container.workdir, "", INSTALL_TIMEOUT_SEC):
                raise InstallFailed(f"it did not finish within {INSTALL_TIMEOUT_SEC:.0f}s")
            result = read_result(logs)
            if not result:
                raise InstallFailed("the helper ended without a result: "
                                    + (logs / "helper.log").read_text(errors="replace")[-1500:])
            if "error" in result:
                # Harbor's own reading of the output (DNS, refused, TLS, curl's errors).
                raise InstallFailed(str(result["error"]), unreachable=result.get("error_type") in UNREACHABLE_ERRORS)

    def run(self, session: AgentSession) -> AgentResult:
        container = container_id(session.environment)
        if container is None:
            raise ConfigError(f"--agent={self.spec} needs the docker backend: Harbor's agents drive a container")
        helper = take_warm_helper(self.harbor_name)  # Harbor already imported: the item does not wait for it
        # The next item's, importing while this one runs (its import is seconds; an item is longer).
        prepare_warm_helper(self.harbor_name)
        logs = helper.logs
        try:
            self._write_request(logs, "run", container, session.workdir, session.instruction,
                                timeout_sec=session.budget.timeout_sec)
            # The helper times run() under the task's agent timeout and setup() under its own,
            # as Harbor does; it is killed only if it outlives both and its start-up.
            killed = helper.serve(logs / "request.json", session.budget.timeout_sec + self.outside_budget_sec)
            return self._collect(session, logs, killed)
        finally:
            shutil.rmtree(logs, ignore_errors=True)

    def _write_request(self, logs: Path, mode: str, container: str, workdir: str, instruction: str,
                       timeout_sec: float | None = None) -> None:
        request = {"mode": mode, "container": container, "agent": self.harbor_name, "kwargs": self.kwargs,
                   "instruction": instruction, "logs_dir": str(logs), "workdir": workdir,
                   "session_id": f"swe-residual-{mode}-{container[:12]}", "timeout_sec": timeout_sec}
        (logs / "request.json").write_text(json.dumps(request))

    def _call_helper(self, logs: Path, mode: str, container: str, workdir: str, instruction: str,
                     kill_after_sec: float) -> bool:
        """The helper, started now, in `mode` on `container`, its files in `logs`; whether it
        had to be killed at `kill_after_sec`."""
        self._write_request(logs, mode, container, workdir, instruction)
        log = (logs / "helper.log").open("wb")  # its logging: read only when it left no result
        with log, subprocess.Popen([str(harbor_python()), str(HELPER), str(logs / "request.json")],
                                   env={**os.environ, **_HELPER_ENV}, start_new_session=True, stdout=log,
                                   stderr=subprocess.STDOUT) as process:
            return wait_or_kill(process, kill_after_sec)

    def _collect(self, session: AgentSession, logs: Path, killed: bool) -> AgentResult:
        result = read_result(logs)
        if result.get("kind") == "config":
            raise ConfigError(f"--agent={self.spec}: {result['error']}")
        agent_logs = logs / AGENT_LOGS
        atif, _ = read_object(agent_logs / "trajectory.json")
        trajectory = atif_to_trajectory(atif, self.spec) if atif is not None else None
        if trajectory is not None:
            for index, step in enumerate(trajectory.steps):
                step.index = index
                if step.command is not None:
                    step.command = step.command.rstrip("\n")  # keystrokes end with the Enter that ran them
            session.trajectory.steps = trajectory.steps
        session.phases.update(read_phases(logs, result))
        # The agent's context; when the helper was killed before it wrote one, what the agent's
        # trajectory last recorded (Terminus-2 writes it after every turn).
        usage = context_usage(result.get("context") or {}) or atif_usage(atif or {})
        if usage.tokens is not None:
            session.tokens = usage.tokens
        session.cost_known = usage.cost is not None
        if usage.cost is not None:
            session.add_cost(usage.cost)
        keep_logs(agent_logs, session.logs_dir)
        if killed or result.get("timed_out"):
            return AgentResult(TIME_LIMIT, message=f"time limit of {session.budget.timeout_sec:.0f}s reached",
                               cost=session.cost)
        if "error" in result:
            if result.get("error_type") in _MODEL_SERVICE_ERRORS:
                raise InfraError(str(result["error"])[:500], stage="model")
            return AgentResult(AGENT_ERROR, message=str(result["error"])[:2000], cost=session.cost)
        if not result:
            tail = (logs / "helper.log").read_text(errors="replace")[-1500:] if (logs / "helper.log").is_file() else ""
            return AgentResult(AGENT_ERROR, message=f"{self.spec}: the helper process ended without a result\n{tail}",
                               cost=session.cost)
        return AgentResult(SUBMITTED, message=(trajectory.final_message if trajectory else None), cost=session.cost)


def wait_or_kill(process: subprocess.Popen[bytes], kill_after_sec: float) -> bool:
    """Wait for the helper; whether it had to be killed at `kill_after_sec`. Either way nothing
    it started outlives it (a `docker exec` under way when run() was cancelled)."""
    try:
        process.wait(timeout=max(kill_after_sec, 1.0))
        killed = False
    except subprocess.TimeoutExpired:
        killed = True
    try:
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the helper and what it started
    except ProcessLookupError:
        pass  # nothing left of it
    process.wait()
    return killed


@dataclass
class WarmHelper:
    """A helper started ahead of its item (`harbor_helper.py --warm NAME`): it imports Harbor
    (seconds) while nothing waits, then serves one request. `logs` is its own scratch directory
    (its `helper.log`, then the request's files), removed after the item."""

    process: subprocess.Popen[bytes]
    logs: Path

    def serve(self, request: Path, kill_after_sec: float) -> bool:
        """Hand it `request` and the suite's environment (the model's keys: through the pipe,
        never a file); whether it had to be killed at `kill_after_sec`."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps({"request": str(request), "env": dict(os.environ)}) + "\n").encode())
            self.process.stdin.close()
        except OSError:
            pass  # it ended already (its log says why: the item's "ended without a result")
        return wait_or_kill(self.process, kill_after_sec)


_WARM: dict[str, WarmHelper] = {}
_WARM_LOCK = threading.Lock()


def _start_warm_helper(harbor_name: str) -> WarmHelper:
    logs = Path(tempfile.mkdtemp(prefix="swe-residual-harbor-"))
    with (logs / "helper.log").open("wb") as log:
        # Its stdin is the suite's pipe: when the suite ends, an unused helper reads EOF and ends.
        process = subprocess.Popen([str(harbor_python()), str(HELPER), "--warm", harbor_name],
                                   env={**os.environ, **_HELPER_ENV}, start_new_session=True,
                                   stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    return WarmHelper(process, logs)


def prepare_warm_helper(harbor_name: str) -> None:
    """Start the helper of the next item of `harbor_name`, unless one is waiting."""
    with _WARM_LOCK:
        if harbor_name not in _WARM:
            _WARM[harbor_name] = _start_warm_helper(harbor_name)


@atexit.register
def stop_warm_helpers() -> None:
    """End the helpers no item took (they read EOF and end) and remove their directories."""
    with _WARM_LOCK:
        waiting = list(_WARM.values())
        _WARM.clear()
    for helper in waiting:
        if helper.process.stdin is not None:
            helper.process.stdin.close()
        wait_or_kill(helper.process, 5.0)
        shutil.rmtree(helper.logs, ignore_errors=True)


def take_warm_helper(harbor_name: str) -> WarmHelper:
    """The waiting helper of `harbor_name` (one started now for the first item, or when it ended)."""
    with _WARM_LOCK:
        helper = _WARM.pop(harbor_name, None)
    if helper is not None and helper.process.poll() is None:
        return helper
    if helper is not None:
        shutil.rmtree(helper.logs, ignore_errors=True)
    return _start_warm_helper(harbor_name)


@dataclass(frozen=True)
class Usage:
    tokens: dict[str, int] | None = None
    cost: float | None = None


def context_usage(context: Mapping[str, Any]) -> Usage | None:
    """Tokens and cost of Harbor's AgentContext; None when it has no tokens."""
    prompt, completion = context.get("n_input_tokens"), context.get("n_output_tokens")
    if not (isinstance(prompt, int) and isinstance(completion, int)):
        return None
    cost = context.get("cost_usd")
    return Usage({"prompt": prompt, "completion": completion}, float(cost) if isinstance(cost, (int, float)) else None)


def atif_usage(atif: Mapping[str, Any]) -> Usage:
    """Tokens and cost of an ATIF trajectory's `final_metrics` (what the agent wrote last)."""
    metrics = atif.get("final_metrics")
    metrics = metrics if isinstance(metrics, Mapping) else {}
    found = context_usage({"n_input_tokens": metrics.get("total_prompt_tokens"),
                           "n_output_tokens": metrics.get("total_completion_tokens"),
                           "cost_usd": metrics.get("total_cost_usd")})
    return found or Usage()


def read_phases(logs: Path, result: Mapping[str, Any]) -> dict[str, float]:
    """The helper's timings of setup() and run() (from its result, or the file it writes as each
    ends when it was killed)."""
    phases = result.get("phases")
    if not isinstance(phases, Mapping):
        phases, _ = read_object(logs / "phases.json")
    return {key: float(value) for key, value in (phases or {}).items()
            if key in AGENT_PHASES and isinstance(value, (int, float))}


def keep_logs(agent_logs: Path, destination: Path | None) -> None:
    """The agent's logs directory (Harbor's trial `agent/`: its ATIF trajectory, and what it
    left in /logs/agent) copied to `destination`, when there is one and it holds anything."""
    if destination is None or not agent_logs.is_dir() or not any(agent_logs.iterdir()):
        return
    shutil.copytree(agent_logs, destination, dirs_exist_ok=True, symlinks=True)

"""`--agent=mini-swe-agent`: mini-swe-agent's own agent loop on the suite's environment.

The published package (pinned in pyproject.toml) supplies the loop (`DefaultAgent`), the
model layer (`get_model`: `--model` names any model it knows, API keys come from the host
environment in-process) and its configs. This module supplies only `SessionEnvironment`,
mini-swe-agent's environment protocol implemented on the suite's `AgentSession`, so every
command runs in the suite's environment (local or docker), is recorded as the suite's
trajectory and is charged to the suite's budget, identically for Clean and Residual starts.

Steps are model calls: the commands of one call are folded into one trajectory step, and a
call that ran no command is a `message` step. mini-swe-agent's step and cost limits are the
suite's; its exit status becomes the suite's termination.

`--model=deterministic` selects mini-swe-agent's scripted test model (no network), with the
outputs read from `--agent-option script=FILE` (see `load_script`).

A model-service failure that escapes mini-swe-agent's own retries (rate limit, lost
connection, server error, timeout of the model API: see `is_model_service_failure`) is an
infrastructure failure: the run raises `InfraError(stage="model")` and the runner restarts it
from a fresh instance of the same start (paper App. C). Any other exception of its loop or
model is the agent's own error. The model side (endpoint, retries, cost of unpriced models,
token usage, which errors are the service failing) is in `mini_swe_model`.
"""

from __future__ import annotations

import copy
import json
import math
import os
import platform
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from swe_residual.agents.base import (
    AGENT_ERROR, COST_LIMIT, STEP_LIMIT, SUBMITTED, TIME_LIMIT, AgentResult, AgentSession, BudgetExhausted,
)
from swe_residual.agents.mini_swe_model import (
    UsageTrackingModel, configure_model, is_model_service_failure, model_retry_attempts, parse_retries,
)
from swe_residual.agents.credentials import credentials_error, missing_model_keys
from swe_residual.environments.base import ExecResult
from swe_residual.dataset.errors import ConfigError, DatasetError, InfraError
from swe_residual.agents.trajectory import Step

NAME = "mini-swe-agent"
PINNED_VERSION = "2.4.6"  # keep equal to the pin in pyproject.toml
DEFAULT_CONFIG = "mini.yaml"  # what mini-swe-agent's own `mini` command starts from
DEFAULT_COMMAND_TIMEOUT_SEC = 60.0  # per command, as in its benchmark configs; the run's wall time caps it
SCRIPTED_MODEL = "deterministic"  # its scripted model's name and model-class shortcut
# Options this adapter reads; keys with a dot are overrides of mini-swe-agent's config
# (`model.model_kwargs.temperature=0`), in its own `-c key=value` syntax.
OPTION_KEYS = ("config", "model_class", "script", "command_timeout", "api_base", "model_retries")
# Parts of a mini-swe-agent config that name its own runtime, which the suite replaces.
_OWN_RUNTIME_KEYS = ("agent_class", "output_path", "mode", "confirm_exit")
_EXIT_STATUS = {"Submitted": SUBMITTED, "TimeExceeded": TIME_LIMIT}
MISSING_EXTRA = f"--agent={NAME} needs the mini-swe-agent extra: pip install -e '.[mini-swe-agent]'"


def _import_quietly() -> None:
    """Import mini-swe-agent without its start-up side effects on the user's machine.

    At import it prints a banner, creates its global config directory and loads API keys from
    the `.env` there. Inside a run it gets a throwaway directory (keys come by environment
    only) and no banner; the variables are restored right after, so nothing leaks beyond it.
    """
    if "minisweagent" in sys.modules:
        return
    quiet = {"MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": tempfile.mkdtemp(prefix="swe-residual-mini-")}
    saved = {key: os.environ.get(key) for key in quiet}
    os.environ.update(quiet)
    try:
        import minisweagent  # noqa: F401
        import minisweagent.models  # noqa: F401  (reads MSWEA_SILENT_STARTUP too)
    except ImportError as exc:
        # An optional extra (it brings litellm): one line saying what to install, no traceback.
        raise ConfigError(f"{MISSING_EXTRA} ({exc})") from None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(quiet["MSWEA_GLOBAL_CONFIG_DIR"], ignore_errors=True)


def installed_version() -> str | None:
    try:
        return metadata.version("mini-swe-agent")
    except metadata.PackageNotFoundError:
        return None


def load_script(path: Path) -> list[dict[str, Any]]:
    """Outputs for the scripted model, one per model call, from a JSON or YAML list.

    An entry is a command (a string), a mapping with `command` or `commands`, an optional
    `content` (the model's text) and `cost` (mini-swe-agent's default is 1.0 per call), or a
    message already in mini-swe-agent's own format (a mapping with `extra`), used as it is.
    """
    import yaml  # a dependency of mini-swe-agent

    from minisweagent.models.test_models import make_output

    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"--agent-option script={path}: {exc.strerror or exc}") from exc
    try:
        entries = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"--agent-option script={path}: not a JSON/YAML list: {exc}") from exc
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"--agent-option script={path}: expected a non-empty list of model outputs")
    outputs = []
    for number, entry in enumerate(entries, start=1):
        if isinstance(entry, str):
            entry = {"command": entry}
        if not isinstance(entry, dict):
            raise ConfigError(f"--agent-option script={path}: entry {number} is neither a command nor a mapping")
        if "extra" in entry:
            outputs.append(entry)
            continue
        commands = entry.get("commands", [entry["command"]] if "command" in entry else [])
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            raise ConfigError(f"--agent-option script={path}: entry {number}: `commands` must be a list of strings")
        content = entry.get("content") or "\n\n".join(f"```mswea_bash_command\n{c}\n```" for c in commands)
        extra = {"cost": float(entry["cost"])} if "cost" in entry else {}
        outputs.append(make_output(content, [{"command": c} for c in commands], **extra))
    return outputs


class SessionEnvironment:
    """mini-swe-agent's `Environment` protocol on the suite's `AgentSession`.

    `execute` runs one action through `session.exec` (so the suite records and limits it),
    folds the actions of one model call into one step, and turns the suite's budget
    exhaustion into mini-swe-agent's own limit exits, so its loop ends the way it would.
    """

    def __init__(self, session: AgentSession, *, env: Mapping[str, str], command_timeout: float) -> None:
        self.session = session
        self.env = dict(env)
        self.command_timeout = command_timeout
        self.config = {"cwd": session.workdir, "env": self.env, "timeout": command_timeout}
        self.agent: Any = None  # set once the agent exists: its call count says which call acts
        self.exhausted: BudgetExhausted | None = None
        self.call_steps: dict[int, Step] = {}
        self._charged = 0.0
        self._platform: dict[str, str] | None = None

    # -- the Environment protocol --------------------------------------------------------
    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        from minisweagent.environments.local import LocalEnvironment

        call = self.agent.n_calls if self.agent is not None else 0
        command = str(action.get("command", ""))
        try:
            self._charge()
            result = self._exec_in_call(call, command, cwd, timeout or self.command_timeout)
        except BudgetExhausted as exhausted:
            self.exhausted = exhausted
            raise self._limit_exit(exhausted) from exhausted
        output: dict[str, Any] = {
            "output": result.output,
            "returncode": result.exit_code if result.exit_code is not None else -1,
            "exception_info": "",
        }
        if result.timed_out:
            output["exception_info"] = f"The command timed out after {timeout or self.command_timeout:.0f} seconds."
        # Its own rule for "the agent submits" (first output line, exit status 0), raising Submitted.
        LocalEnvironment._check_finished(self, output)  # type: ignore[arg-type]
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        # What its templates use ({{system}}, {{release}}, ...), from inside the environment;
        # never the host's environment variables (they may hold API keys).
        return {**self.config, **self._uname(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": dict(self.config),
                                    "environment_type": f"{__name__}.{type(self).__name__}"}}}

    # -- internals -----------------------------------------------------------------------
    def _exec_in_call(self, call: int, command: str, cwd: str, timeout: float) -> ExecResult:
        steps = self.session.trajectory.steps
        held = self.call_steps.get(call)
        if held is not None and steps and steps[-1] is held:
            steps.pop()  # one call, one step: the session counts (and limits) it once
        before = len(steps)
        try:
            if cwd:
                command = f"cd {shlex.quote(cwd)} && {command}"
            return self.session.exec(command, timeout_sec=timeout, env=self.env)
        finally:
            if len(steps) > before:
                step = steps.pop()
                if held is not None:
                    held.command = f"{held.command}\n{step.command}"
                    held.output += step.output
                    held.exit_code = step.exit_code
                    held.duration_sec = round(held.duration_sec + step.duration_sec, 3)
                    step = held
                steps.append(step)
                self.call_steps[call] = step
            elif held is not None:
                steps.append(held)

    def _charge(self) -> None:
        """Charge the model's cost so far to the suite's budget (raises at the cost limit)."""
        cost = float(getattr(self.agent, "cost", 0.0) or 0.0)
        if cost > self._charged:
            delta, self._charged = cost - self._charged, cost
            self.session.add_cost(delta)

    def settle_cost(self) -> None:
        cost = float(getattr(self.agent, "cost", 0.0) or 0.0)
        self.session.cost += max(0.0, cost - self._charged)
        self._charged = max(cost, self._charged)

    @staticmethod
    def _limit_exit(exhausted: BudgetExhausted) -> Exception:
        from minisweagent.exceptions import LimitsExceeded, TimeExceeded

        status = "TimeExceeded" if exhausted.termination == TIME_LIMIT else "LimitsExceeded"
        exit_class = TimeExceeded if exhausted.termination == TIME_LIMIT else LimitsExceeded
        return exit_class({"role": "exit", "content": str(exhausted),
                           "extra": {"exit_status": status, "submission": ""}})

    def _uname(self) -> dict[str, str]:
        if self._platform is None:
            host = platform.uname()
            fields = {"system": host.system, "release": host.release, "version": host.version, "machine": host.machine}
            # Harness set-up, not an agent step: straight to the environment, unrecorded.
            probe = self.session.environment.exec("uname -s; uname -r; uname -v; uname -m", timeout_sec=30)
            lines = probe.stdout.splitlines()
            if probe.exit_code == 0 and len(lines) == 4:
                fields = dict(zip(("system", "release", "version", "machine"), lines))
            self._platform = fields
        return self._platform


class MiniSweAgent:
    """Runs mini-swe-agent's `DefaultAgent` with `--model` on the suite's environment."""

    uses_reference_solution = False

    def __init__(self, model: str | None, options: Mapping[str, str] | None = None, name: str = NAME) -> None:
        _import_quietly()
        from minisweagent.config import get_config_from_spec
        from minisweagent.utils.serialize import recursive_merge

        self.name = name
        self.options = dict(options or {})
        config_spec = self.options.get("config", DEFAULT_CONFIG)
        try:
            configs = [get_config_from_spec(config_spec)]
            configs += [get_config_from_spec(f"{k}={v}") for k, v in self.options.items() if "." in k]
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--agent={NAME}: mini-swe-agent config {config_spec!r}: {exc}") from exc
        self.config: dict[str, Any] = recursive_merge(*configs)
        model_config = dict(self.config.get("model") or {})
        self.model = model or model_config.get("model_name") or os.environ.get("MSWEA_MODEL_NAME")
        if not self.model:
            raise ConfigError(f"--agent={NAME} needs a model: --model=NAME (or the ini option residual_model)")
        model_class = self.options.get("model_class") or model_config.get("model_class")
        if not model_class and self.model == SCRIPTED_MODEL:
            model_class = SCRIPTED_MODEL  # its scripted model is selected by class, not by name
        if model_class:
            model_config["model_class"] = model_class
        if "script" in self.options:
            model_config["outputs"] = load_script(Path(self.options["script"]))
        elif model_class == SCRIPTED_MODEL:
            raise ConfigError(f"--agent={NAME} --model={SCRIPTED_MODEL}: give its outputs with --agent-option script=FILE")
        try:
            self.model_retries = parse_retries(self.options.get("model_retries"))
        except ValueError as exc:
            raise ConfigError(f"--agent-option model_retries={self.options['model_retries']!r}: {exc}") from exc
        if model_class != SCRIPTED_MODEL:  # its scripted model has no endpoint, price or retries
            model_config = configure_model(model_config, self.options, retries=self.model_retries)
        self.model_config = model_config
        try:
            self.command_timeout = float(self.options.get("command_timeout", DEFAULT_COMMAND_TIMEOUT_SEC))
            if not self.command_timeout > 0:
                raise ValueError("must be greater than 0")
        except ValueError as exc:
            raise ConfigError(f"--agent-option command_timeout={self.options['command_timeout']!r}: {exc}") from exc

    def check_credentials(self) -> None:
        """A ConfigError naming the variable when litellm says the model's key is not set: every
        attempt would fail on it. Only for its litellm model classes (the default); the scripted
        model and other classes need no key of litellm's."""
        model_class = str(self.model_config.get("model_class") or "litellm")
        if "litellm" not in model_class:
            return
        kwargs = self.model_config.get("model_kwargs") or {}
        missing = missing_model_keys(str(self.model), api_base=kwargs.get("api_base"), api_key=kwargs.get("api_key"))
        if missing:
            raise ConfigError(credentials_error(f"--agent={NAME} --model={self.model}", missing))

    def describe(self) -> dict[str, Any]:
        """The configuration recorded with each run (the runner redacts secrets from it)."""
        return {
            "harness": NAME, "harness_version": installed_version(), "model": self.model,
            "model_class": self.model_config.get("model_class"), "config": self.options.get("config", DEFAULT_CONFIG),
            "api_base": (self.model_config.get("model_kwargs") or {}).get("api_base"),
        }

    def run(self, session: AgentSession) -> AgentResult:
        from minisweagent.agents.default import DefaultAgent
        from minisweagent.models import get_model

        agent_config = {k: v for k, v in copy.deepcopy(self.config.get("agent") or {}).items() if k not in _OWN_RUNTIME_KEYS}
        budget = session.budget
        agent_config.update(
            step_limit=budget.max_steps or 0,  # 0: no limit, in its terms as in ours (None)
            cost_limit=budget.cost_limit or 0.0,
            wall_time_limit_seconds=max(1, math.ceil(session.remaining_sec())),
            output_path=None,
        )
        environment = SessionEnvironment(
            session, env=(self.config.get("environment") or {}).get("env") or {}, command_timeout=self.command_timeout,
        )
        model = UsageTrackingModel(get_model(self.model, copy.deepcopy(self.model_config)), cost_limit=budget.cost_limit)
        agent = DefaultAgent(model, environment, **agent_config)
        environment.agent = agent
        termination, message = AGENT_ERROR, None
        try:
            with model_retry_attempts(self.model_retries):
                info = agent.run(task=session.instruction)
            status = str(info.get("exit_status", ""))
            termination = self._termination(status, agent, environment)
            message = str(info.get("submission") or "").strip()[-1000:] or f"mini-swe-agent exit status {status}"
        except BudgetExhausted as exhausted:  # raised outside execute (e.g. the uname probe)
            termination, message = exhausted.termination, str(exhausted)
        except (InfraError, DatasetError):
            raise  # the harness's own failures pass through unchanged
        except Exception as exc:
            if is_model_service_failure(exc):
                # Paper App. C: "If a run is interrupted by an infrastructure problem, such as a
                # transient network, model-service, or container failure, we restart it from an
                # independent instance of the same initial state."
                raise InfraError(f"{type(exc).__name__}: {str(exc)[:500]}", stage="model") from exc
            # Its own crash (a malformed reply it could not recover from, a script that ran
            # out, a model it cannot use) is the agent's failure.
            message = f"mini-swe-agent raised {type(exc).__name__}: {exc}"
        finally:
            environment.settle_cost()
            self._normalize(session, agent, environment, model)
            session.tokens, session.cost_known = model.token_totals(), model.cost_known
        return AgentResult(termination, message=message, cost=session.cost)

    @staticmethod
    def _termination(status: str, agent: Any, environment: SessionEnvironment) -> str:
        if environment.exhausted is not None:
            return environment.exhausted.termination
        if status == "LimitsExceeded":
            limit = agent.config.step_limit
            return STEP_LIMIT if 0 < limit <= agent.n_calls else COST_LIMIT
        return _EXIT_STATUS.get(status, AGENT_ERROR)

    @staticmethod
    def _normalize(session: AgentSession, agent: Any, environment: SessionEnvironment, model: UsageTrackingModel) -> None:
        """One step per model call, in order; a call that ran no command is a `message` step.

        Each step carries its call's token usage, when the model reported it.
        """
        replies = [m for m in agent.messages[2:] if m.get("role") == "assistant"
                   or (m.get("extra") or {}).get("interrupt_type") == "FormatError"]
        steps = []
        for call in range(1, agent.n_calls + 1):
            step = environment.call_steps.get(call)
            if step is None:
                text = replies[call - 1].get("content") if call <= len(replies) else None
                step = Step(index=0, action="message", output=str(text or "(the model call ran no command)"))
            if call <= len(model.calls):
                step.prompt_tokens = model.calls[call - 1].prompt_tokens
                step.completion_tokens = model.calls[call - 1].completion_tokens
            steps.append(step)
        for index, step in enumerate(steps):
            step.index = index
        session.trajectory.steps = steps

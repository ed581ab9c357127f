"""Agents and how `--agent` names resolve to them."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.agents.base import Agent, AgentResult, AgentSession, Budget, BudgetExhausted
from swe_residual.agents.builtin import CommandAgent, NoopAgent, OracleAgent
from swe_residual.agents.host_files import host_program
from swe_residual.agents.mini_swe import NAME as MINI_SWE_AGENT, OPTION_KEYS as MINI_SWE_OPTION_KEYS
from swe_residual.environments.base import ExecResult
from swe_residual.errors import ConfigError

__all__ = [
    "Agent", "AgentResult", "AgentSession", "Budget", "BudgetExhausted",
    "AGENT_FORMS", "AgentFactory", "CommandAgent", "NoopAgent", "OracleAgent", "resolve_agent",
]

# `--agent-option` keys: `env` and `upload` (cmd: agents: host variables passed in by name, and
# whether a host program's file or its whole directory is copied in), the mini-swe-agent
# adapter's own, and any dotted key (an override of mini-swe-agent's config).
AGENT_OPTION_KEYS = ("env", "upload", *MINI_SWE_OPTION_KEYS)


def is_agent_option_key(key: str) -> bool:
    return key in AGENT_OPTION_KEYS or ("." in key and all(part.strip() for part in key.split(".")))


def passed_env_names(options: Mapping[str, str] | None) -> list[str]:
    """Host variables named by `--agent-option env=NAME[,NAME]` (also redacted from records)."""
    return [name.strip() for name in (options or {}).get("env", "").split(",") if name.strip()]


class _WithHostEnv:
    """An environment view that adds host variables to each command (for `cmd:` agents)."""

    def __init__(self, environment: Any, env: dict[str, str]) -> None:
        self._environment, self._env = environment, env

    def exec(self, command: str, *, env: dict[str, str] | None = None, **kwargs: Any) -> ExecResult:
        return self._environment.exec(command, env={**self._env, **(env or {})}, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._environment, name)


class _CommandAgentWithEnv(CommandAgent):
    """`cmd:` given the host variables listed with `env=`: keys reach it by environment only."""

    def __init__(self, command: str, name: str, env_names: list[str], program: Any = None) -> None:
        super().__init__(command, name=name, program=program)
        self.env_names = env_names

    def run(self, session: AgentSession) -> AgentResult:
        passed = {name: os.environ[name] for name in self.env_names if name in os.environ}
        original = session.environment
        session.environment = _WithHostEnv(original, passed)  # type: ignore[assignment]
        try:
            return super().run(session)
        finally:
            session.environment = original

BUILTIN: dict[str, Callable[[], Agent]] = {"noop": NoopAgent, "oracle": OracleAgent}
# Every form an `--agent` value takes, for help texts and errors (one list, so none omits one).
AGENT_FORMS = (*BUILTIN, MINI_SWE_AGENT, "cmd:<command>", "module:<module>:<Class>")


@dataclass(frozen=True)
class AgentFactory:
    """Makes a fresh agent per attempt, named `label`: the name its records carry.

    The label is the harness plus its model when it takes one (`mini-swe-agent[MODEL]`), so
    two models are two agents in every table, or the `--agent-name` a user gave."""

    make: Callable[[], Agent]
    label: str

    def __call__(self) -> Agent:
        agent = self.make()
        agent.name = self.label
        return agent


def default_label(spec: str, model: str | None = None) -> str:
    """An agent's name when no `--agent-name` is given: the spec, with the model in brackets
    for a harness that takes one."""
    return f"{spec}[{model}]" if spec == MINI_SWE_AGENT and model else spec


def _load_class(target: str) -> type:
    module_name, _, class_name = target.rpartition(":") if ":" in target else target.rpartition(".")
    if not module_name or not class_name:
        raise ConfigError(f"--agent=module:{target}: expected module:package.module:ClassName")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--agent=module:{target}: cannot import {module_name!r}: {exc}") from exc
    try:
        return getattr(module, class_name)
    except AttributeError as exc:
        raise ConfigError(f"--agent=module:{target}: {module_name!r} has no {class_name!r}") from exc


def resolve_agent(spec: str, options: Mapping[str, str] | None = None, model: str | None = None,
                  base_dir: Path | None = None, name: str | None = None) -> AgentFactory:
    """A factory making a fresh agent per attempt from an `--agent` value, named `name` (the
    `--agent-name` label) or else :func:`default_label`.

    `options` (`--agent-option KEY=VALUE`) and `model` (`--model`) go to the agents that use
    them; the others ignore them, so one command line can evaluate several kinds of agent.
    `base_dir` is where a `cmd:` agent's relative host paths start (where pytest runs).
    """
    make, resolved_model = _resolve(spec, options, model, base_dir)
    return AgentFactory(make, name or default_label(spec, resolved_model))


def _resolve(spec: str, options: Mapping[str, str] | None, model: str | None,
             base_dir: Path | None) -> tuple[Callable[[], Agent], str | None]:
    """The maker of an agent and the model it uses (None: it takes none)."""
    unknown = sorted(key for key in (options or {}) if not is_agent_option_key(key))
    if unknown:
        raise ConfigError(f"--agent-option: unknown key(s) {', '.join(unknown)} (known: {', '.join(AGENT_OPTION_KEYS)})")
    if spec in BUILTIN:
        return BUILTIN[spec], None
    if spec == MINI_SWE_AGENT:
        from swe_residual.agents.mini_swe import MiniSweAgent

        # A bad model, config or script is a usage error now, not per item; the model it
        # resolves (--model, else its config's, else $MSWEA_MODEL_NAME) names the agent.
        probe = MiniSweAgent(model, options)
        return (lambda: MiniSweAgent(model, options)), probe.model
    if spec.startswith("cmd:"):
        command = spec[len("cmd:"):]
        if not command.strip():
            raise ConfigError("--agent=cmd: needs a command, e.g. --agent='cmd:./my-agent.sh'")
        env_names = passed_env_names(options)
        program = host_program(command, str(base_dir or Path.cwd()), (options or {}).get("upload", "file"))
        if env_names:
            return (lambda: _CommandAgentWithEnv(command, spec, env_names, program)), None
        return (lambda: CommandAgent(command, name=spec, program=program)), None
    if spec.startswith("module:"):
        cls = _load_class(spec[len("module:"):])
        if not callable(getattr(cls, "run", None)):
            raise ConfigError(f"--agent={spec}: {cls.__name__} has no run(session) method")

        def make() -> Agent:
            agent = cls()
            agent.name = spec
            return agent

        return make, None
    known = ", ".join(AGENT_FORMS)
    raise ConfigError(f"--agent={spec}: unknown agent (known: {known})")

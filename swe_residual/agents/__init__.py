"""Agents and how `--agent` names resolve to them."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from swe_residual.agents.base import Agent, AgentResult, AgentSession, Budget, BudgetExhausted
from swe_residual.agents.builtin import CommandAgent, NoopAgent, OracleAgent
from swe_residual.errors import ConfigError

__all__ = [
    "Agent", "AgentResult", "AgentSession", "Budget", "BudgetExhausted",
    "CommandAgent", "NoopAgent", "OracleAgent", "resolve_agent",
]

BUILTIN: dict[str, Callable[[], Agent]] = {"noop": NoopAgent, "oracle": OracleAgent}


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


def resolve_agent(spec: str) -> Callable[[], Agent]:
    """A factory making a fresh agent per attempt from an `--agent` value."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    if spec.startswith("cmd:"):
        command = spec[len("cmd:"):]
        if not command.strip():
            raise ConfigError("--agent=cmd: needs a command, e.g. --agent='cmd:./my-agent.sh'")
        return lambda: CommandAgent(command, name=spec)
    if spec.startswith("module:"):
        cls = _load_class(spec[len("module:"):])
        if not callable(getattr(cls, "run", None)):
            raise ConfigError(f"--agent={spec}: {cls.__name__} has no run(session) method")

        def make() -> Agent:
            agent = cls()
            agent.name = spec
            return agent

        return make
    known = ", ".join([*BUILTIN, "cmd:<command>", "module:<module>:<Class>"])
    raise ConfigError(f"--agent={spec}: unknown agent (known: {known})")

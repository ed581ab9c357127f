"""Agents: the agent protocol, the table of agents (registry.py) and how `--agent` names resolve
to them, the built-in agents, mini-swe-agent and Harbor's, and the trajectory their steps make."""

from __future__ import annotations

from swe_residual.agents.base import Agent, AgentResult, AgentSession, Budget, BudgetExhausted
from swe_residual.agents.builtin import CommandAgent, NoopAgent, OracleAgent
from swe_residual.agents.registry import (
    AGENT_FORMS, AGENT_OPTION_KEYS, AGENTS, SOLUTION_AGENTS, AgentFactory, AgentKind, agent_kind, default_label,
    is_agent_option_key, passed_env_names, resolve_agent,
)

__all__ = [
    "Agent", "AgentResult", "AgentSession", "Budget", "BudgetExhausted",
    "AGENT_FORMS", "AGENT_OPTION_KEYS", "AGENTS", "SOLUTION_AGENTS", "AgentFactory", "AgentKind", "CommandAgent",
    "NoopAgent", "OracleAgent", "agent_kind", "default_label", "is_agent_option_key", "passed_env_names",
    "resolve_agent",
]

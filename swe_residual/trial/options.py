"""What a run gives each of its items: its id and directory, the budget settings, the
agent's options and environment, the handoff view and the rollout (`RunOptions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.environments.agent_environment import AgentEnvironment
from swe_residual.agents import Budget
from swe_residual.trial.handoff.views import BLIND
from swe_residual.agents.redaction import REDACTED, SECRET_OPTION_KEY
from swe_residual.dataset.task import Task




@dataclass(frozen=True)
class RunOptions:
    run_id: str
    run_dir: Path
    infra_retries: int = 2
    timeout_multiplier: float = 1.0
    max_steps: int | None = None
    cost_limit: float | None = None
    model: str | None = None
    agent_options: tuple[tuple[str, str], ...] = ()
    # Exception types an outer watchdog raises in the calling thread (the pytest fixture passes
    # pytest-timeout's): one arriving while the agent runs ends the attempt as a time limit.
    watchdog_exceptions: tuple[type[BaseException], ...] = ()
    agent_environment: AgentEnvironment | None = None  # `--agent-setup` and `--agent-mount`
    handoff: str = BLIND  # what a Residual State's agent is told of its predecessor (swe_residual/trial/handoff/views.py)
    agent_spec: str | None = None  # the `--agent` value, when the agent is named by a label
    rollout: int | None = None  # which run of the start with `--rollouts` above 1; None: the only one
    # Stage I (residualize generate): also record the predecessor's commits (repo track), by the
    # environment's own git; never for a graded run.
    capture_commits: bool = False

    def agent_config(self) -> dict[str, Any]:
        """What configured the agent, for the record; option values that look secret are hidden.

        The run-level budget settings are part of it (the per-task timeout is in `budget`):
        an agent given 10 steps and the same agent given 100 are two configurations."""
        options = {k: (REDACTED if SECRET_OPTION_KEY.search(k) else v) for k, v in self.agent_options}
        config: dict[str, Any] = {
            "spec": self.agent_spec, "model": self.model, "options": options,
            "limits": {"timeout_multiplier": self.timeout_multiplier, "max_steps": self.max_steps,
                       "cost_limit": self.cost_limit},
        }
        if self.agent_environment is not None and not self.agent_environment.empty:
            config["environment"] = self.agent_environment.describe()
        return config

    def budget(self, task: Task) -> Budget:
        return Budget(
            timeout_sec=task.config.agent_timeout_sec * self.timeout_multiplier,
            max_steps=self.max_steps,
            cost_limit=self.cost_limit,
        )

"""Agents with known behaviour, loaded through `--agent=module:scripted_agents:Name`."""

from __future__ import annotations

import os
from pathlib import Path

from swe_residual.agents import AgentResult, AgentSession
from swe_residual.errors import InfraError


class KeepInherited:
    """Looks at the inherited work, runs its tests, and submits it as it is."""

    name = "keep-inherited"

    def run(self, session: AgentSession) -> AgentResult:
        session.exec("git status --short")
        session.exec("git diff")
        return AgentResult(message="The implementation is complete.")


class WritesRewardFiles:
    """Tries to fake a pass by writing reward files wherever it can reach."""

    name = "fake-reward"

    def run(self, session: AgentSession) -> AgentResult:
        session.exec(
            "for d in . /logs/verifier /tmp/logs/verifier logs/verifier; do "
            "mkdir -p $d 2>/dev/null && echo 1 > $d/reward.txt && echo '{\"reward\": 1}' > $d/reward.json; done; true"
        )
        return AgentResult()


class LoopsForever:
    """Never declares done: the step limit ends it."""

    name = "loops"

    def run(self, session: AgentSession) -> AgentResult:
        while True:
            session.exec("true")


class Crashes:
    name = "crashes"

    def run(self, session: AgentSession) -> AgentResult:
        raise RuntimeError("the agent fell over")


class FlakyInfra:
    """Loses its environment on the first N attempts (counted in $FLAKY_INFRA_DIR)."""

    name = "flaky-infra"
    failures = int(os.environ.get("FLAKY_INFRA_FAILURES", "1"))

    def run(self, session: AgentSession) -> AgentResult:
        counter = Path(os.environ["FLAKY_INFRA_DIR"]) / "attempts"
        seen = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(seen + 1))
        if seen < self.failures:
            # Stands in for a lost container: the local backend has no engine to lose.
            raise InfraError("container lost (injected)")
        session.exec("git status")
        return AgentResult()

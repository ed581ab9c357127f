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


class KillsItsWorker:
    """Ends its own process mid-run, as a worker dies from an OOM kill or a segfault."""

    name = "kills-worker"

    def run(self, session: AgentSession) -> AgentResult:
        os._exit(3)


class HangsAfter:
    """Declares done on its first $HANG_AFTER runs, then hangs (the run gets killed)."""

    name = "hangs-after"

    def run(self, session: AgentSession) -> AgentResult:
        counter = Path(os.environ["HANG_DIR"]) / "runs"
        seen = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(seen + 1))
        if seen >= int(os.environ.get("HANG_AFTER", "1000000")):
            import time

            time.sleep(600)
        return AgentResult()


# Agents with known acceptance-bias signatures (tests/test_bias_signatures.py, test_report_html.py).
# The fix is the taskfactory task's: clamp's base body `return value` becomes a real clamp.
FIX_CLAMP = "sed -i 's/^    return value$/    return max(low, min(value, high))/' calc.py"
DISCARD = "git reset -q --hard HEAD && git clean -fdxq"


def _inherits_work(session: AgentSession) -> bool:
    return bool(session.exec("git status --porcelain").stdout.strip())


class DiscardsInherited:
    """Throws inherited work away without looking at it, then submits the base unchanged."""

    name = "discard-inherited"

    def run(self, session: AgentSession) -> AgentResult:
        session.exec(DISCARD)
        return AgentResult(message="Started over.")


class AcceptsInherited:
    """Fixes the bug from a clean start; given inherited work, reviews it and accepts it as
    done (the acceptance bias in its purest form)."""

    name = "accepts-inherited"

    def run(self, session: AgentSession) -> AgentResult:
        if _inherits_work(session):
            session.exec("git diff")
            return AgentResult(message="The previous work already covers the request.")
        session.exec(FIX_CLAMP)
        return AgentResult(message="Fixed clamp.")


class FinishesInheritedOnly:
    """The mirror image: redoes inherited work properly, but declares a clean start done at
    once. With AcceptsInherited it makes a ranking reversal."""

    name = "finishes-inherited"

    def run(self, session: AgentSession) -> AgentResult:
        if _inherits_work(session):
            session.exec(DISCARD)
            session.exec(FIX_CLAMP)
        return AgentResult()

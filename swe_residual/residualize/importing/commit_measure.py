"""Measuring an imported task on a backend: which hidden tests the fix makes pass.

Every measurement is one fresh start of the clean base, optionally with a patch applied
strictly and without a commit (as a repo-track Residual State is applied), then the task's
own verifier: the collect step, the separate verifier, test.sh with the hidden tests laid over
the repository. So the statuses recorded are the ones every later run will see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swe_residual.environments.base import StartSpec
from swe_residual.dataset.errors import ConfigError, InfraError
from swe_residual.environments.patches import apply_patch
from swe_residual.dataset.task import Task
from swe_residual.environments.verifier.outputs import PASSED, Verdict, evaluate


class NothingToImport(ConfigError):
    """No hidden test fails at the base and passes with the fix: the commit makes no task."""


@dataclass(frozen=True)
class Measurement:
    base: dict[str, str]  # per-test statuses at the base, hidden tests overlaid
    fixed: dict[str, str]  # with the solution applied
    f2p: list[str]
    p2p: list[str]

    @property
    def others(self) -> dict[str, list[str]]:
        """Tests left out of f2p/p2p, by why: they fail with the fix, or the fix breaks them."""
        fails_with_fix = sorted(t for t, s in self.fixed.items() if s != PASSED)
        broken = sorted(t for t in fails_with_fix if self.base.get(t) == PASSED)
        return {"fail with the fix": [t for t in fails_with_fix if t not in broken],
                "pass at the base, fail with the fix": broken}


def run_verifier_on(backend: Any, task: Task, patch: str, label: str, run_id: str) -> Verdict:
    """A fresh start of the base with `patch` applied (strict `git apply`, no commit), verified
    untouched; acceptance tests missing from every report count as failed."""
    environment = backend.start(task, None, StartSpec(run_id, f"import:{task.id}/{label}", 1))
    try:
        apply_patch(environment, patch, source=label, strict=True)
        return evaluate(backend.run_verifier(environment, task), task.acceptance_tests())
    finally:
        environment.close()


def _valid(verdict: Verdict, what: str) -> Verdict:
    if not verdict.valid:
        raise InfraError(f"{what}: the verifier gave no valid verdict: {verdict.error}", stage="validation")
    return verdict


def measure(backend: Any, task: Task, solution: str, run_id: str) -> Measurement:
    """f2p: fails (or is missing) at the base and passes with the fix; p2p: passes at both."""
    base = _valid(run_verifier_on(backend, task, "", "base", run_id), "the base").tests
    fixed = _valid(run_verifier_on(backend, task, solution, "fix", run_id), "the fix").tests
    passing = sorted(test for test, status in fixed.items() if status == PASSED)
    if not passing:
        listed = ", ".join(f"{t}: {s}" for t, s in sorted(fixed.items())[:5]) or "no test reported at all"
        raise ConfigError(f"no hidden test passes with the fix applied ({listed}): the environment probably "
                          f"lacks the project's dependencies; add them to {task.environment_dir / 'Dockerfile'} "
                          "(docker) or to this Python (local) and import again")
    f2p = [test for test in passing if base.get(test) != PASSED]
    p2p = [test for test in passing if base.get(test) == PASSED]
    if not f2p:
        raise NothingToImport(f"nothing to import: all {len(passing)} test(s) passing with the fix already pass at "
                          "the base, so no test fails before the fix")
    return Measurement(base, fixed, f2p, p2p)

"""Where a task's verifier runs, resolved as Harbor resolves it (DESIGN §4).

`shared` mode verifies in the agent's own environment after the agent stops. `separate` mode
verifies in a FRESH environment that receives only the collected artifacts; its image is, in
this order:
1. `[verifier.environment] docker_image` (the hidden tests are baked in: "bundled");
2. `tests/Dockerfile`, built with `tests/` as its context (bundled as well);
3. a fresh copy of the task's own environment (`[environment] docker_image`, else the image of
   `environment/Dockerfile`) at the base commit, never the starting state, with `tests/` uploaded.
Resources come from `[verifier.environment]` when the task has one, else from `[environment]`.
This module only decides; the backends build and start what it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swe_residual.dataset.task import Task

SHARED = "shared"
VERIFIER_IMAGE = "verifier-image"  # [verifier.environment] docker_image
TESTS_DOCKERFILE = "tests-dockerfile"  # tests/Dockerfile, tests/ as context
TASK_ENVIRONMENT = "task-environment"  # a fresh copy of the task's environment


@dataclass(frozen=True)
class VerifierEnvironmentPlan:
    """The verifier's environment for one task; `source` is one of the constants above."""

    source: str
    image: str | None = None  # the docker_image named, for VERIFIER_IMAGE (and a prebuilt task image)
    bundled_tests: bool = False  # the image already holds /tests: do not upload them again
    cpus: float | None = None
    memory_mb: int | None = None
    network: str = "none"
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """A short label for the run record ("which verifier environment was used")."""
        if self.source == VERIFIER_IMAGE:
            return f"{VERIFIER_IMAGE}:{self.image}"
        return self.source


def plan_verifier_environment(task: Task) -> VerifierEnvironmentPlan:
    config = task.config
    if config.verifier_environment_mode != "separate":
        return VerifierEnvironmentPlan(SHARED, network=config.verifier_network_mode)
    own = config.verifier_environment
    resources = {
        "cpus": own.cpus if own is not None else config.cpus,
        "memory_mb": own.memory_mb if own is not None else config.memory_mb,
        # [environment.env] of the task, or the verifier environment's own.
        "env": dict(own.env) if own is not None else dict(config.environment_env),
        "network": config.verifier_network_mode,
    }
    if own is not None and own.docker_image:
        return VerifierEnvironmentPlan(VERIFIER_IMAGE, image=own.docker_image, bundled_tests=True, **resources)
    if (task.tests_dir / "Dockerfile").is_file():
        return VerifierEnvironmentPlan(TESTS_DOCKERFILE, bundled_tests=True, **resources)
    return VerifierEnvironmentPlan(TASK_ENVIRONMENT, image=config.docker_image, **resources)

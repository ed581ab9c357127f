"""The error kinds the suite distinguishes (DESIGN §7).

A `DatasetError` is a malformed task or state: it names the file and the field, and it only
affects the items of that task or state. An `InfraError` is a failure of the machinery around
the agent (environment, engine, verifier): the run is retried from a fresh instance and never
counted as a task failure. An `EnvironmentLostByAgent` is an InfraError that the runner
turns into the agent's failure when it comes from the agent's own environment.
"""

from __future__ import annotations

from pathlib import Path


class SuiteError(Exception):
    """Base class for every error the suite raises on purpose."""


class DatasetError(SuiteError):
    """A task or a residual state that cannot be used as written."""

    def __init__(self, path: Path | str, message: str, field: str | None = None) -> None:
        self.path = Path(path)
        self.field = field
        self.message = message
        where = f"{self.path}" + (f" [{field}]" if field else "")
        super().__init__(f"{where}: {message}")


class InfraError(SuiteError):
    """Environment build/start failure, lost container, engine error, verifier crash."""

    def __init__(self, message: str, *, stage: str = "environment") -> None:
        self.stage = stage
        super().__init__(f"{stage}: {message}")


class ConfigError(SuiteError):
    """A bad setting, named with where it came from (command line, ini, marker)."""


class EnvironmentLostByAgent(InfraError):
    """The agent's container stopped and the engine recorded no cause from outside it: no kill
    request, no out-of-memory kill, no error of its own (environments/docker/lost.py).

    Nothing but what ran inside could have stopped it, so when this is raised by the agent's own
    environment (`environment_id`: while the agent runs, and the harness's steps on it right
    after) the runner ends the attempt as the agent's failure, never retried. Raised by any other
    (a start, a separate verifier, a canary) it stays an InfraError, as its base class says.
    """

    def __init__(self, message: str, *, environment_id: str = "") -> None:
        self.environment_id = environment_id
        super().__init__(message)


class MemoryLimitReached(EnvironmentLostByAgent):
    """The agent's container stopped because what ran in it reached the task's memory limit
    (`memory_mb`, the agent's budget): the kernel's out-of-memory killer, within the container's
    own cgroup, killed its PID 1 (environments/docker/oom.py). The agent's failure, termination
    `memory_limit`, with the limit, what was killed and the engine's evidence."""

    def __init__(self, message: str, *, environment_id: str = "", memory_mb: int | None = None,
                 killed: tuple[str, ...] = (), evidence: tuple[str, ...] = ()) -> None:
        self.memory_mb = memory_mb
        self.killed = killed
        self.evidence = evidence
        super().__init__(message, environment_id=environment_id)

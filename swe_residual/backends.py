"""Choosing an environment backend by name: `docker`, `local`, or `auto`."""

from __future__ import annotations

from collections.abc import Callable

from swe_residual.agent_environment import AgentEnvironment, require_docker
from swe_residual.environment.base import Backend
from swe_residual.errors import ConfigError

MACHINE_TRACK_NEEDS_DOCKER = "machine-track items need the docker backend (the local backend runs repo-track tasks only)"


def docker_available() -> bool:
    try:
        from swe_residual.environment.docker import DockerBackend
    except ImportError:
        return False
    return DockerBackend.available()


def resolve_backend_name(name: str) -> str:
    if name == "auto":
        return "docker" if docker_available() else "local"
    return name


def make_backend(name: str, run_id: str, *, progress: Callable[[str], None] | None = None,
                 agent_environment: AgentEnvironment | None = None) -> Backend:
    """The backend `name` names; `progress` receives a line per long step (image builds, state
    snapshots); `agent_environment` is the agents' set-up script and mounts (docker only)."""
    name = resolve_backend_name(name)
    agent_environment = agent_environment or AgentEnvironment()
    require_docker(agent_environment, name)
    if name == "local":
        from swe_residual.environment.local import LocalBackend

        return LocalBackend()
    if name == "docker":
        if not docker_available():
            raise ConfigError("--backend=docker: no Docker engine answers (is the daemon running?)")
        from swe_residual.environment.docker import DockerBackend
        from swe_residual.validation import check_state_verdict

        return DockerBackend(run_id=run_id, validate_state=check_state_verdict, agent_environment=agent_environment,
                             **({"progress": progress} if progress is not None else {}))
    raise ConfigError(f"unknown backend {name!r}")


def unsupported_tracks(name: str) -> dict[str, str]:
    """Tracks a backend cannot run, with the reason shown on the skipped items."""
    return {"machine": MACHINE_TRACK_NEEDS_DOCKER} if resolve_backend_name(name) == "local" else {}

"""Choosing an environment backend by name: `docker`, `local`, or `auto`."""

from __future__ import annotations

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


def make_backend(name: str, run_id: str) -> Backend:
    name = resolve_backend_name(name)
    if name == "local":
        from swe_residual.environment.local import LocalBackend

        return LocalBackend()
    if name == "docker":
        if not docker_available():
            raise ConfigError("--backend=docker: no Docker engine answers (is the daemon running?)")
        from swe_residual.environment.docker import DockerBackend
        from swe_residual.validation import check_state_verdict

        return DockerBackend(run_id=run_id, validate_state=check_state_verdict)
    raise ConfigError(f"unknown backend {name!r}")


def unsupported_tracks(name: str) -> dict[str, str]:
    """Tracks a backend cannot run, with the reason shown on the skipped items."""
    return {"machine": MACHINE_TRACK_NEEDS_DOCKER} if resolve_backend_name(name) == "local" else {}

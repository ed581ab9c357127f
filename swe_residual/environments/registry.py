"""Choosing an environment backend by name: `docker`, `local`, or `auto`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swe_residual.environments.agent_environment import AgentEnvironment, require_docker
from swe_residual.environments.base import Backend
from swe_residual.dataset.errors import ConfigError
from swe_residual.dataset.values import Track

MACHINE_TRACK_NEEDS_DOCKER = "machine-track items need the docker backend (the local backend runs repo-track tasks only)"


def docker_available(docker_hosts: tuple[str, ...] = ()) -> bool:
    """Whether an engine answers: one of `docker_hosts`, or without them the environment's."""
    try:
        from swe_residual.environments.docker import DockerBackend
    except ImportError:
        return False
    return any(DockerBackend.available(engine_url=url) for url in docker_hosts or (None,))


def resolve_backend_name(name: str, docker_hosts: tuple[str, ...] = ()) -> str:
    # Engines named with --docker-host ask for docker: `auto` never falls back to local then.
    if name == "auto":
        return "docker" if docker_hosts or docker_available() else "local"
    return name


def checked_docker_hosts(docker_hosts: tuple[str, ...]) -> tuple[str, ...]:
    """The engine URLs, each checked (a ConfigError names a malformed one), duplicates dropped."""
    if not docker_hosts:
        return ()
    try:
        from swe_residual.environments.docker.fleet import check_engine_urls
    except ImportError as exc:
        raise ConfigError(f"--docker-host needs the Docker SDK (the `docker` package): {exc}") from exc
    return check_engine_urls(docker_hosts)


def make_backend(name: str, run_id: str, *, progress: Callable[[str], None] | None = None,
                 agent_environment: AgentEnvironment | None = None, docker_hosts: tuple[str, ...] = (),
                 machine_trust: str | None = None, force_build: bool = False) -> Backend:
    """The backend `name` names; `progress` receives a line per long step (image builds, state
    snapshots); `agent_environment` is the agents' set-up script and mounts (docker only);
    `docker_hosts` are the engines (`--docker-host`): one is used as it is, several make a
    `DockerFleet` spreading xdist workers over them (none: the environment's engine);
    `machine_trust` is what the docker backend gives containers with a network of this
    machine's trust: auto, none or a bundle's path (None: SWE_RESIDUAL_MACHINE_TRUST, else auto);
    `force_build` (`--force-build`, docker only) builds a task's Dockerfiles although it names an image."""
    hosts = checked_docker_hosts(docker_hosts)
    name = resolve_backend_name(name, hosts)
    agent_environment = agent_environment or AgentEnvironment()
    require_docker(agent_environment, name)
    if name == "local":
        if hosts:
            raise ConfigError("--docker-host names Docker engines, but the backend is local (--backend=local)")
        from swe_residual.environments.local import LocalBackend

        return LocalBackend()
    if name == "docker":
        from swe_residual.environments.docker import DockerBackend
        from swe_residual.environments.verifier.state_check import check_state_verdict

        given: dict[str, Any] = {"progress": progress} if progress is not None else {}
        if machine_trust is not None:
            given["machine_trust"] = machine_trust
        if force_build:
            given["force_build"] = True
        if len(hosts) > 1:
            from swe_residual.environments.docker.fleet import DockerFleet

            fleet = DockerFleet(hosts, run_id=run_id, validate_state=check_state_verdict,
                                agent_environment=agent_environment, **given)
            if not fleet.engines_up():
                fleet.close()
                raise ConfigError("--docker-host: no Docker engine answers: "
                                  + ", ".join(engine.describe() for engine in fleet.engines))
            return fleet
        if not docker_available(hosts):
            raise ConfigError(f"--docker-host={hosts[0]}: the Docker engine does not answer" if hosts
                              else "--backend=docker: no Docker engine answers (is the daemon running?)")
        return DockerBackend(run_id=run_id, validate_state=check_state_verdict, agent_environment=agent_environment,
                             engine_url=hosts[0] if hosts else None, **given)
    raise ConfigError(f"unknown backend {name!r}")


def unsupported_tracks(name: str, docker_hosts: tuple[str, ...] = ()) -> dict[str, str]:
    """Tracks a backend cannot run, with the reason shown on the skipped items."""
    return {Track.MACHINE: MACHINE_TRACK_NEEDS_DOCKER} if resolve_backend_name(name, docker_hosts) == "local" else {}

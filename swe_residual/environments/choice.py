"""Which backend a run uses, and why: decided once, before anything runs, and said in the header.

`--backend=auto` takes docker when an engine answers, else local; the choice and its reason
("auto: engine at URL answered", "auto: no engine answered at URL: Connection refused") are
shown to the user, since a wrong `DOCKER_HOST` would otherwise fall back to local silently.
`--backend=docker` (or `--docker-host`) with no engine answering is a usage error naming the
URL and where it came from, instead of one failure per item.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from swe_residual.dataset.errors import ConfigError

# The Docker SDK's engine when DOCKER_HOST is not set.
DEFAULT_ENGINE_URL = "unix:///var/run/docker.sock"


@dataclass(frozen=True)
class BackendChoice:
    name: str  # "docker" or "local"
    engines: tuple[str, ...] = ()  # docker: the engine URLs the run uses
    reason: str | None = None  # why `auto` chose, or None when the backend was named

    def describe(self) -> str:
        return self.name + (f" ({self.reason})" if self.reason else "")


def environment_engine() -> tuple[str, str]:
    """The engine URL the environment names, and where it came from, for messages."""
    url = os.environ.get("DOCKER_HOST", "").strip()
    if url:
        return url, f"DOCKER_HOST={url}"
    return DEFAULT_ENGINE_URL, "DOCKER_HOST is not set: the default socket"


def _probe(url: str | None) -> str | None:
    """None when the engine answers, else why not (no Docker SDK: that reason)."""
    try:
        from swe_residual.environments.docker.engine import probe
    except ImportError as exc:
        return f"the Docker SDK cannot be imported: {exc}"
    return probe(url)


def choose_backend(requested: str, docker_hosts: tuple[str, ...] = ()) -> BackendChoice:
    """The backend `requested` ("auto", "docker", "local") comes to, each engine asked once.

    Raises ConfigError when docker is asked for (by name or by `--docker-host`) and no engine
    answers: the message names every URL tried and, for the environment's, `DOCKER_HOST`."""
    if requested == "local":
        return BackendChoice("local")
    if requested not in ("auto", "docker"):
        raise ConfigError(f"unknown backend {requested!r}")
    if docker_hosts:
        failures = [(url, why) for url in docker_hosts if (why := _probe(url)) is not None]
        if len(failures) == len(docker_hosts):
            tried = "; ".join(f"{url}: {why}" for url, why in failures)
            raise ConfigError(f"--docker-host: no Docker engine answers ({tried})")
        # The fleet leaves an engine that does not answer for the others: say which, go on.
        notes = (["auto: --docker-host names engines"] if requested == "auto" else []) + [
            f"not answering: {url}: {why}" for url, why in failures]
        return BackendChoice("docker", docker_hosts, "; ".join(notes) or None)
    url, source = environment_engine()
    why = _probe(None)
    if why is None:
        return BackendChoice("docker", (url,), f"auto: engine at {url} answered" if requested == "auto" else None)
    if requested == "docker":
        raise ConfigError(f"--backend=docker: no Docker engine answers at {url} ({source}): {why}; "
                          "start the engine, set DOCKER_HOST (or --docker-host) to one that runs, "
                          "or use --backend=local")
    return BackendChoice("local", (), f"auto: no engine answered at {url}: {why}")

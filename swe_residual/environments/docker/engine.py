"""The Docker engine client, its availability probe, and the one place engine errors become
`InfraError`.

Every call to the engine goes through the Docker SDK (`docker` package). The engine is the one
the environment names (`DOCKER_HOST`, the default socket) unless a URL is given (`unix://`,
`tcp://`, `ssh://`), so each worker can drive its own engine. Failures are told apart by the
SDK's exception types (and HTTP status codes), never by reading error text (a failed pull
alone, in pulls.py: the engine says whether a registry answered in no other way).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import docker
import docker.errors
import requests.exceptions

from swe_residual.dataset.errors import InfraError

# HTTP timeout of ordinary engine calls (commits of big containers take a while on
# fuse-overlayfs); long-running streams (exec output, builds) set their own deadlines.
ENGINE_TIMEOUT_SEC = 180.0
PROBE_TIMEOUT_SEC = 5.0

# What the SDK raises when the engine refuses, fails, or cannot be reached.
ENGINE_EXCEPTIONS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
)

_DEFAULT: docker.DockerClient | None = None
_DEFAULT_LOCK = threading.Lock()


def connect(engine_url: str | None = None, *, timeout_sec: float = ENGINE_TIMEOUT_SEC) -> docker.DockerClient:
    """A client of the engine at `engine_url`, or of the one the environment names."""
    try:
        if engine_url:
            return docker.DockerClient(base_url=engine_url, timeout=int(timeout_sec))
        return docker.from_env(timeout=int(timeout_sec))
    except ENGINE_EXCEPTIONS as exc:
        # Creating a client asks the engine its API version: a dead socket fails here.
        where = engine_url or "named by the environment"
        raise InfraError(f"the Docker engine ({where}) cannot be reached: {exc}") from exc


def default_client() -> docker.DockerClient:
    """The process-wide client of the environment's engine (module-level helpers use it)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = connect()
        return _DEFAULT


def available(engine_url: str | None = None, timeout_sec: float = PROBE_TIMEOUT_SEC) -> bool:
    """Whether an engine answers a ping within `timeout_sec`."""
    return probe(engine_url, timeout_sec) is None


def probe(engine_url: str | None = None, timeout_sec: float = PROBE_TIMEOUT_SEC) -> str | None:
    """None when an engine answers a ping within `timeout_sec`, else why not, in a few words."""
    try:
        client = docker.DockerClient(base_url=engine_url, timeout=max(1, int(timeout_sec))) if engine_url \
            else docker.from_env(timeout=max(1, int(timeout_sec)))
    except ENGINE_EXCEPTIONS as exc:
        return _short_reason(exc)
    try:
        return None if client.ping() else "the engine did not answer the ping"
    except ENGINE_EXCEPTIONS as exc:
        return _short_reason(exc)
    finally:
        client.close()


def _short_reason(exc: BaseException) -> str:
    """The operating system's words at the bottom of the SDK's chain ("Connection refused"),
    which say more to a person than the three wrappers above them."""
    seen: BaseException | None = exc
    for _ in range(16):  # a bounded walk: chains are a handful deep
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror
        seen = seen.__cause__ or seen.__context__
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return first if len(first) <= 160 else first[:157] + "..."


def infra_error(exc: BaseException, what: str, *, stage: str = "environment") -> InfraError:
    """The InfraError for an engine failure while doing `what`."""
    if isinstance(exc, docker.errors.BuildError):
        log = "".join(str(item.get("stream") or item.get("error") or "") for item in exc.build_log)
        return InfraError(f"{what} failed: {exc.msg}\n{log.strip()[-3000:]}", stage=stage)
    if isinstance(exc, docker.errors.ContainerError):
        return InfraError(f"{what} failed: exit status {exc.exit_status}: {_text(exc.stderr)[-800:]}", stage=stage)
    if isinstance(exc, docker.errors.ImageNotFound):
        return InfraError(f"{what} failed: image not present locally: "
                          f"{_explanation(exc)}", stage=stage)
    if isinstance(exc, docker.errors.NotFound):
        return InfraError(f"{what} failed: not found: {_explanation(exc)}", stage=stage)
    if isinstance(exc, docker.errors.APIError):
        return InfraError(f"{what} failed: the engine answered {exc.status_code}: {_explanation(exc)}", stage=stage)
    if isinstance(exc, requests.exceptions.Timeout):
        return InfraError(f"{what} failed: the Docker engine did not answer in time ({exc})", stage=stage)
    if isinstance(exc, requests.exceptions.ConnectionError):
        return InfraError(f"{what} failed: the Docker engine cannot be reached ({exc})", stage=stage)
    return InfraError(f"{what} failed: {type(exc).__name__}: {exc}", stage=stage)


@contextmanager
def engine_errors(what: str, *, stage: str = "environment") -> Iterator[None]:
    """Turn any engine failure inside the block into an InfraError saying what was being done."""
    try:
        yield
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, what, stage=stage) from exc


def _explanation(exc: docker.errors.APIError) -> str:
    return _text(exc.explanation or str(exc)).strip()[-800:]


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value or "")


# -- small queries that treat "absent" as an answer, not an error -----------------------------
def inspect_image(client: docker.DockerClient, reference: str) -> dict[str, Any] | None:
    """The engine's description of a local image, or None when it is absent."""
    try:
        found: dict[str, Any] = client.api.inspect_image(reference)
    except docker.errors.NotFound:
        return None
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, f"inspecting image {reference}") from exc
    return found


def inspect_container(client: docker.DockerClient, container_id: str) -> dict[str, Any] | None:
    """The engine's description of a container, or None when it is gone."""
    try:
        found: dict[str, Any] = client.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return None
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, f"inspecting container {container_id[:12]}") from exc
    return found


def container_running(client: docker.DockerClient, container_id: str) -> bool:
    found = inspect_container(client, container_id)
    return bool(found and (found.get("State") or {}).get("Running"))


def remove_containers(client: docker.DockerClient, ids: Iterable[str]) -> None:
    """Remove containers (and their anonymous volumes); already gone is fine: close is idempotent."""
    for container_id in sorted(set(ids)):
        try:
            client.api.remove_container(container_id, v=True, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            pass  # e.g. 409: its removal is already in progress (another cleanup got there first)


def remove_images(client: docker.DockerClient, references: Iterable[str]) -> list[str]:
    """Remove images by tag or id, best effort (an image still in use stays); returns the removed."""
    removed = []
    for reference in sorted(set(references)):
        try:
            client.api.remove_image(reference)
            removed.append(reference)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            pass  # in use by a container or a child image: not ours to force
    return removed

"""Labels, sweeping and cleanup: no container or temporary image outlives its owner.

Every container carries `swe-residual=1` and the labels below; temporary images (commits to
`swe-residual-tmp:*`) carry the owner labels too. `sweep()` removes what belongs to a dead
process of this host (or to a given run), every new backend sweeps at start, and SIGINT/SIGTERM
and interpreter exit remove the current process's containers and temporary images.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import threading
import weakref
from pathlib import Path
from types import FrameType
from typing import Protocol

import docker

from swe_residual.environments.docker.engine import (
    ENGINE_EXCEPTIONS,
    connect,
    default_client,
    remove_containers,
    remove_images,
)
from swe_residual.dataset.errors import InfraError

LABEL = "swe-residual"
TEMP_REPO = "swe-residual-tmp"
OWNER_FIELDS = ("pid", "pid-start", "host", "run")
CLEANUP_TIMEOUT_SEC = 30.0
HOST = socket.gethostname()


class Owner(Protocol):
    """What the cleanup hooks need of a backend."""

    closed: bool
    engine_url: str | None


def process_start(pid: int) -> str | None:
    """Start time of a host process (clock ticks since boot), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_alive(pid_label: str, start_label: str) -> bool:
    try:
        pid = int(pid_label)
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by someone else
    started = process_start(pid)
    return not start_label or started is None or started == start_label


def owner_labels() -> dict[str, str]:
    """Labels naming this host process as the owner."""
    pid = os.getpid()
    return {f"{LABEL}.pid": str(pid), f"{LABEL}.pid-start": process_start(pid) or "", f"{LABEL}.host": HOST}


def container_labels(kind: str, item: str, run_id: str, backend_token: str) -> dict[str, str]:
    return {LABEL: "1", f"{LABEL}.kind": kind, f"{LABEL}.run": run_id, f"{LABEL}.item": item,
            f"{LABEL}.backend": backend_token, **owner_labels()}


def _stale(labels: dict[str, str], run_id: str | None) -> bool:
    """Whether a labelled object belongs to `run_id` or to a dead owner on this host."""
    owner = {name: labels.get(f"{LABEL}.{name}", "") for name in OWNER_FIELDS}
    if run_id is not None and owner["run"] == run_id:
        return True
    # Owners on another host (a shared engine) are never judged dead.
    return owner["host"] == HOST and not owner_alive(owner["pid"], owner["pid-start"])


def sweep(run_id: str | None = None, client: docker.DockerClient | None = None) -> int:
    """Remove swe-residual containers and temporary images whose owning process is dead.

    With `run_id`, also those of that run whatever their owner. Returns how many containers
    were removed.
    """
    client = client or default_client()
    listed = client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
    doomed = [entry["Id"] for entry in listed if _stale(entry.get("Labels") or {}, run_id)]
    remove_containers(client, doomed)
    remove_images(client, stale_temp_images(client, run_id))
    return len(doomed)


def temp_images(client: docker.DockerClient, label: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """(tag, labels) of every temporary image, optionally only those with `label` (k=v)."""
    filters: dict[str, object] = {"reference": TEMP_REPO}
    if label:
        filters["label"] = label
    found = []
    for image in client.api.images(filters=filters):
        for tag in image.get("RepoTags") or []:
            if tag.startswith(TEMP_REPO + ":"):
                found.append((tag, image.get("Labels") or {}))
    return found


def stale_temp_images(client: docker.DockerClient, run_id: str | None) -> list[str]:
    return [tag for tag, labels in temp_images(client) if _stale(labels, run_id)]


def cleanup_process(client: docker.DockerClient, pid: int | None = None) -> None:
    """Remove every container and temporary image owned by process `pid` (default: this one)."""
    owner = f"{LABEL}.pid={pid or os.getpid()}"
    listed = client.api.containers(all=True, quiet=True, filters={"label": owner})
    remove_containers(client, [entry["Id"] for entry in listed])
    remove_images(client, [tag for tag, _ in temp_images(client, owner)])


# -- signal and exit hooks ---------------------------------------------------------------------
_BACKENDS: "weakref.WeakSet[Owner]" = weakref.WeakSet()  # type: ignore[type-var]
_HANDLERS_INSTALLED = False
_PREVIOUS_HANDLERS: dict[int, object] = {}
_CLEANING = threading.Lock()


def register(backend: Owner) -> None:
    """Track a backend for the exit and signal hooks (installed on first use)."""
    _BACKENDS.add(backend)
    _install_handlers()


def _cleanup_engines() -> None:
    # A fresh client per engine: the hook may interrupt a request of the backend's own client.
    # One engine that is gone (or hangs) must not cost the others their cleanup.
    urls = {backend.engine_url for backend in list(_BACKENDS)} or {None}
    for url in sorted(urls, key=str):
        try:
            client = connect(url, timeout_sec=CLEANUP_TIMEOUT_SEC)
        except (InfraError, *ENGINE_EXCEPTIONS):
            continue  # the engine is gone: nothing of ours can be running on it either
        try:
            cleanup_process(client)
        except (InfraError, *ENGINE_EXCEPTIONS):
            continue
        finally:
            client.close()


def _on_exit() -> None:
    if any(not backend.closed for backend in list(_BACKENDS)):
        _cleanup_engines()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Remove the containers first, then behave as before (KeyboardInterrupt, or death by signal).
    if _CLEANING.acquire(blocking=False):
        try:
            for backend in list(_BACKENDS):
                backend.closed = True
            _cleanup_engines()
        except Exception:  # noqa: BLE001 - never mask the signal itself
            pass
        finally:
            _CLEANING.release()
    previous = _PREVIOUS_HANDLERS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return
    _HANDLERS_INSTALLED = True
    atexit.register(_on_exit)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread; atexit still holds
    for signum in (signal.SIGINT, signal.SIGTERM):
        _PREVIOUS_HANDLERS[signum] = signal.getsignal(signum)
        signal.signal(signum, _on_signal)

"""Running a command in a container: deadline inside and outside, output capped while streamed.

A command runs under `timeout -s KILL T`, which puts it in its own process group and kills
the group inside the container at the deadline, even if the harness died meanwhile. Each exec
carries a unique EXEC_MARK variable, so whatever escaped the group (setsid, daemons) is found
in /proc and killed right after a timeout. On the host, the stream is closed at T + grace if
the engine never ends it.

Output is read as it arrives and kept with a cap per stream (environments/capped_output.py, as
the local backend keeps it): the first OUTPUT_HEAD_BYTES and the last OUTPUT_TAIL_BYTES; what
lies between is dropped and a marker line says how many bytes, so a command printing gigabytes
costs the harness a few MiB.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
from docker.utils.socket import frames_iter

from swe_residual.environments.base import ExecResult
from swe_residual.environments.capped_output import (  # noqa: F401  (the caps are re-exported)
    OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, CappedOutput,
)
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, container_running, infra_error
from swe_residual.environments.docker.lost import lost_container_error
from swe_residual.dataset.errors import InfraError

# How long after an exec's own deadline the host still waits for the engine to end the stream
# (the in-container `timeout` fires first; this only covers a hung engine).
CLIENT_GRACE_SEC = 5.0
EXIT_CODE_PATIENCE_SEC = 3.0
EXEC_MARK = "SWE_RESIDUAL_EXEC"
STDOUT, STDERR = 1, 2

_KILL_MARKED = (
    'for d in /proc/[0-9]*; do '
    'tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -qx "$1" && kill -9 "${d#/proc/}" 2>/dev/null; '
    'done; exit 0'
)


@dataclass(frozen=True)
class RawExec:
    """What one exec produced, bytes as they came (within the cap)."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    duration_sec: float
    dropped_bytes: int
    started: bool  # False when the engine could not start the process at all (exit 126)


def run_exec(
    client: docker.DockerClient, container_id: str, argv: list[str], *, timeout_sec: float | None = None,
    env: dict[str, str] | None = None, cwd: str | None = None, stdin: bytes | None = None,
    capped: bool = True, stderr_bytes: int | None = None,
) -> RawExec:
    """Run `argv` in the container; on timeout kill it (and what escaped) inside the container.

    Engine failures raise InfraError (saying whether the container is lost). `capped=False`
    keeps all output (the harness's own reads of files it wrote); `stderr_bytes` keeps stderr
    whole up to that many bytes (the verifier's reporter streams its events there).
    """
    token = secrets.token_hex(8)
    inner = argv if timeout_sec is None else ["timeout", "-s", "KILL", f"{max(timeout_sec, 0.001):.3f}", *argv]
    environment = {**(env or {}), EXEC_MARK: token}
    try:
        exec_id = client.api.exec_create(container_id, inner, stdin=stdin is not None, environment=environment,
                                         workdir=cwd or None)["Id"]
        # socket=True, not stream=True: the raw connection is what can carry stdin and be
        # shut down from the watchdog; the SDK's own frame reader demultiplexes it.
        sock = client.api.exec_start(exec_id, socket=True)
    except ENGINE_EXCEPTIONS as exc:
        raise lost_or_failed(client, container_id, exc, "exec") from exc
    started = time.monotonic()
    out = CappedOutput() if capped else CappedOutput(head=None)
    err = CappedOutput(head=stderr_bytes, tail=0) if stderr_bytes is not None \
        else CappedOutput() if capped else CappedOutput(head=None)
    hung = threading.Event()
    raw = _raw_socket(sock)
    watchdog = None
    if timeout_sec is not None:
        watchdog = threading.Timer(timeout_sec + CLIENT_GRACE_SEC, _shut, (raw, hung))
        watchdog.daemon = True
        watchdog.start()
    try:
        if stdin is not None:
            raw.sendall(stdin)
            raw.shutdown(socket.SHUT_WR)  # end of input: the command sees EOF
        for stream, data in _frames(sock):
            (err if stream == STDERR else out).add(data)
    except BaseException:
        _shut(raw, hung)
        kill_marked(client, container_id, token)
        raise
    finally:
        if watchdog is not None:
            watchdog.cancel()
        _close(sock)
    elapsed = time.monotonic() - started
    state = _finished_state(client, container_id, exec_id, wait=not hung.is_set())
    exit_code = state.get("ExitCode")
    # 137: timeout's group kill took timeout itself down; 124 if it survived to report.
    timed_out = hung.is_set() or (timeout_sec is not None and exit_code in (124, 137) and elapsed >= timeout_sec)
    if timed_out:
        kill_marked(client, container_id, token)
    elif exit_code is None or state.get("Running") or (exit_code != 0 and _container_died(client, container_id, exit_code)):
        # The stream ended without the process ending, or the container died under it.
        raise lost_or_failed(client, container_id, None, "exec")
    return RawExec(
        exit_code=None if timed_out else exit_code, stdout=out.value(), stderr=err.value(), timed_out=timed_out,
        duration_sec=elapsed, dropped_bytes=out.dropped + err.dropped,
        # A process the engine never started has no pid (a missing cwd, for one).
        started=bool(state.get("Pid")),
    )


def _finished_state(client: docker.DockerClient, container_id: str, exec_id: str, *, wait: bool) -> dict:
    """The exec's final state; the engine may record the exit code a moment after the stream ends."""
    deadline = time.monotonic() + (EXIT_CODE_PATIENCE_SEC if wait else 0)
    while True:
        try:
            state: dict = client.api.exec_inspect(exec_id)
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(client, container_id, exc, "exec") from exc
        if not state.get("Running") or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def _container_died(client: docker.DockerClient, container_id: str, exit_code: int) -> bool:
    """Whether the container stopped under a failed command. A command killed by a signal may
    have died with its container, which the engine reports stopped a moment later: look again."""
    looks = 4 if exit_code > 128 else 1
    for look in range(looks):
        if not container_running(client, container_id):
            return True
        if look + 1 < looks:
            time.sleep(0.25)
    return False


def to_result(raw: RawExec) -> ExecResult:
    return ExecResult(
        exit_code=raw.exit_code,
        stdout=raw.stdout.decode("utf-8", errors="surrogateescape"),
        stderr=raw.stderr.decode("utf-8", errors="replace"),
        timed_out=raw.timed_out,
        duration_sec=raw.duration_sec,
        dropped_bytes=raw.dropped_bytes,
    )


def kill_marked(client: docker.DockerClient, container_id: str, token: str) -> None:
    """Kill every process of the container whose environment carries this exec's mark."""
    try:
        exec_id = client.api.exec_create(container_id, ["sh", "-c", _KILL_MARKED, "sh", f"{EXEC_MARK}={token}"])["Id"]
        client.api.exec_start(exec_id)
    except ENGINE_EXCEPTIONS:
        pass  # the container is gone, and its processes with it


def lost_or_failed(client: docker.DockerClient, container_id: str, exc: BaseException | None,
                   what: str) -> InfraError:
    """The InfraError for a failed exec: says whether the container is lost, and when it is,
    why, from the engine's evidence (lost.py; an `EnvironmentLostByAgent` when nothing from
    outside stopped it)."""
    try:
        running = container_running(client, container_id)
    except InfraError:
        running = False
    detail = str(infra_error(exc, what)) if exc is not None else ""
    if running:
        return InfraError(f"docker {what} failed, container {container_id[:12]} is running" + (f": {detail}" if detail else ""))
    return lost_container_error(client, container_id, what, detail)


def _frames(sock: object) -> Iterator[tuple[int, bytes]]:
    try:
        yield from frames_iter(sock, False)
    except OSError:
        return  # the watchdog shut the connection down: treated as the end of the stream


def _raw_socket(sock: Any) -> Any:
    """The connection under the SDK's file-like wrapper: a socket (unix, tcp) or an ssh channel,
    both with sendall() and shutdown()."""
    return getattr(sock, "_sock", sock)


def _shut(raw: Any, hung: threading.Event) -> None:
    hung.set()
    try:
        raw.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked in poll(): it sees the end
    except OSError:
        pass


def _close(sock: Any) -> None:
    """Close the hijacked connection: the response, its file wrapper and the socket itself."""
    for closeable in (getattr(sock, "_response", None), sock, _raw_socket(sock)):
        if closeable is None:
            continue
        try:
            closeable.close()
        except (OSError, ValueError):
            pass  # already closed through another of the three

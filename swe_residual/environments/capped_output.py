"""Output kept with a cap, whatever a command prints: the first and the last MiB of a stream.

Both backends read a command's output as it arrives and keep the first `OUTPUT_HEAD_BYTES`
and the last `OUTPUT_TAIL_BYTES` of each stream; what lies between is dropped and a marker line
says how many bytes, so an agent printing gigabytes costs the harness a few MiB.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable

OUTPUT_HEAD_BYTES = 1024 * 1024
OUTPUT_TAIL_BYTES = 1024 * 1024
READ_CHUNK = 64 * 1024
# How long the pipes are still drained after a timed-out command's group was killed: a
# process that escaped the group and keeps them open must not hold the harness forever.
DRAIN_AFTER_KILL_SEC = 5.0


class CappedOutput:
    """The first `head` and the last `tail` bytes of a stream, and how many were dropped."""

    def __init__(self, head: int | None = OUTPUT_HEAD_BYTES, tail: int = OUTPUT_TAIL_BYTES) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if self.head_limit is None or len(self.head) < self.head_limit:
            room = len(data) if self.head_limit is None else self.head_limit - len(self.head)
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            # Trim only once the tail is twice its size: amortized, not a copy per chunk.
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - min(len(self.tail), self.tail_limit)

    def value(self) -> bytes:
        tail = bytes(self.tail[-self.tail_limit:]) if self.tail_limit else b""
        if not self.dropped:
            return bytes(self.head) + tail
        marker = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode()
        return bytes(self.head) + marker + tail


def communicate_capped(
    process: subprocess.Popen[bytes], timeout_sec: float | None, kill: Callable[[int], None],
) -> tuple[bytes, bytes, bool, int]:
    """`process.communicate(timeout)` with each stream capped (`CappedOutput`).

    Returns (stdout, stderr, timed_out, dropped bytes); stderr is b"" when it was not a pipe. At the deadline
    `kill(pid)` ends the process group; its pipes are then drained for `DRAIN_AFTER_KILL_SEC`
    at most before they are closed.
    """
    streams = {process.stdout: CappedOutput(), **({process.stderr: CappedOutput()} if process.stderr else {})}
    selector = selectors.DefaultSelector()
    for stream in streams:
        assert stream is not None
        os.set_blocking(stream.fileno(), False)
        selector.register(stream, selectors.EVENT_READ)
    deadline = None if timeout_sec is None else time.monotonic() + max(timeout_sec, 0.0)
    timed_out = False
    try:
        while selector.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                if timed_out:
                    break  # drained long enough after the kill
                timed_out = True
                kill(process.pid)
                deadline = time.monotonic() + DRAIN_AFTER_KILL_SEC
                continue
            for key, _ in selector.select(wait):
                chunk = os.read(key.fileobj.fileno(), READ_CHUNK)  # type: ignore[union-attr]
                if chunk:
                    streams[key.fileobj].add(chunk)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
    finally:
        selector.close()
        for stream in streams:
            stream.close()  # type: ignore[union-attr]
    # Its pipes are closed, but it may still run (it closed them itself): the deadline holds.
    remaining = DRAIN_AFTER_KILL_SEC if timed_out or deadline is None else max(deadline - time.monotonic(), 0.0)
    try:
        process.wait(timeout=None if deadline is None and not timed_out else remaining)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill(process.pid)
        process.wait()
    out = streams[process.stdout].value()
    err = streams[process.stderr].value() if process.stderr else b""
    return out, err, timed_out, sum(stream.dropped for stream in streams.values())

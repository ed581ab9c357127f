"""The task's `[environment] storage_mb`, watched while the agent runs (docs/faults.md, "Disk").

A backend gives each environment a `DiskMeter`: how many bytes the agent's environment has
written so far (a docker container's writable layer and scratch tmpfs, a local workspace),
how that is measured, and how to stop the agent's processes. `DiskWatcher` reads the meter in
a thread of its own while the agent runs; the first reading at or past the limit stops the
agent's processes at once and ends its run as `disk_limit` (the agent's failure, never an
infrastructure error), with the figures in the message.

The interval follows the meter's own cost: it is `MIN_INTERVAL_SEC`, or longer when one
reading costs more than `MAX_SHARE` of the interval (a writable layer of many thousand files),
so the watcher never takes more than that share of one core. A writer can overshoot the limit
by what it writes in one interval plus one reading plus the stop (docs/faults.md gives the
figures measured).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MIB = 1024 * 1024
# The shortest pause between two readings, and the largest share of one core the readings take.
MIN_INTERVAL_SEC = 0.25
MAX_SHARE = 0.05

# How a backend enforces the limit (the record's `disk_limit.enforcement`).
WATCHED = "watched"  # read while the agent runs, the agent stopped when it passes
ENGINE_QUOTA = "storage_opt"  # the engine bounds the writable layer itself (and it is watched too)
NOT_ENFORCED = "not_enforced"


@dataclass(frozen=True)
class DiskMeter:
    """How one environment's written bytes are read, and how its agent is stopped."""

    measure: Callable[[], int]  # bytes written so far; raises OSError when it cannot tell
    stop_agent: Callable[[], None]  # kills the agent's processes (what it runs keeps writing otherwise)
    how: str  # for the record: what is measured, and by what means
    enforcement: str = WATCHED


def limit_bytes(storage_mb: int) -> int:
    return storage_mb * MIB


def format_size(count: int) -> str:
    """Bytes as a person reads them: `2.3 GiB`, `70.0 MiB`, `512 KiB`."""
    if count >= 1024 * MIB:
        return f"{count / (1024 * MIB):.1f} GiB"
    if count >= MIB:
        return f"{count / MIB:.1f} MiB"
    return f"{count // 1024} KiB"


def limit_message(used: int, storage_mb: int, where: str) -> str:
    return (f"disk limit: {where} wrote {format_size(used)}, limit {storage_mb} MiB "
            "([environment] storage_mb); the agent was stopped")


def tree_bytes(roots: Iterable[str]) -> int:
    """The disk space the files below `roots` take (allocated blocks, each inode once: a hard
    link is not counted twice); a root that does not exist counts 0. Symlinks are not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [root for root in roots if os.path.lexists(root)]
    while stack:
        directory = stack.pop()
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):  # removed meanwhile
            continue
        with entries:
            for entry in entries:
                try:
                    stat = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                except FileNotFoundError:
                    continue
                key = (stat.st_dev, stat.st_ino)
                if stat.st_nlink > 1:
                    if key in seen:
                        continue
                    seen.add(key)
                total += stat.st_blocks * 512
    return total


def filesystem_used(path: str) -> int:
    """Bytes in use on the file system at `path` (a tmpfs of its own: what was written to it)."""
    stat = os.statvfs(path)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


@dataclass(frozen=True)
class DiskReport:
    """What the watcher saw, for the record."""

    storage_mb: int
    enforcement: str
    how: str
    peak_bytes: int | None  # the largest reading (None: never read)
    readings: int
    interval_sec: float | None  # the longest interval used
    exceeded: bool
    error: str | None = None  # why the meter could not read (the limit then went unwatched)


class DiskWatcher:
    """Reads a meter in a thread while the agent runs; see the module docstring."""

    def __init__(self, meter: DiskMeter, storage_mb: int, on_exceeded: Callable[[str], None], *,
                 min_interval_sec: float = MIN_INTERVAL_SEC, where: str = "the agent's environment") -> None:
        self.meter = meter
        self.storage_mb = storage_mb
        self.limit = limit_bytes(storage_mb)
        self.on_exceeded = on_exceeded
        self.min_interval_sec = min_interval_sec
        self.where = where
        self.peak: int | None = None
        self.readings = 0
        self.longest_interval: float | None = None
        self.message: str | None = None  # set when the limit was passed
        self.error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="swe-residual disk watcher", daemon=True)

    @property
    def exceeded(self) -> bool:
        return self.message is not None

    def start(self) -> DiskWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching, then read once more: a writer that finished within the last interval
        is judged too."""
        self.halt()
        self.check()

    def halt(self) -> None:
        """Stop watching without a last reading (the attempt ended otherwise)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def check(self) -> bool:
        """One reading; True when the limit is passed (the agent is then stopped, once)."""
        with self._lock:
            if self.exceeded or self.error is not None:
                return self.exceeded
            try:
                used = self.meter.measure()
            except OSError as exc:  # the meter lost its view (the container is gone): say so
                self.error = f"the disk meter could not read: {exc}"
                return False
            self.readings += 1
            self.peak = used if self.peak is None else max(self.peak, used)
            if used < self.limit:
                return False
            self.message = limit_message(used, self.storage_mb, self.where)
        # The session first, so the command the kill ends returns into a stopped session.
        self.on_exceeded(self.message)
        self.meter.stop_agent()
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            if self.check() or self.error is not None:
                return
            cost = time.monotonic() - started
            interval = max(self.min_interval_sec, cost / MAX_SHARE)
            self.longest_interval = max(self.longest_interval or 0.0, interval)
            self._stop.wait(max(interval - cost, 0.0))

    def report(self) -> DiskReport:
        return DiskReport(self.storage_mb, self.meter.enforcement, self.meter.how, self.peak, self.readings,
                          self.longest_interval, self.exceeded, self.error)


def not_enforced(storage_mb: int, why: str) -> DiskReport:
    return DiskReport(storage_mb, NOT_ENFORCED, why, None, 0, None, False)

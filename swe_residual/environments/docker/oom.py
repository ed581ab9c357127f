"""Whose out-of-memory kill it was: the task's memory limit (the agent's) or the host's (issue 48).

A task's `memory_mb` is the agent's budget, like its time and its disk: the container's memory
cgroup is bounded by it, and when what runs inside passes it the kernel kills a process of the
container, whichever scores highest (the agent can make that the container's PID 1 by raising
its `oom_score_adj`, which needs no privilege; the container then stops). That is the agent's
failure. Only the host running out of memory itself, or a limit above the container's (an
ancestor cgroup), is a kill from outside: infrastructure.

The kernel says which it was, in its log, for every kill:

    oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/docker/<id>,task_memcg=/docker/<id>,task=sh,pid=22810,uid=0
    Memory cgroup out of memory: Killed process 22810 (sh) total-vm:2592kB, ... oom_score_adj:1000

`oom_memcg` is the cgroup whose limit was reached: the container's own (its id is the last part
of the path) makes it the agent's; `constraint=CONSTRAINT_NONE` ("Out of memory: Killed
process", the whole host) or an ancestor's limit makes it the host's. The log is read from
`/dev/kmsg` when this process runs on the engine's host as root; elsewhere (a remote engine) it
cannot be read, and the engine's own evidence (an `oom` event, `OOMKilled`) in a container with a
memory limit stands for the limit: nothing shows the host did it.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

KMSG = "/dev/kmsg"
MEMCG = "CONSTRAINT_MEMCG"
# How much of the kernel's log is read at most (its ring buffer is far smaller on any host).
_MAX_RECORDS = 200_000

_SUMMARY = re.compile(r"oom-kill:(?P<fields>\S+)")
_KILLED = re.compile(r"(?P<scope>Memory cgroup out of memory|Out of memory[^:]*): Killed process (?P<pid>\d+) "
                     r"\((?P<name>[^)]*)\)(?P<rest>.*)")
_SCORE_ADJ = re.compile(r"oom_score_adj:(-?\d+)")


@dataclass(frozen=True)
class OomKill:
    """One kill of the kernel's out-of-memory killer, as its log gives it."""

    constraint: str  # CONSTRAINT_MEMCG (a cgroup's limit), CONSTRAINT_NONE (the host), ...
    oom_memcg: str  # the cgroup whose limit was reached ("" for the whole host)
    task_memcg: str  # the killed process's cgroup
    task: str  # the killed process's name
    pid: int  # its pid on the host
    score_adj: int | None = None  # its oom_score_adj
    line: str = ""  # the kernel's "Killed process" line

    def in_container(self, container_id: str) -> bool:
        return _names(self.task_memcg, container_id)

    def by_container_limit(self, container_id: str) -> bool:
        """Whether the limit reached was the container's own (its memory_mb)."""
        return self.constraint == MEMCG and _names(self.oom_memcg, container_id)

    def describe(self) -> str:
        adj = f", oom_score_adj {self.score_adj}" if self.score_adj is not None else ""
        limit = f"the limit of cgroup {self.oom_memcg}" if self.constraint == MEMCG else \
            f"{self.constraint} (the host's own memory)" if self.constraint == "CONSTRAINT_NONE" else self.constraint
        return f"the kernel killed {self.task} (pid {self.pid} on the host{adj}): {limit}"


@dataclass(frozen=True)
class MemoryAccount:
    """What the record says of a run that reached its memory limit: the limit, what the kernel
    killed (name, host pid, oom_score_adj), the engine's evidence; `message` says it in words."""

    memory_mb: int | None
    killed: tuple[str, ...]
    evidence: tuple[str, ...]
    message: str


def killed_names(kills: Iterable[OomKill]) -> tuple[str, ...]:
    return tuple(f"{kill.task} (pid {kill.pid}, oom_score_adj {kill.score_adj})" for kill in kills)


def _names(cgroup: str, container_id: str) -> bool:
    """Whether a cgroup path is the container's own: its last part holds the container's id
    (`/docker/<id>`, `/system.slice/docker-<id>.scope`)."""
    return bool(container_id) and container_id in cgroup.rstrip("/").rsplit("/", 1)[-1]


def parse_kills(messages: Iterable[str]) -> list[OomKill]:
    """The out-of-memory kills in the kernel's log messages, in order."""
    kills: list[OomKill] = []
    pending: dict[str, str] | None = None
    for message in messages:
        summary = _SUMMARY.search(message)
        if summary:
            pending = dict(part.split("=", 1) for part in summary.group("fields").split(",") if "=" in part)
            continue
        killed = _KILLED.search(message)
        if killed is None or pending is None or pending.get("pid") != killed.group("pid"):
            continue
        score = _SCORE_ADJ.search(killed.group("rest"))
        kills.append(OomKill(constraint=pending.get("constraint", ""), oom_memcg=pending.get("oom_memcg", ""),
                             task_memcg=pending.get("task_memcg", ""), task=killed.group("name"),
                             pid=int(killed.group("pid")), score_adj=int(score.group(1)) if score else None,
                             line=message.strip()))
        pending = None
    return kills


def kernel_messages(path: str = KMSG) -> list[str] | None:
    """The kernel's log as it holds it now, one message per record; None when it cannot be read
    (not root, not the engine's host, no such device)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    messages: list[str] = []
    try:
        for _ in range(_MAX_RECORDS):
            try:
                record = os.read(handle, 8192)
            except BlockingIOError:
                break  # every record read
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue  # records overwritten while reading: go on with the next
                if exc.errno == errno.EINVAL and not messages:
                    return None  # not a kmsg device
                break
            if not record:
                break
            # "priority,sequence,microseconds,flags;message\n" then " KEY=value" continuation lines.
            head, _, body = record.decode("utf-8", errors="replace").partition(";")
            messages.append(body.split("\n", 1)[0] if body else head)
    finally:
        os.close(handle)
    return messages


def container_kills(container_id: str, messages: list[str] | None = None) -> list[OomKill] | None:
    """The kernel's out-of-memory kills of the container's processes; None when the kernel's log
    cannot be read here."""
    if messages is None:
        messages = kernel_messages()
    if messages is None:
        return None
    return [kill for kill in parse_kills(messages) if kill.in_container(container_id)]

"""Why a container stopped, in the engine's own words, and whose failure that is (issue 33).

Nothing inside a container of the suite can stop it (its PID 1, idle.py). When one stopped
anyway, the engine says who did, and the error carries that evidence:

- the container is gone (removed), its state holds an engine error, or the engine was asked
  to kill it (a `kill` event, with its signal: `docker kill` or `docker stop` on the host, the
  suite itself): infrastructure, `InfraError`, retried from a fresh instance;
- it ran out of memory (an `oom` event, `OOMKilled`, the kernel's log): the kernel's log says
  whose limit was reached (oom.py). The container's own, its task's `memory_mb`, is the
  agent's budget: `MemoryLimitReached`, the agent's failure (termination `memory_limit`); the
  host's own memory or a limit above the container's is infrastructure, with the kernel's line;
- the engine's events reach back to the container's death (its `die` event) and hold none of
  these: `EnvironmentLostByAgent`, which the runner counts as the agent's failure when it is
  the agent's own container;
- the engine keeps only its last events (256 on Docker 20.10): when they no longer reach back
  to the death, nobody can tell, and it stays infrastructure.

Only the events since the container's last start count: the suite restarts a container to
stop what the agent left running (harness_tools.py), and that restart's own `kill` is no
evidence about a later death.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import docker

from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, infra_error, inspect_container
from swe_residual.environments.docker.oom import MemoryAccount, OomKill, container_kills, killed_names
from swe_residual.dataset.errors import EnvironmentLostByAgent, InfraError, MemoryLimitReached

# How far past the container's recorded end its events are read: a `die` event is written a
# moment after `FinishedAt`.
EVENTS_AFTER_END_SEC = 1.0
# Event actions that say something from outside stopped the container.
_KILL, _OOM, _DIE, _START = "kill", "oom", "die", "start"


@dataclass(frozen=True)
class EngineEvent:
    """One of the engine's events about the container."""

    action: str
    time_nano: int
    signal: str | None = None  # of a `kill` event

    def describe(self) -> str:
        signal = f" (signal {self.signal})" if self.signal else ""
        return f"engine event: {self.action}{signal} at {_iso(self.time_nano)}"


@dataclass(frozen=True)
class StopEvidence:
    """What the engine knows of a stopped container: its final state and its events since its
    last start (`events` is None when they could not be read)."""

    exit_code: int | None
    oom_killed: bool
    error: str
    finished_at: str
    events: tuple[EngineEvent, ...] | None
    memory_bytes: int = 0  # the container's memory limit (0: none)

    @property
    def death_seen(self) -> bool:
        """Whether the events reach back to the container's death (its `die` event)."""
        return self.events is not None and any(event.action == _DIE for event in self.events)

    def outside_causes(self) -> list[str]:
        """Evidence that the engine or the host stopped it (a kill request, an engine error), one
        line each. Running out of memory is not in it: see `memory_causes`."""
        causes = [event.describe() for event in self.events or () if event.action == _KILL]
        if self.error:
            causes.append(f"the engine's state: error {self.error!r}")
        return causes

    def memory_causes(self) -> list[str]:
        """The engine's evidence that the container ran out of memory, one line each."""
        causes = [event.describe() for event in self.events or () if event.action == _OOM]
        if self.oom_killed:
            causes.append("the engine's state: OOMKilled")
        return causes

    def describe_end(self) -> str:
        return f"exit code {self.exit_code} at {self.finished_at}"


def lost_container_error(client: docker.DockerClient, container_id: str, what: str, detail: str = "") -> InfraError:
    """The error for `what` failing on a container that is not running, with the evidence of why.

    An `EnvironmentLostByAgent` when the engine's record, which reaches back to the container's
    death, holds no cause from outside it; an `InfraError` saying the cause (or that none can be
    told) otherwise. `detail` is the engine's own failure, when there was one."""
    prefix = f"docker {what} failed, container {container_id[:12]} is lost (not running)"
    suffix = f"; {detail}" if detail else ""
    try:
        evidence = stop_evidence(client, container_id)
    except InfraError as exc:  # the engine does not answer: that alone is infrastructure
        return InfraError(f"{prefix}: {exc}{suffix}")
    if evidence is None:
        return InfraError(f"{prefix}: the engine no longer has it (removed from outside){suffix}")
    causes = evidence.outside_causes()
    if causes:
        return InfraError(f"{prefix}: {'; '.join(causes)}; {evidence.describe_end()}{suffix}")
    memory = out_of_memory(evidence, container_id, prefix, suffix)
    if memory is not None:
        return memory
    if not evidence.death_seen:
        unread = "could not be read" if evidence.events is None else "no longer reach back to its end"
        return InfraError(f"{prefix}: {evidence.describe_end()}; the engine's events {unread}, "
                          f"so no cause can be told{suffix}")
    return EnvironmentLostByAgent(
        "the container stopped with no cause from outside it (no kill request, no out-of-memory kill, no engine "
        f"error in the engine's record): what ran inside stopped it; container {container_id[:12]}, "
        f"{evidence.describe_end()}",
        environment_id=container_id,
    )


def out_of_memory(evidence: StopEvidence, container_id: str, prefix: str, suffix: str = "",
                  kills: list[OomKill] | None = None) -> InfraError | None:
    """Whose failure a container that stopped out of memory is (oom.py); None when nothing says
    it ran out of memory. `kills`: the kernel's kills of the container (read here when None)."""
    if kills is None:
        kills = container_kills(container_id)
    engine = evidence.memory_causes()
    if not kills and not engine:
        return None
    limit_mb = evidence.memory_bytes / (1024 * 1024)
    limit = f"{limit_mb:g} MiB" if evidence.memory_bytes else "none"
    end = f"{evidence.describe_end()}; the container's memory limit: {limit}"
    said = "; ".join([*(kill.describe() for kill in kills or ()), *engine])
    # The kill that stopped the container is the last one: its init's, when the agent made it the target.
    last = kills[-1] if kills else None
    if last is not None and not last.by_container_limit(container_id):
        return InfraError(f"{prefix}: out of memory outside the container's limit (the host's): {said}; {end}{suffix}")
    if last is None and not evidence.memory_bytes:
        # No limit of the container's: whatever ran out of memory was the host's.
        return InfraError(f"{prefix}: out of memory with no memory limit on the container (the host's): "
                          f"{said}; {end}{suffix}")
    unread = "" if last is not None else "; the host's kernel log cannot be read here or holds no record of it, " \
        "and nothing shows the host ran out of memory"
    return MemoryLimitReached(
        f"out of memory: the agent's container reached its memory limit of {limit} ([environment] memory_mb) and "
        f"stopped: {said}{unread}; container {container_id[:12]}, {evidence.describe_end()}",
        environment_id=container_id, memory_mb=round(limit_mb) if evidence.memory_bytes else None,
        killed=killed_names(kills or ()), evidence=tuple(engine),
    )


def memory_kills(client: docker.DockerClient, container_id: str) -> MemoryAccount | None:
    """While the container runs: the kernel's out-of-memory kills within its own memory limit
    (the agent's processes killed at its budget); None when there were none, or the container
    has no limit. Without the kernel's log, the engine's `oom` events since its start."""
    found = inspect_container(client, container_id)
    memory = int(((found or {}).get("HostConfig") or {}).get("Memory") or 0)
    if not memory:
        return None
    kills = container_kills(container_id)
    own: list[OomKill] = []
    engine: list[str] = []
    if kills is not None:
        own = [kill for kill in kills if kill.by_container_limit(container_id)]
        described = [kill.describe() for kill in own]
    else:
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        events = _events_since_last_start(client, container_id, str((found or {}).get("Created") or ""), now)
        engine = described = [event.describe() for event in events or () if event.action == _OOM]
    if not described:
        return None
    limit_mb = memory / (1024 * 1024)
    return MemoryAccount(round(limit_mb), killed_names(own), tuple(engine),
                         f"out of memory: processes of the agent's container reached its memory limit of "
                         f"{limit_mb:g} MiB ([environment] memory_mb): {'; '.join(described)}")


def stop_evidence(client: docker.DockerClient, container_id: str) -> StopEvidence | None:
    """The engine's evidence about a container that stopped; None when it no longer exists."""
    found = inspect_container(client, container_id)
    if found is None:
        return None
    state = found.get("State") or {}
    finished_at = str(state.get("FinishedAt") or "")
    return StopEvidence(
        exit_code=state.get("ExitCode"), oom_killed=bool(state.get("OOMKilled")),
        error=str(state.get("Error") or ""), finished_at=finished_at,
        events=_events_since_last_start(client, container_id, str(found.get("Created") or ""), finished_at),
        memory_bytes=int((found.get("HostConfig") or {}).get("Memory") or 0),
    )


def _events_since_last_start(client: docker.DockerClient, container_id: str, created: str,
                             finished_at: str) -> tuple[EngineEvent, ...] | None:
    """The container's events from its creation to just after its end, keeping those after its
    last `start`; None when the engine cannot give them."""
    begin, end = _parse(created), _parse(finished_at)
    if begin is None or end is None:
        return None
    until = end + timedelta(seconds=EVENTS_AFTER_END_SEC)
    try:
        # Unix time stamps (the engine reads an RFC 3339 `since` with nanoseconds as nothing);
        # `until` bounds the stream: the engine sends what it kept up to then and closes it.
        raw = list(client.api.events(since=f"{begin.timestamp() - 1:.6f}", until=f"{until.timestamp():.6f}",
                                     filters={"container": container_id}, decode=True))
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, f"reading the engine's events of container {container_id[:12]}") from exc
    events = [_event(entry) for entry in raw if entry.get("Type", "container") == "container"]
    starts = [index for index, event in enumerate(events) if event.action == _START]
    return tuple(events[starts[-1] + 1:] if starts else events)


def _event(entry: dict[str, Any]) -> EngineEvent:
    attributes = (entry.get("Actor") or {}).get("Attributes") or {}
    action = str(entry.get("Action") or entry.get("status") or "")
    time_nano = int(entry.get("timeNano") or int(entry.get("time") or 0) * 1_000_000_000)
    return EngineEvent(action.split(":", 1)[0], time_nano, attributes.get("signal") if action == _KILL else None)


def _parse(stamp: str) -> datetime | None:
    """An engine time stamp (RFC 3339, nanoseconds) as a datetime; None for the zero time."""
    if not stamp or stamp.startswith("0001-"):
        return None
    head, _, rest = stamp.rstrip("Z").partition(".")
    fraction = "".join(ch for ch in rest if ch.isdigit())[:6]
    try:
        parsed = datetime.fromisoformat(f"{head}.{fraction or '0'}")
    except ValueError:
        return None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


def _iso(time_nano: int) -> str:
    seconds, nanos = divmod(time_nano, 1_000_000_000)
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"

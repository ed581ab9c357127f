"""Whose out-of-memory kill it was, from the kernel's log and the engine's evidence (issue 48).

The agent's side is caused for real in tests/environments/test_resource_attacks_docker.py. The
host's side (the whole host out of memory, or a limit above the container's) cannot be caused on a
shared machine without endangering it, so its kernel lines are written here as the kernel writes
them (copied from this machine's log of a real container's kill, the constraint and cgroup changed).
"""

from __future__ import annotations

import pytest

from swe_residual.dataset.errors import EnvironmentLostByAgent, MemoryLimitReached
from swe_residual.environments.docker.lost import EngineEvent, StopEvidence, out_of_memory
from swe_residual.environments.docker.oom import container_kills, kernel_messages, parse_kills

pytestmark = pytest.mark.unit

ID = "948493d028f021ae0e2e6569f25ff35de67b0103e2cbeaa8824675b9c7931f00"
OTHER = "3d54d9f0044b6bb9c41fe37fb5fb59c348c0c667ae1f7936c409167bf428a33d"


def _summary(constraint: str, oom_memcg: str, task: str = "sh", pid: int = 22810, container: str = ID) -> str:
    return (f"oom-kill:constraint={constraint},nodemask=(null),cpuset={container},mems_allowed=0,"
            f"oom_memcg={oom_memcg},task_memcg=/docker/{container},task={task},pid={pid},uid=0")


def _killed(scope: str, task: str = "sh", pid: int = 22810, adj: int = 1000) -> str:
    return (f"{scope}: Killed process {pid} ({task}) total-vm:2592kB, anon-rss:0kB, file-rss:76kB, "
            f"shmem-rss:0kB, UID:0 pgtables:48kB oom_score_adj:{adj}")


OWN_LIMIT = [_summary("CONSTRAINT_MEMCG", f"/docker/{ID}"), _killed("Memory cgroup out of memory")]
HOST_OOM = [_summary("CONSTRAINT_NONE", "/"), _killed("Out of memory")]
PARENT_LIMIT = [_summary("CONSTRAINT_MEMCG", "/docker"), _killed("Memory cgroup out of memory")]


def _evidence(*, oom: bool = True, memory_mb: int = 128) -> StopEvidence:
    events = (EngineEvent("oom", 1_780_000_000_000_000_000), EngineEvent("die", 1_780_000_000_100_000_000)) if oom \
        else (EngineEvent("die", 1_780_000_000_100_000_000),)
    return StopEvidence(exit_code=137, oom_killed=oom, error="", finished_at="2026-12-06T05:03:42.330800679Z",
                        events=events, memory_bytes=memory_mb * 1024 * 1024)


def test_the_kernels_lines_give_the_kill_and_whose_limit_it_was() -> None:
    noise = ["docker0: port 1(veth) entered disabled state", _killed("Out of memory", pid=9)]  # no summary: not paired
    (kill,) = parse_kills([*noise, *OWN_LIMIT])
    assert (kill.task, kill.pid, kill.score_adj) == ("sh", 22810, 1000)
    assert kill.in_container(ID) and kill.by_container_limit(ID) and not kill.in_container(OTHER)
    (host,) = parse_kills(HOST_OOM)
    assert host.in_container(ID) and not host.by_container_limit(ID)
    assert not parse_kills(PARENT_LIMIT)[0].by_container_limit(ID)
    assert container_kills(OTHER, [*OWN_LIMIT, *HOST_OOM]) == []
    # The systemd cgroup driver's name for the container's cgroup holds its id too.
    systemd = [_summary("CONSTRAINT_MEMCG", f"/system.slice/docker-{ID}.scope"), _killed("Memory cgroup out of memory")]
    assert parse_kills(systemd)[0].by_container_limit(ID)
    assert not parse_kills([_summary("CONSTRAINT_MEMCG", "/system.slice"), _killed("Memory cgroup out of memory")]
                           )[0].by_container_limit(ID)


def test_the_containers_own_limit_is_the_agents_memory_limit() -> None:
    lost = out_of_memory(_evidence(), ID, "lost", kills=container_kills(ID, OWN_LIMIT))
    assert isinstance(lost, MemoryLimitReached) and isinstance(lost, EnvironmentLostByAgent)
    assert lost.environment_id == ID and lost.memory_mb == 128
    assert lost.killed == ("sh (pid 22810, oom_score_adj 1000)",)
    assert lost.evidence[0].startswith("engine event: oom at ") and lost.evidence[1] == "the engine's state: OOMKilled"
    text = str(lost)
    assert "reached its memory limit of 128 MiB ([environment] memory_mb)" in text and "exit code 137" in text


@pytest.mark.parametrize("lines", [HOST_OOM, PARENT_LIMIT], ids=["host", "parent-cgroup"])
def test_a_kill_outside_the_containers_limit_is_the_hosts(lines: list[str]) -> None:
    # On cgroup v1 the engine records no `oom` for the host's own kill: the kernel's line alone says so.
    for evidence in (_evidence(), _evidence(oom=False)):
        lost = out_of_memory(evidence, ID, "docker exec failed", kills=container_kills(ID, lines))
        assert lost is not None and not isinstance(lost, EnvironmentLostByAgent)
        assert "out of memory outside the container's limit (the host's)" in str(lost) and "the kernel killed sh" in str(lost)


def test_without_the_kernels_log_the_engines_evidence_stands_for_the_limit() -> None:
    lost = out_of_memory(_evidence(), ID, "lost", kills=None if kernel_messages("/nonexistent") else [])
    assert isinstance(lost, MemoryLimitReached) and "cannot be read here or holds no record of it" in str(lost)
    # A container without a memory limit has no budget to exceed: the host's memory.
    unlimited = out_of_memory(_evidence(memory_mb=0), ID, "lost", kills=[])
    assert unlimited is not None and not isinstance(unlimited, EnvironmentLostByAgent)
    assert "no memory limit on the container" in str(unlimited)
    # Nothing about memory at all: not this module's to say.
    assert out_of_memory(_evidence(oom=False), ID, "lost", kills=[]) is None

"""How every container of the docker backend is made: the suite's security options, the task's
limits, the harness's scratch tmpfs, and a PID 1 that idles (idle.py) while everything runs
through exec. The backend creates and starts them (backend.py); this module says what they are.
"""

from __future__ import annotations

from pathlib import Path

import docker

from swe_residual.environments.agent_environment import AgentMount
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, infra_error, remove_containers
from swe_residual.environments.docker.idle import ENTRYPOINT

DEFAULT_PIDS_LIMIT = 4096
# Capabilities an agent plausibly needs as root in its container (file ownership, package
# installs, dropping privileges to a user, killing its own processes, binding low ports), and
# chroot, which published tasks' own tests use (Terminal-Bench 2's path-tracing-reverse runs its
# program under `chroot`: without it the oracle fails there where Harbor's run passes, 3/3).
# Everything else Docker grants by default (raw sockets, mknod, setfcap, audit) is dropped.
KEPT_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE",
                     "SYS_CHROOT")
# The harness's scratch space: a fresh tmpfs, so it is never part of a snapshot (exec allowed:
# agents run scripts from it).
SCRATCH_DIR = "/tmp/swe-residual"
SCRATCH_TMPFS = "rw,exec,nosuid,nodev,mode=1777"
# Where a container with a network finds the machine's CA bundle (environments/machine_trust.py):
# on the scratch tmpfs, so that its mount point is never in a commit or a container's diff.
TRUST_BUNDLE = f"{SCRATCH_DIR}/machine-trust/ca-certificates.crt"


def create_container(
    client: docker.DockerClient, image: str, *, name: str, workdir: str, labels: dict[str, str],
    env: dict[str, str], network: str, pids_limit: int, cpus: float | None, memory_mb: int | None,
    storage_mb: int | None, quota: bool, mounts: tuple[AgentMount, ...] | None, ca_bundle: Path | None = None,
) -> str:
    """Create a container of `image` (not started yet); returns its id.

    `env` is its environment variables; `storage_mb` sizes the scratch tmpfs, and with `quota` the engine bounds the writable layer
    too (disk.py); `mounts` are the agent's own tools, given to its containers only (None: no
    binds at all); `ca_bundle`, a file of this machine, is mounted read-only at TRUST_BUNDLE. A
    container the engine half made is removed before the error is raised.
    """
    # HOST:CONTAINER:MODE strings: one host path may be mounted twice.
    binds = [f"{mount.host}:{mount.container}:{'ro' if mount.read_only else 'rw'}" for mount in mounts or ()]
    if ca_bundle is not None:
        binds.append(f"{ca_bundle}:{TRUST_BUNDLE}:ro")
    host_config = client.api.create_host_config(
        network_mode=network, pids_limit=pids_limit, cap_drop=["ALL"],
        cap_add=list(KEPT_CAPABILITIES), security_opt=["no-new-privileges"], privileged=False,
        tmpfs={SCRATCH_DIR: SCRATCH_TMPFS + (f",size={storage_mb}m" if storage_mb else "")},
        storage_opt={"size": f"{storage_mb}m"} if quota else None,
        nano_cpus=int(cpus * 1e9) if cpus else None,
        # Swap equal to memory: no swap, so the limit is a limit.
        mem_limit=f"{memory_mb}m" if memory_mb else None, memswap_limit=f"{memory_mb}m" if memory_mb else None,
        binds=binds or None,
    )
    try:
        # An explicit entrypoint: the container idles and everything runs through exec.
        created = client.api.create_container(
            image, command=[], entrypoint=ENTRYPOINT, name=name, working_dir=workdir,
            labels=labels, environment=env, host_config=host_config,
        )
    except ENGINE_EXCEPTIONS as exc:
        remove_containers(client, [name])  # whatever of it the engine made
        raise infra_error(exc, f"could not start a container of {image[:40]}") from exc
    container_id: str = created["Id"]
    return container_id

"""`[environment] storage_mb` on the docker backend (docs/faults.md, "Disk").

Two bounds, each by the means the engine has:

- The scratch tmpfs (`SCRATCH_DIR`) is sized to the limit: the kernel refuses writes past it.
- The container's writable layer: `--storage-opt size=` when the engine supports it (overlay2
  on xfs with pquota, btrfs, zfs; asked once per engine by creating a container that is never
  started, `storage_opt_support`), and in every case watched while the agent runs
  (swe_residual/environments/disk_usage.py). On fuse-overlayfs (and most engines) the engine
  refuses the option, so the watch is what enforces it.

The meter reads the container from the engine's host when it can (the engine is local and its
directories readable): the upper directory of the writable layer (`GraphDriver.Data.UpperDir`)
and the image's anonymous volumes are walked, and the tmpfs is read with one statvfs through
`/proc/<pid>/root`. That costs well under a millisecond for a few hundred files. Otherwise
(a remote engine) it asks the engine for the writable layer's size (`SizeRw`, which the
engine computes by walking the whole root file system: seconds) and reads the tmpfs with
`stat -f` in the container; the watcher's interval grows with that cost.
"""

from __future__ import annotations

import os
import secrets
import threading
from typing import Any

import docker

from swe_residual.environments.disk_usage import ENGINE_QUOTA, WATCHED, DiskMeter, filesystem_used, tree_bytes
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, inspect_container, remove_containers
from swe_residual.environments.docker.exec import EXEC_MARK

# Kills every process started by an exec of the harness (each carries EXEC_MARK): the agent's
# commands and what they left running. The container's init and idle command carry no mark;
# nor does this script, run by a bare exec.
_KILL_ALL_MARKED = (
    'for d in /proc/[0-9]*; do '
    f'tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -q "^{EXEC_MARK}=" && kill -9 "${{d#/proc/}}" 2>/dev/null; '
    'done; exit 0'
)
_STATFS = ["stat", "-f", "-c", "%b %f %S"]

_support: dict[str, tuple[bool, str]] = {}  # engine (its URL) -> (whether storage_opt works, the engine's answer)
_support_lock = threading.Lock()


def storage_opt_support(client: docker.DockerClient, image: str, labels: dict[str, str]) -> tuple[bool, str]:
    """Whether this engine bounds a container's writable layer with `storage_opt size`, and its
    answer: asked once per engine (per process) by creating a container of `image` with the
    option, never started, then removed."""
    engine = str(client.api.base_url)
    with _support_lock:
        if engine in _support:
            return _support[engine]
        name = f"swe-residual-storage-probe-{secrets.token_hex(4)}"
        try:
            client.api.create_container(image, command=["true"], name=name, labels=labels,
                                        host_config=client.api.create_host_config(storage_opt={"size": "64m"}))
            answer = (True, "the engine accepts storage_opt size")
        except docker.errors.APIError as exc:
            answer = (False, str(exc.explanation or exc))
        finally:
            remove_containers(client, [name])
        _support[engine] = answer
        return answer


def container_meter(client: docker.DockerClient, container_id: str, *, scratch_dir: str, storage_quota: bool,
                    storage_mb: int) -> DiskMeter | str:
    """The meter of one container's writes (see the module docstring), or why there is none;
    `storage_quota`: the engine bounds its writable layer too."""
    info = inspect_container(client, container_id)
    if info is None:
        return "the container was gone before the agent started"
    enforcement = ENGINE_QUOTA if storage_quota else WATCHED
    quota = "; the engine bounds the writable layer too (storage_opt size)" if storage_quota else ""

    def stop_agent() -> None:
        kill_agent_processes(client, container_id)

    host = _host_view(info, container_id, scratch_dir)
    if host is not None:
        roots, scratch, scratch_device = host

        def measure_on_host() -> int:
            if os.stat(scratch).st_dev != scratch_device:  # the container's process is gone: its pid is another's
                raise OSError(f"{scratch} is no longer the container's scratch")
            return tree_bytes(roots) + filesystem_used(scratch)

        return DiskMeter(measure_on_host, stop_agent,
                         "the writable layer's upper directory and the image's volumes walked on the engine's host, "
                         f"plus the scratch tmpfs (sized {storage_mb} MiB) by statvfs" + quota, enforcement)

    def measure_by_engine() -> int:
        try:
            listed = client.api.containers(all=True, size=True, filters={"id": container_id})
            layer = int(listed[0].get("SizeRw") or 0) if listed else 0
            return layer + _scratch_used_inside(client, container_id, scratch_dir)
        except ENGINE_EXCEPTIONS as exc:
            raise OSError(f"the engine did not tell the container's size: {exc}") from exc

    return DiskMeter(measure_by_engine, stop_agent,
                     "the engine's SizeRw of the writable layer (its host's directories are not readable here), "
                     f"plus the scratch tmpfs (sized {storage_mb} MiB) by stat -f in the container" + quota,
                     enforcement)


def _host_view(info: dict[str, Any], container_id: str, scratch_dir: str) -> tuple[list[str], str, int] | None:
    """(directories to walk, the scratch seen from the host, its device) when this process sees
    the engine's host: the upper directory is readable and the container's pid is this
    container's (its cgroup names it); else None."""
    upper = ((info.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir")
    pid = (info.get("State") or {}).get("Pid")
    if not upper or not pid or not os.access(upper, os.R_OK | os.X_OK):
        return None
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as cgroup:
            if container_id not in cgroup.read():
                return None
        scratch = f"/proc/{pid}/root{scratch_dir}"
        device = os.stat(scratch).st_dev
    except OSError:
        return None
    volumes = [mount["Source"] for mount in info.get("Mounts") or []
               if mount.get("Type") == "volume" and mount.get("RW") and mount.get("Source")]
    if not all(os.access(volume, os.R_OK | os.X_OK) for volume in volumes):
        return None
    return [upper, *volumes], scratch, device


def _scratch_used_inside(client: docker.DockerClient, container_id: str, scratch_dir: str) -> int:
    """The scratch tmpfs's use read by `stat -f` in the container (a remote engine); 0 when it
    cannot run (the tmpfs is sized to the limit anyway)."""
    exec_id = client.api.exec_create(container_id, [*_STATFS, scratch_dir])["Id"]
    output = client.api.exec_start(exec_id).decode(errors="replace").split()
    if len(output) != 3 or not all(part.isdigit() for part in output):
        return 0
    blocks, free, size = (int(part) for part in output)
    return (blocks - free) * size


def kill_agent_processes(client: docker.DockerClient, container_id: str) -> None:
    """SIGKILL every process an exec started in the container (see `_KILL_ALL_MARKED`)."""
    try:
        exec_id = client.api.exec_create(container_id, ["sh", "-c", _KILL_ALL_MARKED])["Id"]
        client.api.exec_start(exec_id)
    except ENGINE_EXCEPTIONS:
        pass  # no process can start (the pids limit) or the container is gone: the runner's stop follows

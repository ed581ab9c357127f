"""One container: the agent's commands, file access, and copies in and out for the verifier.

The backend that started it is known by what a container needs of it (`ContainerOwner`), so
this module sits below the backend and below the modules that work on containers for it.
"""

from __future__ import annotations

import posixpath
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import docker.errors

from swe_residual.environments.base import MAX_LOG_FILE_BYTES, Environment, ExecResult, StartSpec
from swe_residual.environments.capabilities import DOCKER_ENVIRONMENT
from swe_residual.environments.docker import disk, harness_tools, lost
from swe_residual.environments.docker.archives import (
    MODE_SYMLINK,
    directory_archive,
    file_archive,
    files_archive,
    is_dir,
    path_stat,
    untar_files,
)
from swe_residual.environments.docker.containers import SCRATCH_DIR
from swe_residual.environments.docker.oom import MemoryAccount
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, inspect_container
from swe_residual.environments.docker.exec import RawExec, lost_or_failed, run_exec, to_result
from swe_residual.environments.docker.pulls import ImageSource
from swe_residual.dataset.errors import InfraError

if TYPE_CHECKING:
    from swe_residual.environments.disk_usage import DiskMeter
    from swe_residual.dataset.task import Task

# Where Harbor's oracle uploads the task's solution/ (DeepSWE's solve.sh applies
# /solution/solution.patch from there).
SOLUTION_DIR = "/solution"
# Mounts the engine's archive API cannot see into: these paths go through an exec instead.
KERNEL_MOUNTS = ("/proc", "/sys", "/dev")
MAX_SYMLINK_HOPS = 16

# Exit statuses of the exec-based file access, for the agent's mistakes.
_NOT_FOUND, _IS_DIR, _DENIED = 2, 21, 13
_READ = ('[ -d "$1" ] && exit 21; [ -e "$1" ] || exit 2; [ -r "$1" ] || exit 13; exec cat -- "$1"')
_WRITE = ('[ -d "$1" ] && exit 21; mkdir -p -- "$(dirname -- "$1")" || exit 20; '
          'cat > "$1" || exit 13')
_UNTAR = 'mkdir -p -- "$1" && tar -x --no-same-owner -C "$1" -f -'
_TAR = '[ -e "$1" ] || exit 2; cd -- "$(dirname -- "$1")" && tar -c -f - -- "$(basename -- "$1")"'


class ContainerOwner(harness_tools.ToolOwner, Protocol):
    """What a container needs of the backend that started it (DockerBackend is one): its engine
    and caches for the harness's tools, a commit and a fresh container of it (a saved final
    state), and the removal of both."""

    def start_container(
        self, image: str, task: Task, spec: StartSpec, network: str, head: str | None, *,
        cpus: float | None = None, memory_mb: int | None = None, env: dict[str, str] | None = None,
        kind: str = "agent",
    ) -> DockerEnvironment: ...

    def commit(self, container_id: str, labels: dict[str, str]) -> str: ...

    def remove_temp_image(self, tag: str) -> None: ...

    def forget(self, container_id: str) -> None: ...


# Readings of the engine's process count after a start failed (`_at_pids_limit`).
PIDS_READINGS = 3


class DockerEnvironment(Environment):
    """One container; `workdir` is where the repository sits inside it."""

    capabilities = DOCKER_ENVIRONMENT

    def __init__(
        self, backend: ContainerOwner, container_id: str, *, name: str, image: str,
        workdir: str, base_commit: str | None, spec: StartSpec, tmpfs: tuple[str, ...] = (SCRATCH_DIR,),
    ) -> None:
        self.backend = backend
        self.client = backend.client
        self.container_id = container_id
        self.name = name
        self.image = image
        self.workdir = workdir
        self.scratch_dir = SCRATCH_DIR
        self.solution_dir = SOLUTION_DIR
        self.base_commit = base_commit
        self.spec = spec
        self.tmpfs = tmpfs
        self.closed = False
        # Machine-track states: "replay" or "snapshot" (see states.py); else None.
        self.fidelity: str | None = None
        # A Residual State's per-test statuses as its validation measured them (the record's initial_tests).
        self.initial_tests: dict[str, str] | None = None
        # Machine track, replayed states: the state's own processes ("pid:start-time") before the
        # agent started, never frozen before the verifier (leftovers.py).
        self.state_processes: tuple[str, ...] = ()
        # Machine track: the replayed commands' outputs, for Stage IV to compare with the recording.
        self.replayed_outputs: list[Any] = []
        # The task's own clean image (never an agent's set-up layer): where the harness's trusted
        # copies of the base repository and of git come from.
        self.base_image: str | None = None
        # How the task image was got (pulled, built, a stand-in...): the run record's `image`.
        self.image_source: ImageSource | None = None
        self.temp_image: str | None = None  # a commit made only for this container
        # True from a stop of every process until the next command: nothing can be running.
        self.quiet = False
        self.task: Task | None = None  # the task it was started for (set by the backend)
        # Variables every command here gets (the machine's trust: backend.py), under the caller's
        # own. Given per command, not to the container: a commit would carry them into images
        # whose containers may have no network and no bundle.
        self.given_env: dict[str, str] = {}

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _behind_mount(self, path: str) -> bool:
        return any(path == mount or path.startswith(mount.rstrip("/") + "/") for mount in (*self.tmpfs, *KERNEL_MOUNTS))

    # -- commands --------------------------------------------------------------------------
    def exec(
        self, command: str, *, timeout_sec: float | None = None, env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        return to_result(self.run(["bash", "-c", command], timeout_sec=timeout_sec, env=env,
                                  cwd=self._path(cwd) if cwd else self.workdir))

    def run(
        self, argv: list[str], *, timeout_sec: float | None = None, env: dict[str, str] | None = None,
        cwd: str | None = None, stdin: bytes | None = None, capped: bool = True, stderr_bytes: int | None = None,
    ) -> RawExec:
        """`argv` in the container (no shell); a missing `cwd` raises FileNotFoundError."""
        self.quiet = False  # a command may leave processes behind
        env = {**self.given_env, **(env or {})} or None
        raw = run_exec(self.client, self.container_id, argv, timeout_sec=timeout_sec, env=env, cwd=cwd,
                       stdin=stdin, capped=capped, stderr_bytes=stderr_bytes)
        if not raw.started:
            # The engine could not start the process: the caller's missing cwd, as for the local
            # backend's Popen, or an engine failure.
            if self._at_pids_limit():
                # The container's processes fill its pids limit: what runs in it made them, so the
                # command fails as a command does (the agent's), not as the engine would (infra).
                return RawExec(exit_code=126, stdout=b"", stderr=b"the container's process limit is reached: "
                               b"no process can start\n", timed_out=False, duration_sec=raw.duration_sec,
                               dropped_bytes=0, started=True)
            if cwd and self.run(["test", "-d", cwd]).exit_code != 0:
                raise FileNotFoundError(f"{cwd}: no such directory in the container")
            raise InfraError(f"could not start {argv[0]!r} in container {self.container_id[:12]}: "
                             f"{raw.stdout.decode(errors='replace').strip()[-500:]}")
        return raw

    def _at_pids_limit(self) -> bool:
        """Whether the container's process count is at its pids limit (the engine's stats), on any
        of a few readings: a fork loop's count dips as its processes exit and are made again, so
        one reading taken after the failed start can miss the limit it hit (the start then read as
        the engine's failure, and the agent's item retried). Within a few processes of it counts."""
        for _ in range(PIDS_READINGS):
            try:
                stats = self.client.api.stats(self.container_id, stream=False, one_shot=True)
            except ENGINE_EXCEPTIONS:
                return False
            pids = stats.get("pids_stats") or {}
            limit, current = pids.get("limit"), pids.get("current")
            if not isinstance(limit, int) or not isinstance(current, int) or limit <= 0:
                return False
            if current >= limit - max(2, limit // 50):
                return True
        return False

    # -- files -----------------------------------------------------------------------------
    def read_file(self, path: str) -> bytes:
        full = self._resolve(self._path(path))
        if self._behind_mount(full):
            raw = self.run(["sh", "-c", _READ, "sh", full], capped=False)
            self._raise_file_error(path, raw)
            return raw.stdout
        stat = self._stat(full)
        if stat is None:
            raise FileNotFoundError(path)
        if is_dir(stat):
            raise IsADirectoryError(path)
        files = self._get_archive(full, None)
        if len(files) != 1:
            raise InfraError(f"reading {path}: the engine sent {len(files)} files")
        return next(iter(files.values()))

    def write_file(self, path: str, data: bytes) -> None:
        full = self._resolve(self._path(path))
        if self._behind_mount(full):
            self._raise_file_error(path, self.run(["sh", "-c", _WRITE, "sh", full], stdin=data))
            return
        stat = self._stat(full)
        if stat is not None and is_dir(stat):
            raise IsADirectoryError(path)
        # An existing file keeps its permission bits (an edited script stays executable).
        mode = int(stat["mode"]) & 0o7777 if stat is not None else 0o644
        directory, name = posixpath.split(full)
        self._put_archive(directory, file_archive(name, data, mode), what=path)

    def copy_in(self, source: Path | bytes | dict[str, bytes], container_dir: str) -> None:
        """Copy into `container_dir` (created if missing): a host directory's contents, named files
        (relative path -> bytes), or a ready tar archive. Owned by root."""
        if isinstance(source, Path):
            archive = directory_archive(source)
        elif isinstance(source, dict):
            archive = files_archive(source)
        else:
            archive = source
        target = self._path(container_dir)
        if self._behind_mount(target):
            raw = self.run(["sh", "-c", _UNTAR, "sh", target], stdin=archive)
            if raw.exit_code != 0:
                raise InfraError(f"copying into {target} failed: {raw.stderr.decode(errors='replace')[-500:]}")
            return
        self._put_archive(target, archive, what=target)

    def copy_out(self, container_path: str, max_file_bytes: int = MAX_LOG_FILE_BYTES) -> dict[str, bytes]:
        """The regular files at `container_path` (a file: its name; a directory: paths relative to
        it) -> bytes; files over `max_file_bytes` are left out; nothing there: {}."""
        full = self._path(container_path)
        if self._behind_mount(full):
            raw = self.run(["sh", "-c", _TAR, "sh", full], capped=False)
            if raw.exit_code == _NOT_FOUND:
                return {}
            if raw.exit_code != 0:
                raise InfraError(f"copying {full} out failed: {raw.stderr.decode(errors='replace')[-500:]}")
            return self._untar([raw.stdout], max_file_bytes, full, strip_top=True)
        stat = self._stat(full)
        if stat is None:
            return {}
        return self._get_archive(full, max_file_bytes, strip_top=is_dir(stat))

    def copy_out_entry(self, container_path: str, max_file_bytes: int) -> tuple[bool, dict[str, bytes]]:
        """(whether it is a directory, its files as `copy_out` gives them) in one archive request
        (the engine sends the path's stat with it); nothing there: (False, {}). Not for paths
        behind a mount."""
        full = self._path(container_path)
        try:
            chunks, stat = self.client.api.get_archive(self.container_id, full)
        except docker.errors.NotFound as exc:
            if inspect_container(self.client, self.container_id) is None:
                raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
            return False, {}
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
        directory = is_dir(stat or {})
        return directory, self._untar(chunks, max_file_bytes, full, strip_top=directory)

    def copy_out_directory(self, container_dir: str, max_file_bytes: int) -> dict[str, bytes]:
        """The files below a directory (paths relative to it) in one archive request; absent: {}.
        Not for paths behind a mount."""
        try:
            return self._get_archive(self._path(container_dir), max_file_bytes, strip_top=True)
        except FileNotFoundError:
            return {}

    def remove_paths(self, *paths: str) -> None:
        """`rm -rf` of paths in the container (relative ones under the workdir)."""
        if paths:
            raw = self.run(["rm", "-rf", "--", *(self._path(path) for path in paths)])
            if raw.exit_code != 0:
                raise InfraError(f"removing {', '.join(paths)} failed: {raw.stderr.decode(errors='replace')[-500:]}")

    # -- archive plumbing --------------------------------------------------------------------
    def _stat(self, full: str) -> dict | None:
        try:
            stat = path_stat(self.client, self.container_id, full)
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
        if stat is None and inspect_container(self.client, self.container_id) is None:
            raise lost_or_failed(self.client, self.container_id, None, "file access")
        return stat

    def _resolve(self, full: str) -> str:
        """Follow symlinks at the end of a path (as `cat` would), within the container."""
        for _ in range(MAX_SYMLINK_HOPS):
            if self._behind_mount(full):
                return full
            stat = self._stat(full)
            if stat is None or not int(stat.get("mode", 0)) & MODE_SYMLINK or not stat.get("linkTarget"):
                return full
            full = posixpath.normpath(posixpath.join(posixpath.dirname(full), stat["linkTarget"]))
        raise OSError(f"{full}: too many levels of symbolic links")

    def _get_archive(self, full: str, max_file_bytes: int | None, *, strip_top: bool = False) -> dict[str, bytes]:
        try:
            chunks, _ = self.client.api.get_archive(self.container_id, full)
        except docker.errors.NotFound as exc:
            if inspect_container(self.client, self.container_id) is None:
                raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
            raise FileNotFoundError(full) from exc
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
        return self._untar(chunks, max_file_bytes, full, strip_top=strip_top)

    def _untar(self, chunks, max_file_bytes: int | None, full: str, *, strip_top: bool) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
        try:
            return untar_files(chunks, max_file_bytes, strip_top=strip_top)
        except (tarfile.TarError, *ENGINE_EXCEPTIONS) as exc:  # one flat tuple: Python matches no nested one
            raise InfraError(f"unreadable archive of {full}: {exc}") from exc

    def _put_archive(self, directory: str, archive: bytes, *, what: str) -> None:
        for attempt in (1, 2):
            try:
                self.client.api.put_archive(self.container_id, directory, archive)
                return
            except docker.errors.NotFound as exc:
                if inspect_container(self.client, self.container_id) is None:
                    raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
                if attempt == 2:
                    raise FileNotFoundError(what) from exc
                # The directory is missing: create it (as `mkdir -p` does), then once more.
                made = self.run(["mkdir", "-p", "--", directory])
                if made.exit_code != 0:
                    raise NotADirectoryError(f"{what}: {made.stderr.decode(errors='replace').strip()[-300:]}") from exc
            except docker.errors.APIError as exc:
                if exc.status_code == 403:
                    raise PermissionError(what) from exc
                raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc
            except ENGINE_EXCEPTIONS as exc:
                raise lost_or_failed(self.client, self.container_id, exc, "file access") from exc

    def _raise_file_error(self, path: str, raw: RawExec) -> None:
        if raw.exit_code == 0:
            return
        errors = {_NOT_FOUND: FileNotFoundError, _IS_DIR: IsADirectoryError, _DENIED: PermissionError}
        if raw.exit_code in errors:
            raise errors[raw.exit_code](path)
        raise InfraError(f"file access to {path} failed: {raw.stderr.decode(errors='replace').strip()[-500:]}")

    # -- the harness's own steps after the agent stopped (harness_tools.py) ---------------------
    def stop_processes(self) -> int:
        """Kill whatever the agent left running; returns how many processes there were."""
        if self.quiet:
            return 0
        stopped = harness_tools.stop_processes(self.client, self.container_id)
        self.quiet = True
        return stopped

    def capture_patch(self) -> str:
        """The final working tree against the base commit, made by the harness's git."""
        if self.base_commit is None:
            raise InfraError("no base commit recorded for this environment")
        return harness_tools.capture_patch(self.backend, self.container_id, image=self.base_image or self.image,
                                           workdir=self.workdir, base_commit=self.base_commit)

    def saved_instance(self, spec: StartSpec) -> DockerEnvironment:
        """A fresh container of this container's file system as it is now (a commit): the
        saved final state, to verify again without the processes or anything else of this one."""
        labels = {"kind": "final-state", "item": spec.item_id}
        if self.task is None:
            raise InfraError("this container was not started for a task: it cannot be saved and restarted")
        tag = self.backend.commit(self.container_id, labels)
        try:
            fresh = self.backend.start_container(tag, self.task, spec, self.task.config.agent_network_mode,
                                                 self.base_commit, kind="reverify")
        except BaseException:
            self.backend.remove_temp_image(tag)
            raise
        fresh.base_image = self.base_image
        fresh.image_source = self.image_source
        fresh.fidelity = self.fidelity
        fresh.temp_image = tag
        return fresh

    # -- the task's memory_mb (oom.py) --------------------------------------------------------
    def memory_kills(self) -> MemoryAccount | None:
        """The out-of-memory kills within this container's own memory limit so far; None when
        there were none (or the engine cannot say)."""
        try:
            return lost.memory_kills(self.client, self.container_id)
        except InfraError:
            return None

    # -- the task's storage_mb (disk.py) -------------------------------------------------------
    storage_quota = False  # the engine bounds this container's writable layer (storage_opt size)

    def disk_meter(self) -> DiskMeter | str:
        """How the runner reads what this container wrote, or why it cannot."""
        storage_mb = self.task.config.storage_mb if self.task is not None else None
        if not storage_mb:
            return "no storage_mb"
        return disk.container_meter(self.client, self.container_id, scratch_dir=self.scratch_dir,
                                    storage_quota=self.storage_quota, storage_mb=storage_mb)

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.backend.forget(self.container_id)
            if self.temp_image is not None:  # a saved final state's commit goes with its container
                self.backend.remove_temp_image(self.temp_image)

    def __enter__(self) -> DockerEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

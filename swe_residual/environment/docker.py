"""The `docker` backend: every start in its own container (DESIGN §9).

Images
  A task runs in `[environment] docker_image` when it names one (it must be present locally:
  nothing can be pulled on these machines), otherwise in an image built from
  `environment/Dockerfile`, tagged `swe-residual-task:<task>-<hash of the build context>` so a
  second run reuses it and any change to the context rebuilds. Builds happen once per machine
  under a file lock shared by xdist workers and parallel runs.

States
  A Residual State is applied once (strict `git apply`, no commit) in a build container,
  optionally validated by a hook in a throwaway container, and snapshotted with `docker commit`
  into `swe-residual-state:<task>-<state>-<hash of image id + patch>`. Every rollout is a new
  container of that snapshot: rollouts never share a file system and never re-apply.

Hygiene
  Every container carries the labels `swe-residual=1`, `.run`, `.item`, `.pid` (the owning host
  process) and `.backend`. Environments remove their container on close, the backend removes
  what it created on close, and `sweep()` removes containers whose owner died (run at backend
  start). SIGINT/SIGTERM and interpreter exit remove the current process's containers too.
  Temporary images (`swe-residual-tmp:*`) are removed by tag right after use, so no image is
  ever left dangling.

Machine track and fidelity
  A machine-track state is rebuilt by replaying its `commands.jsonl` in a fresh container of the
  task image and committing the result. A commit holds files, installed software and
  configuration, not running processes, so the backend also records whether the replay left
  processes running (or the state declares `[machine] live_processes`). Such a state cannot be
  restored from its snapshot alone: without engine checkpoints (CRIU, see
  `checkpoint_support()`), every instance is a fresh container of the task image into which the
  commands are replayed again ("replay"); other machine states start from the snapshot
  ("snapshot"). `DockerEnvironment.fidelity` says which one an instance got.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import posixpath
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from filelock import FileLock

from swe_residual.environment.base import Environment, ExecResult, StartSpec, VerifierOutput
from swe_residual.environment.local import MAX_LOG_FILE_BYTES, default_cache_dir, tree_digest
from swe_residual.errors import DatasetError, InfraError
from swe_residual.images import BASE_IMAGE, ensure_base_image
from swe_residual.patches import apply_patch
from swe_residual.state import ResidualState
from swe_residual.task import Task

LABEL = "swe-residual"
TASK_REPO = "swe-residual-task"
STATE_REPO = "swe-residual-state"
TEMP_REPO = "swe-residual-tmp"
SCRATCH_DIR = "/tmp/swe-residual"
TESTS_DIR = "/tests"
VERIFIER_LOGS_DIR = "/logs/verifier"
DEFAULT_PIDS_LIMIT = 4096
# Capabilities an agent plausibly needs as root in its container (file ownership, package
# installs, dropping privileges to a user, killing its own processes, binding low ports).
# Everything else Docker grants by default (raw sockets, mknod, chroot, setfcap, audit) is dropped.
KEPT_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE")
ENGINE_TIMEOUT_SEC = 180.0
# How long after an exec's own deadline the host still waits for the `docker exec` client
# (the in-container `timeout` fires first; this only covers a hung engine or held pipes).
CLIENT_GRACE_SEC = 5.0
# Every exec carries this variable, so a timed-out command's escaped descendants (setsid,
# daemonized) can still be found in /proc and killed.
EXEC_MARK = "SWE_RESIDUAL_EXEC"
_ENGINE_ERRORS = (b"Error response from daemon", b"Error: No such container", b"OCI runtime exec failed")
# How a machine-track instance holds its state: a CRIU checkpoint (files + live processes),
# the commands replayed into the instance (live processes restarted), or the committed
# snapshot (files only).
FIDELITY_CRIU, FIDELITY_REPLAY, FIDELITY_SNAPSHOT = "criu", "replay", "snapshot"
LIVE_LABEL = f"{LABEL}.live-processes"
# Processes left behind by a replay: everything but the container's own init and idle command
# and the listing itself (the shell running it and its children).
_LIST_PROCESSES = (
    "ps -eo pid=,ppid=,args= 2>/dev/null | "
    "awk -v me=$$ '$1 != 1 && $1 != me && $2 != me && $3 != \"ps\" "
    "&& !($3 == \"sleep\" && $4 == \"infinity\" && NF == 4) "
    "{ $1 = \"\"; $2 = \"\"; sub(/^ +/, \"\"); print }'"
)

# Every process but the container's init (pid 1), its idle main process (the first child of
# init: the lowest pid whose parent is 1) and this script; three passes catch fresh forks.
_KILL_LEFTOVERS = (
    'main=; for d in /proc/[0-9]*; do p=${d#/proc/}; '
    'pp=$(sed -n "s/^PPid:[[:space:]]*//p" "$d/status" 2>/dev/null); '
    'if [ "$pp" = 1 ] && { [ -z "$main" ] || [ "$p" -lt "$main" ]; }; then main=$p; fi; done; '
    'for pass in 1 2 3; do for d in /proc/[0-9]*; do p=${d#/proc/}; '
    'case "$p" in 1|"$$"|"$main") continue;; esac; kill -9 "$p" 2>/dev/null; done; done; exit 0'
)

Progress = Callable[[str], None]
# (backend, environment of the freshly applied state, task, state) -> None; raises to reject.
StateValidator = Callable[["DockerBackend", "DockerEnvironment", Task, ResidualState], None]


def _stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the docker CLI -------------------------------------------------------------------------
def docker(
    args: list[str],
    *,
    input: bytes | None = None,
    timeout: float | None = ENGINE_TIMEOUT_SEC,
    check: bool = True,
    stage: str = "environment",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run one `docker` CLI command; engine failures become InfraError when `check`."""
    try:
        done = subprocess.run(
            ["docker", *args], input=input, capture_output=True, timeout=timeout, check=False,
            stdin=None if input is not None else subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
        )
    except FileNotFoundError as exc:
        raise InfraError("the `docker` command is not installed", stage=stage) from exc
    except subprocess.TimeoutExpired as exc:
        raise InfraError(f"`docker {args[0]}` did not answer within {timeout:.0f}s", stage=stage) from exc
    if check and done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()[-1500:]
        raise InfraError(f"`docker {' '.join(args[:2])}` failed: {message}", stage=stage)
    return done


def _inspect(kind: str, reference: str) -> dict[str, Any] | None:
    done = docker([kind, "inspect", "--format", "{{json .}}", reference], check=False)
    if done.returncode != 0:
        return None
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _remove_containers(ids: Iterable[str]) -> None:
    ids = sorted(set(ids))
    if ids:
        # "No such container" for an already removed one is fine: close is idempotent.
        docker(["rm", "-f", "-v", *ids], check=False)


def _remove_images(references: Iterable[str]) -> None:
    references = sorted(set(references))
    if references:
        docker(["image", "rm", *references], check=False)


def _slug(text: str, limit: int) -> str:
    """A string usable in image tags and container names."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")
    return (slug[:limit].rstrip("-.") or "x")


# -- owners ---------------------------------------------------------------------------------
def _process_start(pid: int) -> str | None:
    """Start time of a host process (clock ticks since boot), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_alive(pid_label: str, start_label: str) -> bool:
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
    started = _process_start(pid)
    return not start_label or started is None or started == start_label


_HOST = socket.gethostname()


def _owner_labels() -> dict[str, str]:
    pid = os.getpid()
    return {
        f"{LABEL}.pid": str(pid),
        f"{LABEL}.pid-start": _process_start(pid) or "",
        f"{LABEL}.host": _HOST,
    }


def sweep(run_id: str | None = None) -> int:
    """Remove swe-residual containers and temporary images whose owning process is dead.

    With `run_id`, also those of that run whatever their owner. Owners on another host (a shared
    engine) are never judged dead. Returns how many containers were removed.
    """
    fields = ("pid", "pid-start", "host", "run")
    template = "\t".join(["{{.ID}}"] + [f'{{{{.Label "{LABEL}.{name}"}}}}' for name in fields])
    listed = docker(["ps", "-a", "--filter", f"label={LABEL}=1", "--format", template], check=False)
    doomed = []
    for line in listed.stdout.decode().splitlines():
        container, pid, start, host, run = (line.split("\t") + [""] * 5)[:5]
        if (run_id is not None and run == run_id) or (host == _HOST and not _owner_alive(pid, start)):
            doomed.append(container)
    _remove_containers(doomed)
    _remove_images(_stale_temp_images(run_id))
    return len(doomed)


def _stale_temp_images(run_id: str | None) -> list[str]:
    listed = docker(["images", "--filter", f"reference={TEMP_REPO}", "--format", "{{.Repository}}:{{.Tag}}"], check=False)
    references = listed.stdout.decode().split()
    if not references:
        return []
    inspected = docker(["image", "inspect", "--format", "{{json .Config.Labels}}", *references], check=False)
    stale = []
    for reference, line in zip(references, inspected.stdout.decode().splitlines()):
        labels: dict[str, str] = json.loads(line) or {}
        owner = {name: labels.get(f"{LABEL}.{name}", "") for name in ("run", "host", "pid", "pid-start")}
        of_run = run_id is not None and owner["run"] == run_id
        if of_run or (owner["host"] == _HOST and not _owner_alive(owner["pid"], owner["pid-start"])):
            stale.append(reference)
    return stale


def _cleanup_this_process() -> None:
    """Remove every container and temporary image this process owns (signal, exit)."""
    pid = str(os.getpid())
    listed = docker(["ps", "-aq", "--filter", f"label={LABEL}.pid={pid}"], check=False, timeout=30)
    _remove_containers(listed.stdout.decode().split())
    images = docker(
        ["images", "-q", "--filter", f"reference={TEMP_REPO}", "--filter", f"label={LABEL}.pid={pid}"],
        check=False, timeout=30,
    )
    if images.stdout.strip():
        tags = docker(["images", "--filter", f"reference={TEMP_REPO}", "--filter", f"label={LABEL}.pid={pid}",
                       "--format", "{{.Repository}}:{{.Tag}}"], check=False, timeout=30)
        _remove_images(tags.stdout.decode().split())


_BACKENDS: "weakref.WeakSet[DockerBackend]" = weakref.WeakSet()
_HANDLERS_INSTALLED = False
_PREVIOUS_HANDLERS: dict[int, object] = {}
_CLEANING = threading.Lock()


def _on_exit() -> None:
    if any(not backend.closed for backend in list(_BACKENDS)):
        _cleanup_this_process()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Remove the containers first, then behave as before (KeyboardInterrupt, or death by signal).
    if _CLEANING.acquire(blocking=False):
        try:
            for backend in list(_BACKENDS):
                backend.closed = True
            _cleanup_this_process()
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


# -- Dockerfile ------------------------------------------------------------------------------
_ARG = re.compile(r"^\s*ARG\s+(?P<name>\w+)(?:\s*=\s*(?P<value>\S+))?", re.IGNORECASE)
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)(?:\s+AS\s+(?P<alias>\S+))?", re.IGNORECASE)
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")


def dockerfile_bases(text: str) -> list[str]:
    """The images a Dockerfile starts FROM (ARG defaults substituted, stage aliases skipped)."""
    args: dict[str, str] = {}
    aliases: set[str] = set()
    bases: list[str] = []
    for line in text.splitlines():
        if match := _ARG.match(line):
            args.setdefault(match["name"], (match["value"] or "").strip("\"'"))
        elif match := _FROM.match(line):
            image = _VARIABLE.sub(lambda m: args.get(m[1] or m[3]) or (m[2] or ""), match["image"])
            if image.lower() != "scratch" and image not in aliases:
                bases.append(image)
            if match["alias"]:
                aliases.add(match["alias"])
    return bases


# -- the environment -------------------------------------------------------------------------
class DockerEnvironment:
    """One container; `workdir` is where the repository sits inside it."""

    def __init__(
        self, backend: DockerBackend, container_id: str, *, name: str, image: str,
        workdir: str, base_commit: str | None, spec: StartSpec,
    ) -> None:
        self.backend = backend
        self.container_id = container_id
        self.name = name
        self.image = image
        self.workdir = workdir
        self.scratch_dir = SCRATCH_DIR
        self.base_commit = base_commit
        self.spec = spec
        self.closed = False
        # Machine-track states: "replay" or "snapshot" (see the module docstring); else None.
        self.fidelity: str | None = None

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def exec(
        self,
        command: str,
        *,
        timeout_sec: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        return self.backend.exec_in(
            self.container_id, ["bash", "-c", command], timeout_sec=timeout_sec, env=env,
            cwd=self._path(cwd) if cwd else self.workdir,
        )

    def read_file(self, path: str) -> bytes:
        done = self.backend.run_in(self.container_id, ["cat", "--", self._path(path)])
        if done.returncode != 0:
            _raise_file_error(path, done.stderr)
        return done.stdout

    def write_file(self, path: str, data: bytes) -> None:
        # Through stdin, so any bytes go through unchanged and no host temp file is needed.
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        done = self.backend.run_in(self.container_id, ["sh", "-c", script, "sh", self._path(path)], input=data)
        if done.returncode != 0:
            _raise_file_error(path, done.stderr)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.backend._forget(self.container_id)

    def __enter__(self) -> DockerEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _raise_file_error(path: str, stderr: bytes) -> None:
    message = stderr.decode(errors="replace").strip()
    if "No such file" in message:
        raise FileNotFoundError(path)
    if "Is a directory" in message:
        raise IsADirectoryError(path)
    if "Permission denied" in message:
        raise PermissionError(path)
    raise InfraError(f"file access to {path} failed: {message[-500:]}")


@dataclass(frozen=True)
class PreparedImage:
    """A task's image, ready to start from."""

    reference: str  # tag or docker_image as written
    image_id: str
    head: str | None  # git HEAD at the workdir (the base commit), None without a repository


# -- the backend -----------------------------------------------------------------------------
class DockerBackend:
    """Starts containers of tasks and states; see the module docstring."""

    name = "docker"

    def __init__(
        self,
        *,
        run_id: str = "",
        cache_dir: Path | None = None,
        validate_state: StateValidator | None = None,
        pids_limit: int = DEFAULT_PIDS_LIMIT,
        progress: Progress = _stderr_progress,
        sweep_at_start: bool = True,
    ) -> None:
        # Labels the containers this backend makes outside any StartSpec (state builds, probes).
        # Never used to sweep on close: xdist workers share a run id.
        self.run_id = run_id
        self.cache_dir = (cache_dir or default_cache_dir()) / "docker"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.validate_state = validate_state
        self.pids_limit = pids_limit
        self.progress = progress
        self.token = secrets.token_hex(6)  # this backend instance, for close()
        self.closed = False
        self._containers: set[str] = set()
        self._temp_images: set[str] = set()
        self._prepared: dict[tuple[str, str], PreparedImage] = {}
        self._states: dict[str, tuple[str, str | None]] = {}
        self._lock = threading.Lock()
        _BACKENDS.add(self)
        _install_handlers()
        if sweep_at_start:
            sweep()

    @staticmethod
    def available(timeout_sec: float = 5.0) -> bool:
        """Whether a Docker engine answers within `timeout_sec`."""
        try:
            done = subprocess.run(
                ["docker", "version", "--format", "{{.Server.Version}}"],
                capture_output=True, timeout=timeout_sec, check=False, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and bool(done.stdout.strip())

    def sweep(self, run_id: str | None = None) -> int:
        return sweep(run_id)

    @staticmethod
    def unsupported_reason(task: Task) -> str | None:
        """Why this backend cannot run `task` at all (shown on its skipped items), or None."""
        if task.config.docker_image is None and not (task.environment_dir / "Dockerfile").is_file():
            return "the task has neither environment/Dockerfile nor [environment] docker_image"
        return None

    # -- images ------------------------------------------------------------------------
    def prepare(self, task: Task) -> None:
        self.task_image(task)

    def task_image(self, task: Task) -> PreparedImage:
        """The task's image (built if needed) and its base commit; memoized per build context."""
        configured = task.config.docker_image
        if configured:
            key = (task.id, "image:" + configured)
        else:
            dockerfile = task.environment_dir / "Dockerfile"
            if not dockerfile.is_file():
                raise DatasetError(task.path / "task.toml", "no environment/Dockerfile and no [environment] docker_image",
                                   field="environment.docker_image")
            key = (task.id, tree_digest(task.environment_dir))
        if key in self._prepared:
            return self._prepared[key]
        if configured:
            found = _inspect("image", configured)
            if found is None:
                raise InfraError(
                    f"image {configured!r} ([environment] docker_image of {task.id}) is not present locally, "
                    "and nothing can be pulled on this machine: build or `docker load` it first",
                    stage="build",
                )
            prepared = PreparedImage(configured, found["Id"], None)
        else:
            prepared = self._build_task_image(task, key[1])
        prepared = PreparedImage(prepared.reference, prepared.image_id, self._image_head(task, prepared.image_id))
        expected = task.config.base_commit
        if expected and prepared.head != expected:
            raise DatasetError(
                task.path / "task.toml",
                f"the environment builds commit {prepared.head}, not {expected}",
                field="metadata.base_commit_hash",
            )
        self._prepared[key] = prepared
        return prepared

    def _build_task_image(self, task: Task, context_digest: str) -> PreparedImage:
        dockerfile = task.environment_dir / "Dockerfile"
        base_ids = []
        for base in dockerfile_bases(dockerfile.read_text(encoding="utf-8", errors="replace")):
            if base.split(":")[0] == BASE_IMAGE.split(":")[0]:
                # Our own base image: build it from Debian packages if this machine lacks it.
                if base != BASE_IMAGE:
                    raise DatasetError(dockerfile, f"unknown swe-residual base image {base!r} (only {BASE_IMAGE})")
                base_ids.append(ensure_base_image(progress=self.progress))
                continue
            found = _inspect("image", base)
            if found is None:
                raise InfraError(
                    f"{dockerfile} starts FROM {base!r}, which is not present locally; nothing can be pulled here",
                    stage="build",
                )
            base_ids.append(found["Id"])
        # The base image ids are part of the key: a rebuilt base rebuilds the task image.
        digest = hashlib.sha256("\0".join([context_digest, *base_ids]).encode()).hexdigest()[:16]
        tag = f"{TASK_REPO}:{_slug(task.id, 100)}-{digest}"
        with FileLock(str(self.cache_dir / f"{_slug(tag, 200)}.lock")):
            found = _inspect("image", tag)
            if found is None:
                self.progress(f"building {tag} from {dockerfile}")
                started = time.monotonic()
                dangling_before = set(_dangling_images())
                # No --label: the legacy builder would add a LABEL step (one more container and
                # commit, seconds on fuse-overlayfs); the repository name marks our images.
                build = docker(
                    ["build", "--force-rm", "-t", tag, "-f", str(dockerfile), str(task.environment_dir)],
                    timeout=task.config.build_timeout_sec, check=False, stage="build",
                    # The classic builder: the one tested against an engine without a registry
                    # (it uses local FROM images as they are and never tries to resolve them).
                    env={"DOCKER_BUILDKIT": "0"},
                )
                if build.returncode != 0:
                    # A failed legacy build leaves its last good layer untagged: remove it.
                    _remove_images(set(_dangling_images()) - dangling_before)
                    log = (build.stdout + build.stderr).decode(errors="replace").strip()[-3000:]
                    raise InfraError(f"building {dockerfile} failed:\n{log}", stage="build")
                found = _inspect("image", tag)
                if found is None:
                    raise InfraError(f"{tag} is missing right after its build", stage="build")
                self.progress(f"built {tag} in {time.monotonic() - started:.1f}s")
        return PreparedImage(tag, found["Id"], None)

    def _image_head(self, task: Task, image_id: str) -> str | None:
        """git HEAD at the workdir of an image, cached on disk by image id."""
        workdir = task.config.workdir
        record = self.cache_dir / "heads" / f"{image_id.split(':')[-1]}-{_slug(workdir, 60)}.txt"
        if record.is_file():
            return record.read_text().strip() or None
        done = docker(
            ["run", "--rm", "--network", "none", "--entrypoint", "git", *self._label_args("head", task.id, self.run_id),
             image_id, "-c", "safe.directory=*", "-C", workdir, "rev-parse", "HEAD"],
            check=False, stage="build",
        )
        head = done.stdout.decode().strip() if done.returncode == 0 else ""
        if not head and any(marker in done.stderr for marker in _ENGINE_ERRORS[:1]):
            raise InfraError(f"could not start {image_id[:19]}: {done.stderr.decode(errors='replace')[-500:]}")
        if not head and task.track == "repo":
            raise DatasetError(
                task.path / "task.toml",
                f"the environment image has no git repository at {workdir}: "
                f"{done.stderr.decode(errors='replace').strip()[-300:]}",
                field="metadata.workdir",
            )
        record.parent.mkdir(parents=True, exist_ok=True)
        partial = record.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(head)
        partial.replace(record)
        return head or None

    # -- states --------------------------------------------------------------------------
    def state_image(self, task: Task, state: ResidualState) -> tuple[str, str | None]:
        """(image reference, base commit) of a state's snapshot, applied and validated once."""
        prepared = self.task_image(task)
        tag = self.state_tag(task, state)
        if tag in self._states:
            return self._states[tag]
        with FileLock(str(self.cache_dir / f"{_slug(tag, 200)}.lock")):
            if _inspect("image", tag) is None:
                self._build_state_image(task, state, prepared, tag)
        self._states[tag] = (tag, prepared.head)
        return self._states[tag]

    def state_tag(self, task: Task, state: ResidualState) -> str:
        """The snapshot's tag: content-addressed by the task image and the state's payload."""
        prepared = self.task_image(task)
        if state.track == "repo":
            payload = state.patch_path.read_bytes() if state.patch_path else b""
        else:
            payload = state.commands_path.read_bytes() if state.commands_path else b""
        key = hashlib.sha256(b"\0".join([prepared.image_id.encode(), state.track.encode(), payload])).hexdigest()[:16]
        return f"{STATE_REPO}:{_slug(task.id, 50)}-{_slug(state.id, 50)}-{key}"

    def _build_state_image(self, task: Task, state: ResidualState, prepared: PreparedImage, tag: str) -> None:
        self.progress(f"snapshotting state {task.id}/{state.id} as {tag}")
        spec = StartSpec(run_id=self.run_id, item_id=f"build:{task.id}/{state.id}", attempt=0)
        # A patch needs no network; replayed machine-track commands get the agent's.
        network = "none" if state.track == "repo" else task.config.agent_network_mode
        live = False
        with self._start_container(prepared.image_id, task, spec, network, prepared.head) as builder:
            if state.track == "repo":
                apply_patch(builder, state.read_patch(), source=str(state.patch_path), strict=True)
            else:
                self._replay(builder, state)
                live = state.live_processes if state.live_processes is not None else bool(self.live_processes(builder))
            labels = {"kind": "state", "task": task.id, "state": state.id, "base-commit": prepared.head or ""}
            if state.track == "machine":
                labels["live-processes"] = "1" if live else "0"
            candidate = self._commit(builder.container_id, labels=labels)
        try:
            if self.validate_state is not None:
                # In a throwaway container: the verifier's files never reach the snapshot. A state
                # with live processes is validated the way its instances start: replayed.
                if live:
                    trial = self._replayed_instance(task, state, spec, prepared)
                else:
                    trial = self._start_container(candidate, task, spec, "none", prepared.head)
                with trial:
                    self.validate_state(self, trial, task, state)
            docker(["tag", candidate, tag])
        finally:
            self._remove_temp_image(candidate)

    def live_processes(self, environment: DockerEnvironment) -> list[str]:
        """Command lines of the processes running in a container besides its own idle ones."""
        done = self.run_in(environment.container_id, ["sh", "-c", _LIST_PROCESSES])
        return [line for line in done.stdout.decode(errors="replace").splitlines() if line.strip()]

    def state_fidelity(self, task: Task, state: ResidualState) -> str | None:
        """How instances of `state` hold it: None (repo track), "snapshot" or "replay"."""
        if state.track != "machine":
            return None
        tag, _ = self.state_image(task, state)
        found = _inspect("image", tag) or {}
        labels = (found.get("Config") or {}).get("Labels") or {}
        # CRIU restore is not implemented (no engine here supports checkpoints): live processes
        # are always restored by replay.
        return FIDELITY_REPLAY if labels.get(LIVE_LABEL) == "1" else FIDELITY_SNAPSHOT

    def _replayed_instance(self, task: Task, state: ResidualState, spec: StartSpec,
                           prepared: PreparedImage) -> DockerEnvironment:
        """A fresh container of the task image with the state's commands replayed into it."""
        environment = self._start_container(prepared.image_id, task, spec, task.config.agent_network_mode, prepared.head)
        try:
            self._replay(environment, state)
        except BaseException:
            environment.close()
            raise
        environment.fidelity = FIDELITY_REPLAY
        return environment

    def _replay(self, environment: DockerEnvironment, state: ResidualState) -> None:
        """Machine track: the predecessor's terminal interactions, in order, in a fresh machine."""
        assert state.commands_path is not None
        for number, entry in enumerate(state.read_commands(), start=1):
            timeout = entry.get("timeout_sec", 600)
            result = environment.exec(entry["command"], timeout_sec=float(timeout), cwd=entry.get("cwd"))
            # `timed_out: true` was recorded: the predecessor's command was killed at its deadline too.
            if result.timed_out and not entry.get("timed_out"):
                raise DatasetError(state.commands_path, f"command {number} did not finish within {timeout}s while replaying")

    # -- starts ----------------------------------------------------------------------------
    def start(self, task: Task, state: ResidualState | None, spec: StartSpec) -> DockerEnvironment:
        if state is None:
            prepared = self.task_image(task)
            image, head = prepared.image_id, prepared.head
        else:
            image, head = self.state_image(task, state)
        fidelity = self.state_fidelity(task, state) if state is not None else None
        if fidelity == FIDELITY_REPLAY:
            # Live processes are not in the snapshot: replay into this instance (validated once).
            assert state is not None
            return self._replayed_instance(task, state, spec, self.task_image(task))
        environment = self._start_container(image, task, spec, task.config.agent_network_mode, head)
        environment.fidelity = fidelity
        return environment

    def _label_args(self, kind: str, item: str, run_id: str = "") -> list[str]:
        labels = {LABEL: "1", f"{LABEL}.kind": kind, f"{LABEL}.run": run_id, f"{LABEL}.item": item,
                  f"{LABEL}.backend": self.token, **_owner_labels()}
        return [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]

    def _start_container(
        self, image: str, task: Task, spec: StartSpec, network: str, head: str | None,
    ) -> DockerEnvironment:
        if self.closed:
            raise InfraError("the docker backend is closed")
        config = task.config
        name = f"swe-residual-{_slug(spec.item_id, 80)}-{secrets.token_hex(4)}"
        args = [
            "run", "-d", "--name", name, "--init", "--network", network,
            "--pids-limit", str(self.pids_limit), "--cap-drop", "ALL",
            *[arg for cap in KEPT_CAPABILITIES for arg in ("--cap-add", cap)],
            "--security-opt", "no-new-privileges",
            # The harness's scratch space: a fresh tmpfs, so it is never part of a snapshot.
            # (--tmpfs, not --mount: the latter forces noexec, and agents run scripts from it).
            "--tmpfs", f"{SCRATCH_DIR}:rw,exec,nosuid,nodev,mode=1777",
            "-w", config.workdir,
            *self._label_args("agent", spec.item_id, spec.run_id),
            "--label", f"{LABEL}.attempt={spec.attempt}",
        ]
        if config.cpus:
            args += ["--cpus", f"{config.cpus:g}"]
        if config.memory_mb:
            # Swap equal to memory: no swap, so the limit is a limit.
            args += ["--memory", f"{config.memory_mb}m", "--memory-swap", f"{config.memory_mb}m"]
        for key, value in config.environment_env.items():
            args += ["-e", f"{key}={value}"]
        # An explicit entrypoint: the container idles and everything runs through exec.
        args += ["--entrypoint", "sleep", image, "infinity"]
        done = docker(args, check=False)
        if done.returncode != 0:
            _remove_containers([name])  # a created-but-not-started container
            raise InfraError(f"could not start a container of {image[:40]}: "
                             f"{done.stderr.decode(errors='replace').strip()[-800:]}")
        container_id = done.stdout.decode().strip()
        with self._lock:
            self._containers.add(container_id)
        return DockerEnvironment(self, container_id, name=name, image=image, workdir=config.workdir,
                                 base_commit=head, spec=spec)

    def _forget(self, container_id: str) -> None:
        with self._lock:
            self._containers.discard(container_id)
        _remove_containers([container_id])

    # -- exec --------------------------------------------------------------------------------
    def run_in(self, container_id: str, argv: list[str], *, input: bytes | None = None,
               cwd: str | None = None) -> subprocess.CompletedProcess[bytes]:
        """A short harness command in a container (no timeout semantics); engine errors raise."""
        args = ["exec", *(["-i"] if input is not None else []), *(["-w", cwd] if cwd else []), container_id, *argv]
        done = docker(args, input=input, check=False)
        if done.returncode != 0:
            failed_start = done.stdout if done.returncode == 126 and done.stdout.startswith(b"OCI runtime exec failed") else b""
            self._check_engine(container_id, failed_start or done.stderr)
        return done

    def exec_in(
        self, container_id: str, argv: list[str], *, timeout_sec: float | None = None,
        env: dict[str, str] | None = None, cwd: str | None = None,
    ) -> ExecResult:
        """Run `argv` in the container; on timeout, kill it inside the container and report it.

        The command runs under `timeout -s KILL`, which puts it in its own process group and
        kills the group at the deadline, even if this host process died meanwhile. Whatever
        escaped the group (setsid, daemons) still carries EXEC_MARK in its environment and is
        killed through /proc right after. The client is killed too if it lingers.
        """
        token = secrets.token_hex(8)
        args = ["docker", "exec", "-e", f"{EXEC_MARK}={token}"]
        if cwd:
            args += ["-w", cwd]
        for key, value in (env or {}).items():
            args += ["-e", f"{key}={value}"]
        inner = argv if timeout_sec is None else ["timeout", "-s", "KILL", f"{max(timeout_sec, 0.001):.3f}", *argv]
        started = time.monotonic()
        try:
            process = subprocess.Popen([*args, container_id, *inner], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as exc:
            raise InfraError("the `docker` command is not installed") from exc
        client_killed = False
        try:
            out, err = process.communicate(timeout=None if timeout_sec is None else timeout_sec + CLIENT_GRACE_SEC)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            client_killed = True
        except BaseException:
            process.kill()
            process.wait()
            self._kill_marked(container_id, token)
            raise
        elapsed = time.monotonic() - started
        # 137: timeout's group kill took timeout itself down; 124 if it survived to report.
        timed_out = client_killed or (
            timeout_sec is not None and process.returncode in (124, 137) and elapsed >= timeout_sec
        )
        if timed_out:
            self._kill_marked(container_id, token)
        elif process.returncode != 0:
            # The CLI reports a failure to start the process (exit 126) on stdout.
            failed_start = out if process.returncode == 126 and out.startswith(b"OCI runtime exec failed") else b""
            if cwd and b"chdir to cwd" in failed_start:
                # The caller's mistake, as a missing cwd is for the local backend's Popen.
                raise FileNotFoundError(f"{cwd}: no such directory in the container")
            self._check_engine(container_id, failed_start or err)
        return ExecResult(
            exit_code=None if timed_out else process.returncode,
            stdout=out.decode("utf-8", errors="surrogateescape"),
            stderr=err.decode("utf-8", errors="replace"),
            timed_out=timed_out,
            duration_sec=elapsed,
        )

    def _kill_marked(self, container_id: str, token: str) -> None:
        script = (
            'for d in /proc/[0-9]*; do '
            'tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -qx "$1" && kill -9 "${d#/proc/}" 2>/dev/null; '
            'done; exit 0'
        )
        docker(["exec", container_id, "sh", "-c", script, "sh", f"{EXEC_MARK}={token}"], check=False, timeout=60)

    def _check_engine(self, container_id: str, stderr: bytes) -> None:
        """Raise InfraError when a failed exec was the engine's failure, not the command's."""
        if not stderr.lstrip().startswith(_ENGINE_ERRORS):
            return
        state = _inspect("container", container_id)
        running = bool(state and state.get("State", {}).get("Running"))
        what = "is running" if running else "is lost (not running)"
        raise InfraError(f"docker exec failed, container {container_id[:12]} {what}: "
                         f"{stderr.decode(errors='replace').strip()[-500:]}")

    # -- snapshots -----------------------------------------------------------------------
    def _commit(self, container_id: str, labels: dict[str, str]) -> str:
        """`docker commit` to a temporary tag owned by this process; returns the tag."""
        tag = f"{TEMP_REPO}:{secrets.token_hex(8)}"
        owner = {**_owner_labels(), f"{LABEL}.backend": self.token}
        changes = [f"LABEL {LABEL}.{key}={json.dumps(value)}" for key, value in labels.items()]
        changes += [f"LABEL {key}={json.dumps(value)}" for key, value in owner.items()]
        args = ["commit"]
        for change in changes:
            args += ["--change", change]
        with self._lock:
            self._temp_images.add(tag)
        docker([*args, container_id, tag])
        return tag

    def _remove_temp_image(self, tag: str) -> None:
        # By tag: untags when the image is also tagged as a snapshot, deletes it otherwise,
        # so it never lingers as a dangling image.
        docker(["image", "rm", tag], check=False)
        with self._lock:
            self._temp_images.discard(tag)

    # -- the verifier ----------------------------------------------------------------------
    def run_verifier(self, environment: Environment, task: Task) -> VerifierOutput:
        if not isinstance(environment, DockerEnvironment):
            raise TypeError(f"the docker backend cannot verify a {type(environment).__name__}")
        if environment.closed:
            raise InfraError("the environment was closed before verification", stage="verifier")
        if task.config.verifier_environment_mode != "separate":
            if task.track == "repo":
                # Nothing the agent left running (a loop killing pytest, a reward forger) may
                # share the verifier's container. Machine-track processes are the state: kept.
                self.run_in(environment.container_id, ["sh", "-c", _KILL_LEFTOVERS])
            return self._verify_in(environment, task)
        # A fresh container of the agent's final file system: nothing it left running can
        # interfere. Running processes are not part of a commit, by design.
        snapshot = self._commit(environment.container_id, labels={"kind": "verifier", "task": task.id})
        try:
            spec = StartSpec(environment.spec.run_id, environment.spec.item_id + ":verifier", environment.spec.attempt)
            with self._start_container(snapshot, task, spec, task.config.verifier_network_mode,
                                       environment.base_commit) as fresh:
                return self._verify_in(fresh, task)
        finally:
            self._remove_temp_image(snapshot)

    def _verify_in(self, environment: DockerEnvironment, task: Task) -> VerifierOutput:
        container = environment.container_id
        # The hidden tests arrive only now. Whatever the agent put at /tests or in the log
        # directory (a reward file of its own making) is deleted first.
        install = (f"rm -rf {TESTS_DIR} {VERIFIER_LOGS_DIR} && mkdir -p {TESTS_DIR} {VERIFIER_LOGS_DIR} "
                   f"&& tar -x -C {TESTS_DIR} -f -")
        done = self.run_in(container, ["sh", "-c", install], input=_tar_directory(task.tests_dir))
        if done.returncode != 0:
            raise InfraError(f"could not copy the tests in: {done.stderr.decode(errors='replace')[-500:]}", stage="verifier")
        env = {**task.config.verifier_env, "TESTS_DIR": TESTS_DIR, "VERIFIER_LOGS_DIR": VERIFIER_LOGS_DIR,
               "APP_DIR": environment.workdir}
        result = self.exec_in(container, ["sh", "-c", f"exec bash {TESTS_DIR}/test.sh 2>&1"],
                              timeout_sec=task.config.verifier_timeout_sec, env=env, cwd=environment.workdir)
        logs = self.run_in(container, ["sh", "-c", f"cd {VERIFIER_LOGS_DIR} 2>/dev/null && tar -c -f - . || true"])
        return VerifierOutput(
            exit_code=result.exit_code,
            output=result.stdout + result.stderr,
            timed_out=result.timed_out,
            files=_untar_files(logs.stdout),
            duration_sec=result.duration_sec,
        )

    # -- hygiene -----------------------------------------------------------------------------
    def close(self) -> None:
        """Remove every container and temporary image this backend created; idempotent."""
        self.closed = True
        with self._lock:
            containers, self._containers = set(self._containers), set()
            images, self._temp_images = set(self._temp_images), set()
        # Also by label: a container whose `docker run` was interrupted is not in the set.
        listed = docker(["ps", "-aq", "--filter", f"label={LABEL}.backend={self.token}"], check=False)
        _remove_containers(containers | set(listed.stdout.decode().split()))
        _remove_images(images)

    def __enter__(self) -> DockerBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def checkpoint_support(timeout_sec: float = 20.0) -> dict[str, Any]:
    """Whether the engine can checkpoint live containers (`docker checkpoint` needs an
    experimental daemon and a working `criu`); `supported` and the evidence for the report."""
    report: dict[str, Any] = {"experimental": None, "criu": None, "criu_check": None}
    try:
        version = subprocess.run(["docker", "version", "--format", "{{json .Server.Experimental}}"],
                                 capture_output=True, text=True, timeout=timeout_sec, check=False)
        report["experimental"] = version.stdout.strip() == "true"
    except (OSError, subprocess.TimeoutExpired):
        report["experimental"] = None
    criu = shutil.which("criu")
    report["criu"] = criu
    if criu:
        try:
            checked = subprocess.run([criu, "check"], capture_output=True, text=True, timeout=timeout_sec, check=False)
            report["criu_check"] = "ok" if checked.returncode == 0 else (checked.stdout + checked.stderr).strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            report["criu_check"] = str(exc)
    report["supported"] = bool(report["experimental"]) and report["criu_check"] == "ok"
    reasons = []
    if not report["experimental"]:
        reasons.append("the engine is not in experimental mode")
    if not criu:
        reasons.append("criu is not installed")
    elif report["criu_check"] != "ok":
        reasons.append(f"`criu check` failed: {report['criu_check']}")
    report["reason"] = "; ".join(reasons) or "docker checkpoint is available"
    # Restoring from a checkpoint is not implemented; live processes are restored by replay.
    report["fidelity"] = FIDELITY_REPLAY
    return report


def _dangling_images() -> list[str]:
    return docker(["images", "-q", "--no-trunc", "--filter", "dangling=true"], check=False).stdout.decode().split()


def _tar_directory(root: Path) -> bytes:
    """A tar stream of a directory's contents, owned by root (the container's user)."""
    buffer = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(root.iterdir()):
            archive.add(path, arcname=path.name, filter=as_root)
    return buffer.getvalue()


def _untar_files(data: bytes) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    if not data:
        return files
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                if member.isfile() and member.size <= MAX_LOG_FILE_BYTES:
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        files[posixpath.normpath(member.name)] = extracted.read()
    except tarfile.TarError as exc:
        raise InfraError(f"unreadable verifier logs: {exc}", stage="verifier") from exc
    return files


def remove_cached_images(task_id: str | None = None) -> list[str]:
    """Remove the cached state snapshots and task images (of one task, or all); returns the tags."""
    def tags(*filters: str) -> list[str]:
        args = [arg for value in filters for arg in ("--filter", value)]
        listed = docker(["images", *args, "--format", "{{.Repository}}:{{.Tag}}"], check=False)
        return listed.stdout.decode().split()

    # Snapshots first (they sit on the task images); they carry their task as a label.
    states = tags(f"reference={STATE_REPO}", *([f"label={LABEL}.task={task_id}"] if task_id else []))
    own_task = re.compile(rf"^{TASK_REPO}:{re.escape(_slug(task_id, 100))}-[0-9a-f]{{16}}$" if task_id else ".")
    task_images = [tag for tag in tags(f"reference={TASK_REPO}") if own_task.match(tag)]
    for reference in states + task_images:
        docker(["image", "rm", reference], check=False)
    return states + task_images

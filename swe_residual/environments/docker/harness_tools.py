"""What the harness does to an agent's container after the agent stops, with nothing the agent
could have replaced (DESIGN §7).

- `stop_processes`: the engine lists the container's processes (its `top`, run on the engine's
  host, not in the container); if the agent left any, the container is restarted with no grace
  period: everything in it dies at once, whatever the count (a container at its pids limit
  cannot even start a `kill`), and its file system stays as the agent left it. Only the
  harness's tmpfs scratch directory starts empty again. Repo track only: on the machine track
  live processes can be part of the task.
- `capture_patch`: the working tree is exported through the engine's archive API (it reads
  the container's file system itself) and diffed by the harness's git on the host against a
  copy of the base repository exported once from the clean image (swe_residual/environments/harness_git.py).
- `install_git`: for the task's collect steps, the clean image's own `git` binary, copied out
  of a never-started container of the image and put into the agent's container at a path
  whose name is random (the agent cannot have prepared it), first on the PATH the suite gives
  the steps. The image's git is used, not the host's: it matches the image's libraries.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from swe_residual.environments.docker.archives import MODE_SYMLINK, extract_tree, file_archive, path_stat, untar_files
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, engine_errors, remove_containers
from swe_residual.environments.docker.exec import lost_or_failed
from swe_residual.environments.docker.hygiene import container_labels
from swe_residual.environments.docker.idle import idle_pids
from swe_residual.errors import InfraError
from swe_residual.environments.clean_start import cached_clean_start
from swe_residual.environments.harness_git import CleanStartTree, tree_patch

if TYPE_CHECKING:
    from swe_residual.environments.docker.backend import DockerBackend
    from swe_residual.environments.docker.environment import DockerEnvironment

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# A file of the final tree larger than this is left out of the captured patch.
MAX_CAPTURED_FILE_BYTES = 256 * 1024 * 1024
MAX_GIT_BINARY_BYTES = 64 * 1024 * 1024


# -- processes ----------------------------------------------------------------------------------
def leftover_processes(environment: DockerEnvironment) -> list[str]:
    """The container's processes other than its own idle ones (idle.py), as the engine lists them."""
    try:
        listing = environment.client.api.top(environment.container_id, ps_args="-o pid,ppid,args")
    except ENGINE_EXCEPTIONS as exc:  # a stopped container cannot be listed: say why it stopped
        raise lost_or_failed(environment.client, environment.container_id, exc, "process listing") from exc
    titles = [title.upper() for title in listing.get("Titles") or []]
    rows = listing.get("Processes") or []
    try:
        pid_at, ppid_at, cmd_at = titles.index("PID"), titles.index("PPID"), len(titles) - 1
    except ValueError:
        return [" ".join(row) for row in rows]  # an unknown listing: assume the worst
    idle = idle_pids([(row[pid_at], row[ppid_at], row[cmd_at]) for row in rows])
    return [row[cmd_at] for row in rows if row[pid_at] not in idle]


def stop_processes(environment: DockerEnvironment) -> int:
    """Kill everything the agent left running (see the module docstring); returns how many."""
    left = leftover_processes(environment)
    if left:
        with engine_errors(f"restarting container {environment.container_id[:12]} to stop its processes"):
            environment.client.api.restart(environment.container_id, timeout=0)
    return len(left)


# -- the final state's patch ----------------------------------------------------------------------
def capture_patch(environment: DockerEnvironment) -> str:
    """The final working tree against the base commit, by the harness's git (harness_git.py)."""
    if environment.base_commit is None:
        raise InfraError("no base commit recorded for this environment")
    base_git = base_git_dir(environment.backend, environment.base_image or environment.image,
                            environment.workdir, environment.base_commit)
    with tempfile.TemporaryDirectory(prefix="swe-residual-tree-") as scratch:
        tree = Path(scratch) / "tree"
        try:
            chunks, _ = environment.client.api.get_archive(environment.container_id, environment.workdir)
            extract_tree(chunks, tree, skip_git=True, max_file_bytes=MAX_CAPTURED_FILE_BYTES)
        except ENGINE_EXCEPTIONS as exc:
            raise lost_or_failed(environment.client, environment.container_id, exc, "export of the final state") from exc
        clean = clean_start(environment.backend, environment.base_image or environment.image, environment.workdir,
                            environment.base_commit, base_git)
        return tree_patch(tree, base_git, environment.base_commit, clean)


def clean_start(backend: DockerBackend, image: str, workdir: str, head: str, base_git: Path) -> CleanStartTree | None:
    """What the clean `image` holds in `workdir` beyond the base commit (environments/clean_start.py),
    read from a never-started container once per image and base commit."""
    target = backend.cache_dir / "clean-start" / f"{image.split(':')[-1][:32]}-{head[:12]}"

    def export(scratch: Path) -> Path:
        with _created(backend, image) as container_id, engine_errors(f"exporting the clean tree of {image[:19]}"):
            chunks, _ = backend.client.api.get_archive(container_id, workdir)
            extract_tree(chunks, scratch / "tree", skip_git=True, max_file_bytes=MAX_CAPTURED_FILE_BYTES)
        return scratch / "tree"

    return cached_clean_start(target, base_git, head, export)


def base_git_dir(backend: DockerBackend, image: str, workdir: str, head: str) -> Path:
    """A host copy of the `.git` of `workdir` in `image` (clean: never an agent's), exported
    once per base commit and kept in the cache directory."""
    target = backend.cache_dir / "base-git" / head
    if (target / "objects").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "objects").is_dir():
            return target
        building = Path(tempfile.mkdtemp(prefix=f"{head[:12]}-", dir=target.parent))
        try:
            with _created(backend, image) as container_id, \
                    engine_errors(f"exporting the base repository of {image[:19]}"):
                chunks, _ = backend.client.api.get_archive(container_id, posixpath.join(workdir, ".git"))
                extract_tree(chunks, building / "git", skip_git=False, max_file_bytes=None)
            (building / "git").rename(target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return target


# -- a git for the collect steps -------------------------------------------------------------------
def install_git(environment: DockerEnvironment) -> str | None:
    """Put the clean image's git into the container at a fresh random directory; returns that
    directory (for the front of the collect steps' PATH), or None when the image has no git."""
    binary = image_git(environment.backend, environment.base_image or environment.image)
    if binary is None:
        return None
    directory = f"/.swe-residual-harness-{secrets.token_hex(8)}"
    environment._put_archive("/", file_archive(f"{directory.lstrip('/')}/git", binary, 0o755), what=directory)
    return directory


def collect_path(environment: DockerEnvironment, git_dir: str | None) -> str:
    """The PATH of the collect steps: the harness's git first, then the container's configured
    PATH (read from the engine, never from the container; the same for every container of one
    image and environment, so asked once per backend)."""
    key = (environment.image, tuple(sorted(environment.task.config.environment_env.items()))
           if environment.task is not None else ())
    configured = environment.backend.configured_paths.get(key)
    if configured is None:
        with engine_errors(f"inspecting container {environment.container_id[:12]}"):
            config = environment.client.api.inspect_container(environment.container_id).get("Config") or {}
        configured = next((item.split("=", 1)[1] for item in config.get("Env") or [] if item.startswith("PATH=")),
                          DEFAULT_PATH)
        environment.backend.configured_paths[key] = configured
    return f"{git_dir}:{configured}" if git_dir else configured


def image_git(backend: DockerBackend, image: str) -> bytes | None:
    """The `git` binary on the configured PATH of a clean `image`, read from a never-started
    container (cached on disk per image); None when the image has none."""
    key = image.split(":")[-1][:32]
    cached = backend.cache_dir / "harness-git" / key
    missing = cached.with_suffix(".none")
    if cached.is_file():
        return cached.read_bytes()
    if missing.is_file():
        return None
    with _created(backend, image) as container_id, engine_errors(f"reading git out of {image[:19]}"):
        config = backend.client.api.inspect_container(container_id).get("Config") or {}
        path = next((item.split("=", 1)[1] for item in config.get("Env") or [] if item.startswith("PATH=")),
                    DEFAULT_PATH)
        binary = None
        for directory in path.split(":"):
            found = _resolve(backend, container_id, posixpath.join(directory, "git"))
            if found is None:
                continue
            chunks, _ = backend.client.api.get_archive(container_id, found)
            files = untar_files(chunks, MAX_GIT_BINARY_BYTES)
            if len(files) == 1:
                binary = next(iter(files.values()))
                break
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.tmp")
    if binary is None:
        missing.touch()
        return None
    partial.write_bytes(binary)
    partial.replace(cached)
    return binary


def _resolve(backend: DockerBackend, container_id: str, path: str) -> str | None:
    """`path` with its final symbolic links followed, if it names a file in the container."""
    for _ in range(16):
        stat = path_stat(backend.client, container_id, path)
        if stat is None:
            return None
        if not int(stat.get("mode", 0)) & MODE_SYMLINK:
            return path
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), stat.get("linkTarget") or ""))
    return None


@contextlib.contextmanager
def _created(backend: DockerBackend, image: str) -> Iterator[str]:
    """A container of `image` that is created, never started (its files can be read), then removed."""
    labels = container_labels("tools", "harness-tools", backend.run_id, backend.token)
    with engine_errors(f"creating a container of {image[:19]} to read its files"):
        container_id = backend.client.api.create_container(image, command=["true"], entrypoint=[], labels=labels,
                                                           network_disabled=True)["Id"]
    try:
        yield container_id
    finally:
        try:
            remove_containers(backend.client, [container_id])
        except ENGINE_EXCEPTIONS:
            pass

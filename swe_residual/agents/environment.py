"""What an agent brings into the task's environment besides itself: a set-up script and mounts.

`--agent-setup=SCRIPT` installs the agent's tools (a Node or Python CLI, a model client) into
each task image once; the docker backend caches the result as an image layer keyed by the
task image and the script's content (environments/docker/agent_setup.py). `--agent-mount=
HOST:CONTAINER[:ro]` bind-mounts a host directory into the agent's containers, for tools too
large to copy. Neither reaches a separate verifier, which starts from the task's own image.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass
from pathlib import Path

from swe_residual.errors import ConfigError

MOUNT_MODES = ("ro", "rw")


@dataclass(frozen=True)
class AgentMount:
    host: Path
    container: str
    read_only: bool

    def describe(self) -> str:
        return f"{self.host}:{self.container}:{'ro' if self.read_only else 'rw'}"


@dataclass(frozen=True)
class AgentSetup:
    script: Path
    content: bytes

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class AgentEnvironment:
    setup: AgentSetup | None = None
    mounts: tuple[AgentMount, ...] = ()

    @property
    def empty(self) -> bool:
        return self.setup is None and not self.mounts

    def describe(self) -> dict[str, object]:
        """For the run record's agent_config."""
        return {
            "setup": None if self.setup is None else {"script": str(self.setup.script), "sha256": self.setup.digest},
            "mounts": [mount.describe() for mount in self.mounts],
        }


def parse_agent_mount(text: str, base_dir: Path) -> AgentMount:
    """`HOST:CONTAINER[:ro|:rw]`; HOST relative to `base_dir`, it must exist; CONTAINER absolute."""
    parts = text.split(":")
    mode = "rw"
    if len(parts) == 3 and parts[2] in MOUNT_MODES:
        mode = parts.pop()
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise ValueError("expected HOST:CONTAINER or HOST:CONTAINER:ro")
    host = (base_dir / parts[0]).resolve()
    if not host.exists():
        raise ValueError(f"{host} does not exist on this machine")
    container = posixpath.normpath(parts[1])
    if not container.startswith("/") or container == "/":
        raise ValueError(f"the container path {parts[1]!r} must be an absolute path other than /")
    return AgentMount(host, container, mode == "ro")


def read_agent_setup(text: str, base_dir: Path) -> AgentSetup:
    script = (base_dir / text).resolve()
    try:
        return AgentSetup(script, script.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read the set-up script {script}: {exc.strerror or exc}") from exc


def mount_conflict(mounts: tuple[AgentMount, ...], workdir: str) -> str | None:
    """Why a mount cannot be used with a task whose repository is at `workdir`, or None.

    A mount over or inside the repository would change the very state being measured (and
    the patch the metrics read); one above it would hide the repository.
    """
    repo = posixpath.normpath(workdir)
    for mount in mounts:
        inside = mount.container == repo or mount.container.startswith(repo.rstrip("/") + "/")
        above = repo.startswith(mount.container.rstrip("/") + "/")
        if inside or above:
            return (f"--agent-mount {mount.describe()}: the container path overlaps the task's repository at "
                    f"{repo}; mount it elsewhere (for example /opt/agent)")
    return None


def require_docker(environment: AgentEnvironment, backend: str) -> None:
    """The local backend runs agent commands as host processes: it has no image to set up and
    nothing to mount into."""
    if backend == "local" and not environment.empty:
        options = [name for name, given in (("--agent-setup", environment.setup), ("--agent-mount", environment.mounts))
                   if given]
        raise ConfigError(f"{' and '.join(options)} need the docker backend (the local backend runs the agent's "
                          "commands on this machine, which sees its own tools and paths as they are)")

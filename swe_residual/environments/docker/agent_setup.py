"""The agent's set-up layers: `--agent-setup=SCRIPT`, and an agent's own install step
(`AgentInstall`, on top of the script's layer), each run once per task image, then cached.

The script runs as root in a container of the task's image, with the engine's default
network (installing a CLI needs a package index) even when the task's agent runs without
one, and the container is committed as `swe-residual-agent:<task>-<hash of image id and
script>`. Every Clean and Residual start of the task starts from that layer (state snapshots
are built on it), so both kinds of start hold the same tools; a separate verifier still
starts from the task's own image, without them. The script must leave the repository as it
found it: a set-up that edits the repository would change the state being measured.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from swe_residual.environments.agent_environment import AgentInstall, AgentSetup, InstallFailed
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker.containers import SCRATCH_DIR
from swe_residual.environments.docker.images import SETUP_REPO, PreparedImage, slug
from swe_residual.dataset.errors import InfraError
from swe_residual.dataset.task import Task

if TYPE_CHECKING:
    from swe_residual.environments.docker.environment import DockerEnvironment
    from swe_residual.environments.docker.orchestrator import Orchestrator

SETUP_DIR = f"{SCRATCH_DIR}/agent-setup"  # on the scratch tmpfs: never in the commit, nothing to remove


class InstallUnreachable(InfraError):
    """An install step that needs a network it has not got: it fails alike on every task image."""

    def __init__(self, message: str) -> None:
        super().__init__(message, stage="agent-setup")


def setup_tag(task: Task, prepared: PreparedImage, setup: AgentSetup) -> str:
    key = hashlib.sha256(prepared.image_id.encode() + b"\0" + setup.content).hexdigest()[:16]
    return f"{SETUP_REPO}:{slug(task.id, 80)}-{key}"


def install_tag(task: Task, prepared: PreparedImage, install: AgentInstall) -> str:
    """An agent's install layer: keyed by the image below it and what the agent installs."""
    key = hashlib.sha256(b"\0".join([prepared.image_id.encode(), b"install", install.key.encode()])).hexdigest()[:16]
    return f"{SETUP_REPO}:{slug(task.id, 60)}-{slug(install.agent, 40)}-{key}"


def build_setup_image(backend: Orchestrator, task: Task, prepared: PreparedImage, setup: AgentSetup,
                      tag: str) -> None:
    """Run the set-up script in a container of the task image and tag the result as `tag`."""

    def run_script(builder: DockerEnvironment) -> None:
        builder.copy_in({"setup.sh": setup.content}, SETUP_DIR)
        result = builder.exec(f"bash {shlex.quote(SETUP_DIR)}/setup.sh", timeout_sec=task.config.build_timeout_sec,
                              env={"APP_DIR": builder.workdir})
        if result.exit_code != 0:
            what = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            raise InfraError(f"{setup.script} {what} in the image of {task.id}: {result.output.strip()[-800:]}",
                             stage="agent-setup")

    _build_layer(backend, task, prepared, tag, what=f"running {setup.script.name}", run=run_script,
                 labels={"script-sha": setup.digest}, culprit=str(setup.script))


def build_install_image(backend: Orchestrator, task: Task, prepared: PreparedImage, install: AgentInstall,
                        tag: str) -> None:
    """Run an agent's own install step in a container of `prepared` and tag the result as `tag`."""

    def run_install(builder: DockerEnvironment) -> None:
        try:
            install.install(builder)
        except InstallFailed as exc:
            raise install_error(install, exc, backend.agent_environment.setup_network, task.id) from exc

    _build_layer(backend, task, prepared, tag, what=f"{install.step} for {install.agent}", run=run_install,
                 labels={"agent": install.agent, "install-key": hashlib.sha256(install.key.encode()).hexdigest()},
                 culprit=f"{install.agent}'s install step ({install.step})")


def gist(output: str, *, head: int = 200, lines: int = 3, tail: int = 400) -> str:
    """A failed step's output for one line of a table: its first line and its last lines."""
    kept = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if len(kept) <= lines + 1:
        return " / ".join(kept)[: head + tail]
    first = kept[0] if len(kept[0]) <= head else kept[0][:head] + "..."
    return f"{first} ... {' / '.join(kept[-lines:])[-tail:]}"


def install_error(install: AgentInstall, failed: InstallFailed, network: str, task_id: str) -> InfraError:
    """The one error of a failed install step: which agent, which step, and why, in one line.
    Without network (none at all, or its downloads unreachable) it fails alike on every task
    image: `InstallUnreachable`, remembered for the agent."""
    step = f"{install.agent}: its install step ({install.step}, run once per task image in the agent set-up layer)"
    if network == "none":
        return InstallUnreachable(f"{step} needs the network, and the set-up container has none (network 'none'): "
                                  f"{gist(str(failed))}")
    if failed.unreachable:
        return InstallUnreachable(f"{step} needs the network, and what it downloads was not reachable from the "
                                  f"set-up container (network {network!r}): {gist(str(failed))}")
    return InfraError(f"{step} failed in the image of {task_id}: {gist(str(failed))}", stage="agent-setup")


def _build_layer(backend: Orchestrator, task: Task, prepared: PreparedImage, tag: str, *, what: str,
                 run: Callable[[DockerEnvironment], None], labels: dict[str, str], culprit: str) -> None:
    """`run` in a set-up container of `prepared` (with network), then commit it as `tag`."""
    backend.progress(f"agent set-up: {what} in the image of {task.id}")
    started = time.monotonic()
    spec = StartSpec(run_id=backend.run_id, item_id=f"agent-setup:{task.id}", attempt=0)
    with backend.start_container(prepared.image_id, task, spec, backend.agent_environment.setup_network, prepared.head,
                                 kind="agent-setup") as builder:
        run(builder)
        if prepared.head is not None:
            status = builder.exec("git status --porcelain --untracked-files=all", timeout_sec=120)
            if status.exit_code != 0 or status.stdout.strip():
                raise InfraError(
                    f"{culprit} changed the repository of {task.id} at {builder.workdir} "
                    f"({status.output.strip()[:300]}): install the agent's tools outside it", stage="agent-setup",
                )
        candidate = backend.commit(builder.container_id, {"kind": "agent-setup", "task": task.id, **labels,
                                                          "base-commit": prepared.head or ""})
    try:
        # The layer keeps the builder's idle command as its own: the suite always starts
        # containers with an explicit entrypoint, so it is never run.
        backend.keep_as(candidate, tag)
    finally:
        backend.remove_temp_image(candidate)
    backend.progress(f"agent set-up: {task.id} ready as {tag} in {time.monotonic() - started:.1f}s")

"""Repo-track states applied at each start, state snapshots, machine-track replay and fidelity.

A repo-track Residual State is a patch: every instance is a fresh container of the task image
into which the patch is applied (strict `git apply`, no commit) before the agent starts, the
same bytes onto the same image, so every instance starts from the same tree and none shares a
file system with another. The state is checked once per task image and patch (it applies, and
the validation hook accepts it, in a throwaway container), and the check is remembered in the
cache (`validated-states/`), so later runs skip it. Applying a patch costs one exec; committing
a snapshot costs seconds per state on slow storage drivers (benchmarks/bench_state_setup.py
prints both), which is why snapshots are no longer the default for patches.

A state can still be committed into `swe-residual-state:<task>-<state>-<hash of image id +
payload>` (always for the machine track; for patches when the backend is made with
`snapshot_repo_states=True`), applied once and validated in a throwaway container; every
instance is then a new container of that snapshot.

A machine-track state is rebuilt by replaying its `commands.jsonl` in a fresh container and
committing the result (the backend-neutral replay of environments/machine/: one-command entries
run on their own; keystroke entries are typed into a tmux session, machine/terminal.py). A commit holds files, installed software and configuration, not
running processes, so the snapshot records whether the replay left processes running that the
clean start did not have (machine/live.py; the replay's own idle terminal session does not count),
or what the state declares (`[machine] live_processes`). Such a state cannot be restored from
its snapshot alone: without engine checkpoints (CRIU, see `checkpoint_support()`), every
instance is a fresh container of the task image into which the commands are replayed again
("replay"); other machine states, keystroke ones included, start from the snapshot ("snapshot").
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import docker

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.states.patch_safety import check_patch_text
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.states.tool_replay import Replayed
from swe_residual.dataset.task import Task
from swe_residual.dataset.values import Track
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker.engine import (
    ENGINE_EXCEPTIONS,
    default_client,
    engine_errors,
    inspect_image,
    remove_images,
)
from swe_residual.environments.docker.environment import DockerEnvironment
from swe_residual.environments.docker.hygiene import LABEL, TEMP_REPO, owner_labels
from swe_residual.environments.docker.images import STATE_REPO, PreparedImage, slug
from swe_residual.environments.machine.listing import list_processes
from swe_residual.environments.machine.live import RESTORE_RULE
from swe_residual.environments.machine.replay import replay as replay_commands
from swe_residual.environments.machine.replay import restore_by_replay
from swe_residual.environments.verifier.outputs import Verdict

if TYPE_CHECKING:
    from swe_residual.environments.docker.orchestrator import Orchestrator

# How a machine-track instance holds its state: a CRIU checkpoint (files + live processes),
# the commands replayed into the instance (live processes restarted), or the committed
# snapshot (files only).
FIDELITY_CRIU, FIDELITY_REPLAY, FIDELITY_SNAPSHOT = "criu", "replay", "snapshot"
LIVE_LABEL = f"{LABEL}.live-processes"
LIVE_LIST_LABEL = f"{LABEL}.live-process-list"
LIVE_LIST_MAX_CHARS = 2000
REPO_STATE_RULE = "repo-uncommitted-measured-as-submitted"


# -- commits -------------------------------------------------------------------------------------
def commit(client: docker.DockerClient, container_id: str, labels: dict[str, str], backend_token: str) -> str:
    """Commit a container to a temporary tag owned by this process; returns the tag.

    The labels go in as LABEL changes of the commit itself (no extra image step): `swe-residual.<key>`
    for each of `labels`, plus `swe-residual=1` and the owner labels, so a sweep finds it.
    """
    tag = secrets.token_hex(8)
    owner = {LABEL: "1", **owner_labels(), f"{LABEL}.backend": backend_token}
    changes = [f"LABEL {LABEL}.{key}={json.dumps(value)}" for key, value in labels.items()]
    changes += [f"LABEL {key}={json.dumps(value)}" for key, value in owner.items()]
    with engine_errors(f"committing container {container_id[:12]}"):
        client.api.commit(container_id, repository=TEMP_REPO, tag=tag, changes=changes)
    return f"{TEMP_REPO}:{tag}"


def remove_temp_image(client: docker.DockerClient, tag: str) -> None:
    # By tag: untags when the image is also tagged as a snapshot, deletes it otherwise, so it
    # never lingers as a dangling image.
    remove_images(client, [tag])


# -- repo and machine states -----------------------------------------------------------------------
def state_tag(prepared: PreparedImage, task: Task, state: ResidualState) -> str:
    """The snapshot's tag: content-addressed by the task image and the state's payload."""
    if state.track == Track.REPO:
        payload = state.patch_path.read_bytes() if state.patch_path else b""
    else:
        payload = state.commands_path.read_bytes() if state.commands_path else b""
    parts = [prepared.image_id.encode(), state.track.encode(), payload]
    if state.track == Track.MACHINE:
        parts.append(f"restore-rule-{RESTORE_RULE}".encode())  # how its fidelity was decided
    else:
        # How it is started and measured (uncommitted; measured as submitted): a snapshot or a
        # measured marker of an earlier rule (a start that committed it) is never reused.
        parts.append(REPO_STATE_RULE.encode())
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
    return f"{STATE_REPO}:{slug(task.id, 50)}-{slug(state.id, 50)}-{key}"


def build_state_image(backend: Orchestrator, task: Task, state: ResidualState, prepared: PreparedImage,
                      tag: str) -> Verdict | None:
    """Apply (or replay) a state in a build container, validate it, and tag its snapshot; the
    validation's verdict (the state's measured initial statuses; None without a hook)."""
    backend.progress(f"snapshotting state {task.id}/{state.id}")
    started = time.monotonic()
    spec = StartSpec(run_id=backend.run_id, item_id=f"build:{task.id}/{state.id}", attempt=0)
    # A patch needs no network; replayed machine-track commands get the agent's.
    network = "none" if state.track == Track.REPO else task.config.agent_network_mode
    live = False
    with backend.start_container(prepared.image_id, task, spec, network, prepared.head, kind="build") as builder:
        if state.track == Track.REPO:
            apply_state_patch(builder, state)
        else:
            # The processes listed before and after the replay (the clean start's, to tell the replay's own).
            restored = restore_by_replay(builder, state, runner=builder)
            builder.replayed_outputs = list(restored.outputs)
            left = list(restored.live)
            live = state.live_processes if state.live_processes is not None else bool(left)
        labels = {"kind": "state", "task": task.id, "state": state.id, "base-commit": prepared.head or ""}
        if state.track == Track.MACHINE:
            labels["live-processes"] = "1" if live else "0"
            # What decided it, for `docker inspect` and the restore benchmark (bounded: a label).
            labels["live-process-list"] = json.dumps(left)[:LIVE_LIST_MAX_CHARS]
        candidate = backend.commit(builder.container_id, labels)
    try:
        verdict = validate_snapshot(backend, task, state, prepared, candidate, live, spec)
        backend.keep_as(candidate, tag)
    finally:
        backend.remove_temp_image(candidate)
    backend.progress(f"snapshotted state {task.id}/{state.id} in {time.monotonic() - started:.1f}s")
    return verdict


def validate_snapshot(backend: Orchestrator, task: Task, state: ResidualState, prepared: PreparedImage,
                      image: str, live: bool, spec: StartSpec | None = None) -> Verdict | None:
    """The validation hook on a state's snapshot `image`, in a throwaway container: the
    verifier's files never reach the snapshot. A state with live processes is validated the way
    its instances start: replayed. Returns the hook's verdict (None: no hook, or it gave none)."""
    if backend.validate_state is None:
        return None
    spec = spec or StartSpec(run_id=backend.run_id, item_id=f"measure:{task.id}/{state.id}", attempt=0)
    if live:
        trial = replayed_instance(backend, task, state, spec, prepared)
    else:
        trial = backend.start_container(image, task, spec, "none", prepared.head, kind="validate")
    with trial:
        return backend.validate_state(backend, trial, task, state)


def check_repo_state(backend: Orchestrator, task: Task, state: ResidualState,
                     prepared: PreparedImage) -> Verdict | None:
    """A patch state's one check: it applies strictly to the task image and the validation hook
    accepts the result, in a throwaway container that nothing is kept from; the hook's verdict."""
    backend.progress(f"checking state {task.id}/{state.id}")
    started = time.monotonic()
    spec = StartSpec(run_id=backend.run_id, item_id=f"check:{task.id}/{state.id}", attempt=0)
    verdict = None
    with backend.start_container(prepared.image_id, task, spec, "none", prepared.head, kind="validate") as trial:
        apply_state_patch(trial, state)
        if backend.validate_state is not None:
            verdict = backend.validate_state(backend, trial, task, state)
    backend.progress(f"checked state {task.id}/{state.id} in {time.monotonic() - started:.1f}s")
    return verdict


def apply_state_patch(environment: DockerEnvironment, state: ResidualState) -> None:
    """The state's patch onto a fresh instance's working tree (strict: no fuzz), in one command:
    `git apply` reads it from its standard input (every start of a Residual State pays this, so
    no file is written into the container and removed again). Nothing is committed: the
    state's history is the base's (the measurement commits it on a throwaway instance of its
    own, verifier/state_check.py)."""
    source = str(state.patch_path)
    patch = state.read_patch()
    check_patch_text(patch, source=source)
    if not patch.strip():
        return
    done = environment.run(["git", "apply", "--whitespace=nowarn", "-"], timeout_sec=120, cwd=environment.workdir,
                           stdin=patch.encode("utf-8", errors="surrogateescape"))
    if done.exit_code != 0:
        output = (done.stdout + done.stderr).decode(errors="replace").strip()[-500:]
        raise DatasetError(source, f"patch does not apply to the base commit: git apply: {output}")
    environment.quiet = True  # the harness's own `git apply` has ended: nothing is left running


def live_processes(environment: DockerEnvironment) -> list[str]:
    """Command lines of the processes running in a container besides its own idle ones."""
    return [process.args for process in list_processes(environment)]


def state_fidelity(client: docker.DockerClient, tag: str) -> str:
    """How instances of a machine state's snapshot hold it: "snapshot" or "replay"."""
    found = inspect_image(client, tag) or {}
    labels = (found.get("Config") or {}).get("Labels") or {}
    # CRIU restore is not implemented (no engine here supports checkpoints): live processes
    # are always restored by replay.
    return FIDELITY_REPLAY if labels.get(LIVE_LABEL) == "1" else FIDELITY_SNAPSHOT


def replayed_instance(backend: Orchestrator, task: Task, state: ResidualState, spec: StartSpec,
                      prepared: PreparedImage,
                      before_replay: Callable[[DockerEnvironment], None] | None = None) -> DockerEnvironment:
    """A fresh container of the task image with the state's commands replayed into it;
    `before_replay` sees the container at its clean start (Stage IV lists it there)."""
    environment = backend.start_container(prepared.image_id, task, spec, task.config.agent_network_mode,
                                          prepared.head)
    try:
        if before_replay is not None:
            before_replay(environment)
        replay(environment, state)
    except BaseException:
        environment.close()
        raise
    environment.fidelity = FIDELITY_REPLAY
    return environment


def replay(environment: DockerEnvironment, state: ResidualState) -> list[Replayed]:
    """Machine track: the predecessor's interactions, in order, in a fresh container
    (environments/machine/replay.py, its command lines run by the container's own `run`: stdin
    and uncapped output through the engine); returns the outputs of the commands that record
    what the predecessor saw (Stage IV compares them), kept on the environment too."""
    replayed = replay_commands(environment, state, runner=environment)
    environment.replayed_outputs = replayed
    return replayed


# -- checkpoints --------------------------------------------------------------------------------
def checkpoint_support(timeout_sec: float = 20.0, client: docker.DockerClient | None = None) -> dict[str, Any]:
    """Whether the engine can checkpoint live containers (an experimental daemon and a working
    `criu`); `supported` and the evidence for the report."""
    report: dict[str, Any] = {"experimental": None, "criu": None, "criu_check": None}
    try:
        client = client or default_client()
        version = client.version()
        experimental = version.get("Experimental")
        if experimental is None:  # older API versions: only `info` says it
            experimental = client.info().get("ExperimentalBuild")
        report["experimental"] = bool(experimental)
    except ENGINE_EXCEPTIONS:
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

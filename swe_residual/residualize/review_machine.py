"""`--replay` of Stage III: each machine-track candidate replayed once in a container of its
task's image, and what that left on the machine beyond the clean start (files, packages,
processes; environments/docker/machine_changes.py) kept as `<candidate>.machine.json` beside
the packet, for its review page. A candidate already replayed is not replayed again; one whose
replay fails keeps the error instead, which its page shows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.residualize.filter import candidates as stage_ii_candidates
from swe_residual.residualize.workdir import RunRef, Workdir, write_json
from swe_residual.dataset.states.state import load_state
from swe_residual.dataset.values import Track

REVIEW_RUN = "residualize-review"


def machine_changes_path(work: Workdir, ref: RunRef) -> Path:
    return work.root / "review" / ref.task / f"{ref.candidate}.machine.json"


def replay_changes(backend: Any, task: Any, state: Any, item: str) -> dict[str, Any]:
    """The state replayed into a fresh container of the task's (agent's) image: what it changed."""
    from swe_residual.environments.docker import states
    from swe_residual.environments.machine.listing import list_machine

    prepared = backend.agent_image(task)
    spec = StartSpec(backend.run_id, item, 1)
    with backend.start_container(prepared.image_id, task, spec, task.config.agent_network_mode,
                                 prepared.head) as environment:
        before = list_machine(environment)
        states.replay(environment, state)
        return changes_since(environment, before)


def changes_since(environment: Any, before: Any) -> dict[str, Any]:
    """What `environment` holds beyond its clean start (`before`, its listing then): files,
    packages, processes, and what each file it changed holds (deleted: "-"), for Kept on this track."""
    from swe_residual.environments.docker.machine_changes import machine_changes
    from swe_residual.environments.machine.kept import file_digests

    changes = machine_changes(environment, before).as_dict()
    files = changes["files"]
    changes["digests"] = file_digests(environment, sorted({*files["added"], *files["changed"], *files["deleted"]}))
    return changes


def replay_candidates(workdir: Path | str, *, backend: Any = None,
                      progress: Callable[[str], None] = print) -> list[Path]:
    """Replay every machine-track candidate not replayed yet; returns the files written."""
    work = Workdir(workdir)
    config = work.read_json("generate.json", stage="generate")
    tasks = {entry.task.id: entry.task for entry in load_dataset(config["dataset"]).entries}
    pending = [ref for ref in stage_ii_candidates(workdir)
               if tasks[ref.task].track == Track.MACHINE and not machine_changes_path(work, ref).is_file()]
    if not pending:
        return []
    own = backend is None
    if own:
        from swe_residual.environments.docker import DockerBackend

        backend = DockerBackend(run_id=REVIEW_RUN)
    written = []
    try:
        for ref in pending:
            task = tasks[ref.task]
            try:
                state = load_state(task, work.stage_state(ref, Track.MACHINE,
                                                         work.root / "review" / ref.task / f"{ref.candidate}.state"))
                data = replay_changes(backend, task, state, f"review:{ref.task}/{ref.candidate}")
            except (DatasetError, InfraError) as exc:
                data = {"error": str(exc)}
            written.append(write_json(machine_changes_path(work, ref), data))
            progress(f"Stage III: replayed {ref.task}/{ref.candidate}"
                     + (f" (failed: {data['error'][:200]})" if "error" in data else ""))
    finally:
        if own:
            backend.close()
    return written


def read_changes(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data

"""`dataset build --validate --repeats N --record`: Stage IV's repeated runs written into the manifest.

A state validated again with N >= 2 runs of the verifier and of the oracle, found as recorded
(included, the same per-test statuses, every run agreeing), gets a block in manifest.toml:

    [states."<task>/<state>".state.provenance.stage_iv.repeated]
    date, repeats, category, build_seconds (Stage IV on the tasks of this build), tasks_in_build,
    machine (cores and load average: a stable verdict means more on a loaded machine),
    stable, verifier_runs, oracle_runs, [.tests] (the per-test statuses of the runs)

and its `state.toml` is written again from the manifest, so the dataset says it without a
rebuild. A state with a problem is not recorded: the build names it and exits 1, and what to do
about it (drop the state, look at the task) is a person's decision.
"""

from __future__ import annotations

import datetime
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.published.manifest import MANIFEST, state_directory


@dataclass(frozen=True)
class Conditions:
    """Where and how long the repeated Stage IV ran (one build's, shared by its states)."""

    seconds: float
    tasks: tuple[str, ...]
    load_at_start: float
    load_at_end: float

    def machine(self) -> str:
        low, high = sorted((self.load_at_start, self.load_at_end))
        return f"{os.cpu_count()} cores, load average {low:.1f} to {high:.1f} (at the start and the end)"


def check_record(validate: bool, repeats: int) -> None:
    """--record is for a build that validates with repeated runs: a clear error before anything runs."""
    if not validate:
        raise ConfigError("--record writes Stage IV's repeated runs: it needs --validate")
    if repeats < 2:
        raise ConfigError(f"--record with --repeats {repeats}: a repeated run needs --repeats 2 or more")


def repeated_block(result: dict[str, Any], repeats: int, conditions: Conditions,
                   today: datetime.date) -> dict[str, Any]:
    """The block one state's revalidation result (revalidate.py) gives."""
    stability = result.get("stability") or {}
    return {"date": today.isoformat(), "repeats": repeats, "category": result["category"],
            "build_seconds": round(conditions.seconds, 1), "tasks_in_build": list(conditions.tasks),
            "machine": conditions.machine(), "stable": bool(stability.get("stable")),
            "verifier_runs": list(stability.get("verifier_runs") or []),
            "oracle_runs": list(stability.get("oracle_runs") or []),
            "tests": dict(result.get("tests") or {})}


def record_repeats(directory: Path, validation: dict[str, dict[str, Any]], repeats: int, conditions: Conditions,
                   today: datetime.date | None = None) -> list[str]:
    """Write the block of every state of `validation` that validated as recorded into
    `directory`'s manifest and its state.toml; the `<task>/<state>` keys written, in order."""
    path = directory / MANIFEST
    manifest = tomllib.loads(path.read_text(encoding="utf-8"))
    states = manifest.get("states") or {}
    written: list[str] = []
    for key, result in sorted(validation.items()):
        if result.get("problem") or key not in states:
            continue
        if not (result.get("stability") or {}).get("stable"):
            continue  # not repeated (no stability) or unstable: a problem already, never recorded
        state = states[key].setdefault("state", {})
        stage_iv = state.setdefault("provenance", {}).setdefault("stage_iv", {})
        stage_iv["repeated"] = repeated_block(result, repeats, conditions, today or datetime.date.today())
        task_id, _, state_id = key.partition("/")
        state_dir = state_directory(directory, task_id, state_id)
        if state_dir.is_dir():
            (state_dir / "state.toml").write_text(tomlwrite.dumps(state), encoding="utf-8")
        written.append(key)
    if written:
        path.write_text(tomlwrite.dumps(manifest), encoding="utf-8")
    return written

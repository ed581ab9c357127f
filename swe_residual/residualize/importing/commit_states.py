"""`--left-out`: one Residual State per source file of the fix, the fix minus that file.

"Left-out files" is the most common pattern predecessors leave (paper §4): a change that is
right where it was made, and missing where it was not. Each state is `changes.patch` (the
fix's source diff without the file, applied at the base commit without a commit) and
`state.toml`, kept only when the verifier fails on it; a state that passes anyway is dropped
with the reason printed. state.toml holds no wall-clock time (the fix commit's date stands
for when), so importing twice gives the same bytes.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.residualize.importing.commit_measure import run_verifier_on
from swe_residual.residualize.importing.commit_source import FixCommit
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.reconstruct import STATE_SCHEMA, _validation_table  # the Stage IV table, not a copy
from swe_residual.dataset.task import Task
from swe_residual.environments.verifier.outputs import PASSED, Verdict
from swe_residual.dataset.values import Track

PREDECESSOR = "left-out"
PATCH = "changes.patch"


@dataclass(frozen=True)
class LeftOut:
    state_id: str
    path: str  # the source file the state leaves out
    kept: bool
    reason: str  # why it was dropped, or its verdict


def state_ids(paths: list[str]) -> dict[str, str]:
    """`left-out-<slug of the path>` per left-out file, unique within the task."""
    ids: dict[str, str] = {}
    for path in paths:
        slug = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")[:80].rstrip("-") or "file"
        candidate, number = f"{PREDECESSOR}-{slug}", 2
        while candidate in ids.values():
            candidate, number = f"{PREDECESSOR}-{slug}-{number}", number + 1
        ids[path] = candidate
    return ids


def _state_toml(fix: FixCommit, path: str, command: str, validation: dict[str, Any]) -> str:
    short = fix.sha[:12]
    return tomlwrite.dumps({
        "schema": STATE_SCHEMA,
        "track": Track.REPO,
        "predecessor": PREDECESSOR,
        "source_run": f"import-commit:{fix.sha}",
        "patch": PATCH,
        "patterns": ["left-out-file"],
        "description": f"The fix {short} without its change to {path}: every other source file is as the "
                       "fix left it, this one as it was before.",
        "provenance": {
            "pipeline": "swe-residual import commit",
            "source_repo": str(fix.location),
            "fix_commit": fix.sha,
            "source_base_commit": fix.parent_sha,
            "left_out_file": path,
            "imported_by": command,
            "date": fix.date,
        },
        "validation": validation,
    })


def _validate(backend: Any, task: Task, patch: str, state_id: str, run_id: str) -> tuple[Verdict | None, str]:
    """(the verdict of a failing state, "") or (None, why the state cannot be kept)."""
    try:
        verdict = run_verifier_on(backend, task, patch, state_id, run_id)
    except (DatasetError, InfraError) as exc:
        return None, f"could not be validated: {exc}"
    if not verdict.valid:
        return None, f"no valid verdict: {verdict.error}"
    if verdict.success:
        return None, "the verifier passes on it anyway"
    return verdict, ""


def write_left_out_states(
    backend: Any, task: Task, fix: FixCommit, command: str, run_id: str,
    progress: Callable[[str], None] = print,
) -> list[LeftOut]:
    """Write, validate and keep (or drop) one state per source file of the fix."""
    sources = [change.path for change in fix.source_changes]
    residual = task.path / "residual"
    if len(sources) < 2:
        progress(f"--left-out: the fix changes {len(sources)} source file(s); leaving it out leaves the base "
                 "itself, which is the Clean Start, so no state is made")
        return []
    results = []
    for path, state_id in state_ids(sources).items():
        directory = residual / state_id
        directory.mkdir(parents=True)
        patch = fix.diff([other for other in sources if other != path])
        (directory / PATCH).write_bytes(patch)
        verdict, reason = _validate(backend, task, patch.decode("utf-8", errors="surrogateescape"), state_id, run_id)
        if verdict is None:
            shutil.rmtree(directory)
            progress(f"dropped {state_id} (leaves out {path}): {reason}")
            results.append(LeftOut(state_id, path, False, reason))
            continue
        validation = _validation_table(verdict)
        (directory / "state.toml").write_text(_state_toml(fix, path, command, validation), encoding="utf-8")
        failing = sorted(test for test, status in verdict.tests.items() if status != PASSED)
        summary = f"fails {len(failing)} of {len(verdict.tests)} test(s): {', '.join(failing)}"
        progress(f"kept {state_id} (leaves out {path}): {summary}")
        results.append(LeftOut(state_id, path, True, summary))
    if residual.is_dir() and not any(residual.iterdir()):
        residual.rmdir()
    return results

"""Opened and Inspected of one run, against what its start inherited, on either track.

Repo track: the candidates are the files the inherited patch and the reference solution
change, relative to the repository root (the workdir). Machine track: the files the
predecessor added, changed or deleted anywhere on the machine (the state's `machine.json`,
written by Stage IV), as absolute paths; each step starts in the workdir, and a path it names
counts wherever it lies. A machine-track state without that record has no inherited files to
look at (only `git status`/`git diff` count, as before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from swe_residual.trial.steps.inspection import inspected, opened_files


def opened_and_inspected(steps: list[Mapping[str, Any]], *, workdir: str, residual: bool,
                         predecessor_files: set[str], reference_files: Iterable[str] | None,
                         machine_paths: set[str] | None) -> tuple[list[str], bool | None]:
    """(Opened: the candidate files whose contents a step showed, sorted; Inspected: None for a
    clean start). `machine_paths` (absolute) replaces `predecessor_files` on the machine track."""
    if machine_paths is not None:
        anywhere = {path.lstrip("/") for path in machine_paths}  # relative to "/", the machine's root
        opened = {"/" + path for path in opened_files(steps, anywhere, root="/", start=workdir)}
        return sorted(opened), (inspected(steps, anywhere, root="/", start=workdir) if residual else None)
    candidates = set(reference_files or []) | predecessor_files
    opened = opened_files(steps, candidates, root=workdir)
    return sorted(opened), (inspected(steps, predecessor_files, root=workdir) if residual else None)

"""Which task directory a Harbor trial ran: by Harbor's task path and checksum, never by name alone.

A trial's config.json and result.json name the task it ran (`task.path`, or a git or package
id) and result.json records `task_checksum`, the checksum of that directory's content when
the trial ran (harbor_checksum.py). A directory is the trial's task when its checksum now is
the recorded one. The directory is looked for at the recorded path first; when that path is
not on this machine (trials copied from elsewhere), among the directories the caller offers for
the trial's name (a dataset's task, an export's start), and the checksum decides. No checksum,
a different one, or no directory at all: the trial is not matched, and the reason says which.

A dataset task's own directory may have gained `residual/` since Harbor ran it (the suite's
states, which Harbor never reads and an export leaves out): its checksum is also taken
without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from swe_residual.residualize.harbor.checksum import Unverifiable, task_checksum
from swe_residual.dataset.harbor_layout import HarborTrial

SUITE_ONLY = ("residual",)


@dataclass
class Checksums:
    """Directory checksums, each computed once per import."""

    known: dict[tuple[Path, tuple[str, ...]], str | Unverifiable] = field(default_factory=dict)

    def of(self, directory: Path, without: tuple[str, ...] = ()) -> str:
        key = (directory.resolve(), without)
        if key not in self.known:
            try:
                self.known[key] = task_checksum(directory, without=without)
            except Unverifiable as exc:
                self.known[key] = exc
        found = self.known[key]
        if isinstance(found, Unverifiable):
            raise found
        return found


def local_task_dir(trial: HarborTrial) -> Path | None:
    """The directory at the trial's recorded task path, when it is on this machine."""
    if not trial.task_path:
        return None
    candidate = Path(trial.task_path).expanduser()
    return candidate if candidate.is_absolute() and (candidate / "task.toml").is_file() else None


def checksum_problem(trial: HarborTrial, directory: Path, checksums: Checksums, *, dataset_task: bool) -> str | None:
    """None when `directory` is the one the trial ran (same checksum); else why it is not."""
    if not trial.task_checksum:
        return (f"result.json records no task_checksum: which content of the task {trial.task_name!r} it ran "
                "cannot be told")
    variants = [()] + ([SUITE_ONLY] if dataset_task and (directory / SUITE_ONLY[0]).is_dir() else [])
    try:
        found = [checksums.of(directory, without) for without in variants]
    except Unverifiable as exc:
        return f"the checksum of {directory} cannot be computed here: {exc}"
    if trial.task_checksum in found:
        return None
    # The folder by its name: the note is recorded with the run, and the path is this machine's.
    return (f"task_checksum {trial.task_checksum[:16]} in result.json differs from {found[0][:16]}, the "
            f"dataset's {directory.name}: the task changed since the trial ran, or another task has its name")


def pick(trial: HarborTrial, candidates: Iterable[tuple[Path, bool]], checksums: Checksums) -> tuple[Path | None, str]:
    """(the candidate directory whose checksum is the trial's, None and why none is).

    `candidates` are (directory, whether it is a dataset task's own directory), best first.
    """
    reasons = []
    seen: set[Path] = set()
    for directory, dataset_task in candidates:
        if directory.resolve() in seen:
            continue
        seen.add(directory.resolve())
        problem = checksum_problem(trial, directory, checksums, dataset_task=dataset_task)
        if problem is None:
            return directory, ""
        reasons.append(problem)
    return None, "; ".join(reasons)


def export_source(directory: Path) -> tuple[str, str | None] | None:
    """(source task, source state or None) of a task directory `swe-residual export harbor`
    wrote (its `[metadata] swe_residual_*` keys), or None when it is not one."""
    import tomllib

    try:
        config = tomllib.loads((directory / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    metadata = config.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("swe_residual_source_task"), str):
        return None
    state = metadata.get("swe_residual_source_state")
    return metadata["swe_residual_source_task"], state if isinstance(state, str) and state else None

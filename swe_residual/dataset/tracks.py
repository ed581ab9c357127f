"""Which track a task is on, for tasks run as they are published (DESIGN §4).

Real Terminal-Bench 2 and DeepSWE tasks carry no `[metadata] track`: the suite places them by
one documented rule, first match wins, and says why (`swe-residual validate` prints it):

1. `[metadata] track` in task.toml: the task's own word.
2. The dataset's override: `swe-residual.toml` at the dataset root,
   `[tracks] default = "machine"` and/or `[tracks.tasks] "<task-id>" = "repo"`, for what the
   rule below cannot know (a task id there wins over `default`).
3. Its Residual States: `changes.patch` files are repository diffs (repo); `commands.jsonl`
   files are terminal interactions (machine).
4. Its verifier: a base commit (`[metadata] base_commit_hash`) with a `separate` verifier is a
   repository graded from the agent's committed work, as DeepSWE is (repo); a verifier that
   shares the agent's environment sees the whole machine the agent leaves, as Terminal-Bench's
   does (machine). A separate verifier without a base commit grades only what is collected:
   repo, since nothing of the machine reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.toml_fields import FieldReader, read_toml
from swe_residual.dataset.values import Track

REPO, MACHINE = Track.REPO, Track.MACHINE
TRACKS = tuple(Track)
DATASET_SETTINGS_FILE = "swe-residual.toml"


@dataclass(frozen=True)
class TrackOverrides:
    """`[tracks]` of a dataset's `swe-residual.toml`."""

    default: str | None = None
    tasks: tuple[tuple[str, str], ...] = ()
    source: Path | None = None

    def for_task(self, task_id: str) -> tuple[str, str] | None:
        """(track, reason) the dataset sets for `task_id`, or None."""
        for name, track in self.tasks:
            if name == task_id:
                return track, f"{self.source} [tracks.tasks] {name!r}"
        if self.default is not None:
            return self.default, f"{self.source} [tracks] default"
        return None


def read_overrides(dataset_root: Path) -> TrackOverrides:
    """The dataset's track overrides (none when it has no `swe-residual.toml`)."""
    path = dataset_root / DATASET_SETTINGS_FILE
    if not path.is_file():
        return TrackOverrides()
    reader = FieldReader(path, read_toml(path))
    default = reader.get("tracks.default", str, None)
    _check(reader, "tracks.default", default)
    tasks = reader.table("tracks.tasks")
    for name, track in tasks.items():
        if not isinstance(track, str):
            raise DatasetError(path, f"expected a track name, got {track!r}", field=f"tracks.tasks.{name}")
        _check(reader, f"tracks.tasks.{name}", track)
    return TrackOverrides(default=default, tasks=tuple(sorted(tasks.items())), source=path)


def _check(reader: FieldReader, field: str, track: str | None) -> None:
    if track is not None and track not in TRACKS:
        raise DatasetError(reader.path, f"unknown track {track!r} (one of {', '.join(TRACKS)})", field=field)


def states_track(task_dir: Path) -> str | None:
    """The track the task's Residual States imply, or None (no states, or of both kinds)."""
    residual = task_dir / "residual"
    if not residual.is_dir():
        return None
    kinds = set()
    for state_dir in residual.iterdir():
        if not state_dir.is_dir() or state_dir.name.startswith("."):
            continue
        if (state_dir / "changes.patch").is_file():
            kinds.add(REPO)
        if (state_dir / "commands.jsonl").is_file():
            kinds.add(MACHINE)
    return kinds.pop() if len(kinds) == 1 else None


def verifier_track(base_commit: str | None, environment_mode: str) -> tuple[str, str]:
    """(track, reason) from the verifier's set-up alone (rule 4)."""
    if environment_mode == "shared":
        return MACHINE, "the verifier shares the agent's environment (it sees the whole machine)"
    if base_commit is not None:
        return REPO, "a base commit and a separate verifier (graded from the agent's committed work)"
    return REPO, "a separate verifier (only collected artifacts reach it)"


def resolve_track(task_dir: Path, declared: str | None, base_commit: str | None, environment_mode: str,
                  overrides: TrackOverrides | None = None) -> tuple[str, str]:
    """(track, why) of one task, by the rule of this module's docstring."""
    if declared is not None:
        return declared, "task.toml [metadata] track"
    dataset = overrides.for_task(task_dir.name) if overrides is not None else None
    if dataset is not None:
        return dataset
    from_states = states_track(task_dir)
    if from_states == REPO:
        return REPO, "its Residual States are patches (changes.patch)"
    if from_states == MACHINE:
        return MACHINE, "its Residual States are terminal interactions (commands.jsonl)"
    return verifier_track(base_commit, environment_mode)

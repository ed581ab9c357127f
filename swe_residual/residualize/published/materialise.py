"""`swe-residual dataset build DIR --fetch | --source NAME=PATH ...`: a published dataset from its sources.

Reads `DIR/manifest.toml` (manifest.py) and, from clones of the repositories it names (fetched
into the cache with `--fetch`, fetch.py, or given by hand with `--source NAME=PATH`: any clone
that holds the commit, bare, partial or checked out elsewhere; a given one wins), for the tasks
and states chosen (`--task`, `--runs-from`; all by default) and only from the sources those need:

- each task folder, as published, into `DIR/<task>/` (its content checksum must be the
  manifest's: a task changed upstream is refused, not silently used);
- each source's licence file, as `DIR/LICENSE.<source>`;
- each state's `DIR/<task>/residual/<state>/`: `commands.jsonl` made from the trial's
  `commands.txt` by the same reader `swe-residual import terminal-bench` uses (tb_keys.py), or,
  for a source of Harbor job directories (`runs_format = "harbor-jobs"`), from the trial's
  `agent/trajectory.json` as `import harbor-jobs` reads it (keystrokes or tool calls), whose
  SHA-256 must be the manifest's; `state.toml` as the manifest records it (provenance, review,
  per-test statuses and Stage IV results); `recorded-pane.txt`, the trial's `panes/post-agent.txt`
  or the screen a Terminus-2 trial's `agent/terminus_2.pane` log leaves (what Stage IV compares
  the replayed pane with); for a source of DeepSWE run folders (`runs_format` "codex-runs",
  "pi-runs" or "deepswe-trials": repository-track states), `changes.patch` is the run's own
  `model.patch` (`artifacts/model.patch` in pi's and the release's folders), whose SHA-256 must
  be the manifest's `patch_sha256`, beside `state.toml`.

Everything written is ignored by git (the directory's own `.gitignore`); only the manifest is
the repository's. With `--validate`, Stage IV runs again on every state (reconstruct.py: it
fails the verifier as published, the oracle solves it, two replays agree, the replayed pane
matches) and each result is printed beside the one the manifest records; with `--record` (and
`--repeats` N >= 2), the repeated runs of each state found as recorded are written into the
manifest (repeated.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.importing import git_source
from swe_residual.residualize.importing.tb_keys import read_trial_keys
from swe_residual.residualize.published.repeated import Conditions, check_record, record_repeats
from swe_residual.residualize.published.manifest import Manifest, StateRef, read_manifest, state_directory
from swe_residual.residualize.harbor.terminus import PANE_LOG, read_keystrokes, recorded_screen
from swe_residual.residualize.harbor.tool_calls import interactions_jsonl
from swe_residual.residualize.harbor.episode_tools import read_any_tool_calls
from swe_residual.residualize.harbor.responses_tools import EVENT_FILES
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.workdir import COMMANDS, PATCH, RECORDED_PANE

# What a trial folder holds that the keys' reader uses (the rest: agent logs, casts of tests).
TRIAL_FILES = ("results.json", "commands.txt", "sessions/agent.cast", "panes/post-agent.txt")
# A Harbor trial: its ATIF trajectory, and the session's working directory (OpenClaw); or an
# agent's episodes (ktb-openrouter: each answer, its tool results, the long ones' files, and the
# config's command deadline), not their requests (each the whole conversation so far); or a
# harness's events file (ThinHarness, Pi: harbor/responses_tools.py); or pre.dev's collected
# trajectory, the manifest saying where it was collected from, and the log of its set-up
# (harbor/predev_tools.py). Patterns (fnmatch), matched against the paths below the trial.
HARBOR_TRIAL_FILES = ("agent/trajectory.json", "agent/openclaw-session.jsonl", PANE_LOG, "config.json",
                      "agent/episodes/episode-*/response.json", "agent/episodes/episode-*/tool-results.json",
                      "agent/persisted-tool-results/episode-*/tool-*.txt", *EVENT_FILES,
                      "artifacts/trajectory.json", "artifacts/manifest.json", "trial.log")
TERMINAL_BENCH, HARBOR_JOBS = "terminal-bench", "harbor-jobs"
# DeepSWE run folders (importing/codex_runs.py, pi_runs.py, deepswe_trials.py): where each keeps
# the patch its run submitted, which is the repository-track state as it is.
RUN_PATCHES = {"codex-runs": "model.patch", "pi-runs": "artifacts/model.patch",
               "deepswe-trials": "artifacts/model.patch"}


@dataclass
class BuildReport:
    tasks: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    validation: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)  # states whose repeated runs --record wrote


@dataclass(frozen=True)
class Selection:
    """What one build writes: tasks, states, and the sources they are read from."""

    tasks: list[str]
    states: list[StateRef]
    sources: list[str]


def select(manifest: Manifest, tasks: frozenset[str] | None = None,
           runs_from: frozenset[str] | None = None) -> Selection:
    """The tasks `tasks` names (all when None) and their states from the sources `runs_from` names
    (all when None); with `runs_from`, only the tasks those states are on. A source is needed when
    a chosen task or state is read from it: no other source has to be given or fetched."""
    unknown = sorted(set(tasks or ()) - set(manifest.tasks))
    if unknown:
        raise ConfigError(f"--task {', '.join(unknown)}: not a task of {manifest.path} "
                          f"({', '.join(sorted(manifest.tasks))})")
    runs = {s.source for s in manifest.states}
    unknown = sorted(set(runs_from or ()) - runs)
    if unknown:
        raise ConfigError(f"--runs-from {', '.join(unknown)}: not a source of states in {manifest.path} "
                          f"({', '.join(sorted(runs))})")
    states = [s for s in manifest.states
              if (tasks is None or s.task_id in tasks) and (runs_from is None or s.source in runs_from)]
    chosen = [t for t in manifest.tasks if (tasks is None or t in tasks)
              and (runs_from is None or any(s.task_id == t for s in states))]
    needed = {manifest.tasks[t].source for t in chosen} | {s.source for s in states}
    return Selection(chosen, states, [name for name in manifest.sources if name in needed])


def _read_at(manifest: Manifest, chosen: Selection, name: str) -> tuple[str, ...]:
    """The paths of source `name` this build reads: its licence, chosen task folders and trials."""
    licence = manifest.sources[name].licence_path
    return tuple(dict.fromkeys([*([licence] if licence else []),
                                *(manifest.tasks[t].path for t in chosen.tasks if manifest.tasks[t].source == name),
                                *(s.trial for s in chosen.states if s.source == name)]))


def _sources(manifest: Manifest, chosen: Selection, given: dict[str, Path], fetch: bool, cache: Path | None,
             progress: Callable[[str], None]) -> dict[str, Path]:
    """The clone of each needed source: the one given (`--source`), else fetched into the cache."""
    needed = chosen.sources
    unknown = sorted(set(given) - set(manifest.sources))
    if unknown:
        raise ConfigError(f"--source {', '.join(unknown)}: not a source of {manifest.path} "
                          f"({', '.join(manifest.sources)})")
    # A clone given for one source serves every source read from the same repository (tb2-residual's
    # three trustedrouter-* sources are folders of one repository): one --source for each repository.
    clones = {manifest.sources[name].repository: path for name, path in given.items()}
    given = {**{name: clones[manifest.sources[name].repository] for name in needed
                if manifest.sources[name].repository in clones}, **given}
    missing = [name for name in needed if name not in given]
    if missing and not fetch:
        raise ConfigError(f"{manifest.path}: no --source for {', '.join(missing)} "
                          f"(give each as NAME=PATH, a local clone holding the commit, or --fetch to clone them)")
    for name in needed:
        if name in given and not git_source.has_commit(given[name], manifest.sources[name].commit):
            source = manifest.sources[name]
            if source.runs_format in RUN_PATCHES and _is_copy(given[name]):
                continue  # the run folders' files as the commit holds them; each patch's SHA-256 is checked
            raise ConfigError(f"--source {name}={given[name]}: commit {source.commit} of {source.repository} "
                              "is not in it (fetch it first)")
    repos = {name: given[name] for name in needed if name in given}
    if missing:
        from swe_residual.residualize.published.fetch import Wanted, fetch_sources

        wanted = {name: Wanted(manifest.sources[name].repository, manifest.sources[name].commit,
                               _read_at(manifest, chosen, name)) for name in missing}
        repos.update(fetch_sources(wanted, cache, progress))
    return repos


def _write_task(manifest: Manifest, task_id: str, repo: Path, target: Path) -> None:
    ref = manifest.tasks[task_id]
    commit = manifest.sources[ref.source].commit
    files, contents = git_source.read_folder(repo, commit, ref.path)
    checksum = git_source.folder_checksum(contents)
    if checksum != ref.sha256:
        raise ConfigError(f"task {task_id}: {ref.path} at {commit[:12]} has checksum {checksum}, "
                          f"the manifest records {ref.sha256}")
    shutil.rmtree(target, ignore_errors=True)
    git_source.write_folder(files, contents, target)


def _write_licence(manifest: Manifest, name: str, repo: Path, directory: Path) -> None:
    source = manifest.sources[name]
    if not source.licence_path:
        return
    data = git_source.read_file(repo, source.commit, source.licence_path)
    if source.licence_sha256 and hashlib.sha256(data).hexdigest() != source.licence_sha256:
        raise ConfigError(f"source {name}: {source.licence_path} differs from the manifest's checksum")
    (directory / f"LICENSE.{name}").write_bytes(data)


def harbor_trial_commands(folder: Path, trial: str) -> tuple[bytes, bytes | None]:
    """A Harbor trial's interactions as `import harbor-jobs` reads them: Terminus-2's keystrokes
    (with the screen its pane log leaves), else the tool calls of an agent that acted through tools
    (its ATIF trajectory, else its episodes' bash calls)."""
    keys = read_keystrokes(folder)
    if keys is not None:
        return interactions_jsonl(keys.interactions), recorded_screen(folder)
    tools = read_any_tool_calls(folder)
    if tools is None or tools.refused is not None:
        raise ConfigError(f"{trial}: {tools.refused if tools else 'no keystrokes and no tool calls'}")
    return interactions_jsonl(tools.interactions), None


def trial_commands(repo: Path, commit: str, trial: str, runs_format: str = TERMINAL_BENCH) -> tuple[bytes, bytes | None]:
    """The trial's keys (or tool calls) as commands.jsonl, and its recorded post-agent pane (None if absent)."""
    with tempfile.TemporaryDirectory(prefix="swe-residual-trial-") as scratch:
        folder = Path(scratch)
        listed = {f.path: f for f in git_source.tree_files(repo, commit, trial)}
        if runs_format == HARBOR_JOBS:
            for name in listed:
                if any(fnmatch.fnmatchcase(name, pattern) for pattern in HARBOR_TRIAL_FILES):
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_bytes(git_source.read_blob(repo, listed[name].blob))
            return harbor_trial_commands(folder, trial)
        for name in TRIAL_FILES:
            if name in listed:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(git_source.read_blob(repo, listed[name].blob))
        keys = read_trial_keys(folder)
        if isinstance(keys, str):
            raise ConfigError(f"{trial}: {keys}")
        pane = folder / "panes" / "post-agent.txt"
        return keys.commands_jsonl(), pane.read_bytes() if pane.is_file() else None


def _is_copy(path: Path) -> bool:
    """A folder of files laid out as the repository (not a git repository): for a source of run
    folders whose files can be had without a clone (one file at a time through a hosting API)."""
    return path.is_dir() and subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"],
                                            capture_output=True).returncode != 0


def run_patch(repo: Path, commit: str, trial: str, runs_format: str) -> bytes:
    """A DeepSWE run folder's submitted patch (RUN_PATCHES), as its repository holds it at the
    commit (or a copy of its files holds it: the caller checks its SHA-256)."""
    if runs_format not in RUN_PATCHES:
        raise ConfigError(f"{trial}: runs_format {runs_format!r} has no patch ({', '.join(RUN_PATCHES)} have)")
    path = f"{trial.rstrip('/')}/{RUN_PATCHES[runs_format]}"
    if _is_copy(repo):
        if not (repo / path).is_file():
            raise ConfigError(f"{repo}: no {path}")
        return (repo / path).read_bytes()
    return git_source.read_file(repo, commit, path)


def _write_patch_state(manifest: Manifest, state: StateRef, repo: Path, directory: Path) -> None:
    source = manifest.sources[state.source]
    patch = run_patch(repo, source.commit, state.trial, source.runs_format)
    digest = hashlib.sha256(patch).hexdigest()
    if digest != state.patch_sha256:
        raise ConfigError(f"state {state.task_id}/{state.state_id}: {state.trial}/{RUN_PATCHES[source.runs_format]} "
                          f"has SHA-256 {digest}, the manifest records {state.patch_sha256}")
    target = state_directory(directory, state.task_id, state.state_id)
    target.mkdir(parents=True, exist_ok=True)
    (target / PATCH).write_bytes(patch)  # applied uncommitted at every start, like every repo-track state
    (target / "state.toml").write_text(tomlwrite.dumps(state.state), encoding="utf-8")


def _write_state(manifest: Manifest, state: StateRef, repo: Path, directory: Path) -> None:
    if state.patch_sha256:
        _write_patch_state(manifest, state, repo, directory)
        return
    commit = manifest.sources[state.source].commit
    commands, pane = trial_commands(repo, commit, state.trial, manifest.sources[state.source].runs_format)
    digest = hashlib.sha256(commands).hexdigest()
    if digest != state.commands_sha256:
        raise ConfigError(f"state {state.task_id}/{state.state_id}: the keys of {state.trial} give commands.jsonl "
                          f"{digest}, the manifest records {state.commands_sha256}")
    target = state_directory(directory, state.task_id, state.state_id)
    target.mkdir(parents=True, exist_ok=True)
    (target / COMMANDS).write_bytes(commands)
    (target / "state.toml").write_text(tomlwrite.dumps(state.state), encoding="utf-8")
    if pane is not None:
        (target / RECORDED_PANE).write_bytes(pane)


def _stale_tasks(manifest: Manifest, directory: Path) -> list[Path]:
    """Task folders an earlier build wrote that the manifest no longer names: everything here but
    the manifest is written by the build (the directory's .gitignore), so they are not kept."""
    return sorted(child for child in directory.iterdir()
                  if child.is_dir() and (child / "task.toml").is_file() and child.name not in manifest.tasks)


def build(directory: Path, sources: dict[str, Path], *, validate: bool = False, backend_name: str = "docker",
          progress: Callable[[str], None] = print, machine_trust: str | None = None,
          tasks: frozenset[str] | None = None, runs_from: frozenset[str] | None = None,
          fetch: bool = False, cache: Path | None = None, repeats: int = 1, record: bool = False) -> BuildReport:
    """Write the tasks and states (those of `tasks`, from the sources of runs `runs_from`, when
    given) from the clones `sources` gives and, with `fetch`, the others fetched into `cache`;
    with `validate`, Stage IV again on the states written; with `record`, the repeated runs of
    those found as recorded written into the manifest (repeated.py)."""
    if record:
        check_record(validate, repeats)
    manifest = read_manifest(directory)
    chosen = select(manifest, tasks, runs_from)
    repos = _sources(manifest, chosen, sources, fetch, cache, progress)
    report = BuildReport()
    for name in chosen.sources:
        _write_licence(manifest, name, repos[name], directory)
    for task_id in chosen.tasks:
        _write_task(manifest, task_id, repos[manifest.tasks[task_id].source], directory / task_id)
        report.tasks.append(task_id)
    for state in chosen.states:
        _write_state(manifest, state, repos[state.source], directory)
        report.states.append(f"{state.task_id}/{state.state_id}")
    for stale in _stale_tasks(manifest, directory):
        shutil.rmtree(stale)  # a task the manifest no longer names (its states left the dataset)
        progress(f"removed {stale}: not a task of the manifest")
    progress(f"{manifest.name}: {len(report.tasks)} task(s), {len(report.states)} state(s) written to {directory}")
    if validate:
        from swe_residual.residualize.published.revalidate import revalidate

        started, load_at_start = time.monotonic(), os.getloadavg()[0]
        report.validation = revalidate(directory, manifest, backend_name=backend_name, progress=progress,
                                       machine_trust=machine_trust, states=frozenset(report.states), repeats=repeats)
        report.problems = [f"{key}: {result['problem']}" for key, result in report.validation.items()
                           if result.get("problem")]
        if record:
            conditions = Conditions(time.monotonic() - started, tuple(report.tasks), load_at_start, os.getloadavg()[0])
            report.recorded = record_repeats(directory, report.validation, repeats, conditions)
    return report

"""`swe-residual import deepswe-trials SOURCE --dataset DATASET --out WORK`: DeepSWE's own trials.

SOURCE is either trial directories in the release's layout (one trial directory, or a
directory holding them), or the release's index (`trials.json`, a path or an http(s) URL):
its rows, narrowed by `--model`, `--config`, `--task`, `--outcome` and `--limit` and by the
dataset's tasks, are fetched into `--cache` (deepswe_fetch.py) and then read as trial
directories. A trial directory of the release holds

    agent/trajectory.json        ATIF: mini-swe-agent's steps (bash tool calls and their output)
    agent/mini-swe-agent.txt     mini-swe-agent's own log (kept, not read)
    artifacts/model.patch        the committed diff against the task's base commit: the final state
    verifier/reward.json         DeepSWE v1.1's verdict: reward, f2p/p2p counts
    verifier/ctrf.json           per-test statuses, `[f2p] ...` / `[p2p] ...`
    verifier/test-stdout.txt     the verifier's output; verifier/reports/: raw base/new reports
    index-row.json               (written by the fetch) the trial's row of trials.json

Declared done: mini-swe-agent ends a run the agent submitted with the agent's last command
`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`; a trajectory that ends otherwise stopped without
declaring the task done (`agent_error`, Stage II: not_submitted), and one without a trajectory
cannot say (also not submitted). The predecessor is the row's `config`
(`mini_swe_agent_claude_fable_5_high`: harness, model and effort), else `mini-swe-agent` and
the trajectory's model.
"""

from __future__ import annotations

import argparse
import shlex
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swe_residual.agents.atif import atif_to_trajectory
from swe_residual.dataset.errors import ConfigError
from swe_residual.dataset.harbor_layout import parse_time, format_time
from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.values import Termination
from swe_residual.residualize.importing.deepswe_fetch import (INDEX_ROW, RELEASE, Selection, fetch_trial, is_url, load_index, read_location,
                                                              load_release, select, sibling)
from swe_residual.residualize.importing.deepswe_runs import (RunFacts, add_common_arguments, find_task, read_json_file,
                                                             read_patch, read_verifier, version_note, warn_stderr,
                                                             write_runs)
from swe_residual.residualize.importing.runs import ImportSummary, TaskIndex
from swe_residual.trial.record_model import Durations, Tokens

SPEC_PREFIX = "deepswe-trials:"
SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
HARNESS = "mini-swe-agent"
DEFAULT_CACHE = Path.home() / ".cache" / "swe-residual" / "deepswe-release"
_TRIAL_MARKERS = ("agent/trajectory.json", "artifacts/model.patch", "verifier/reward.json", INDEX_ROW)


def is_trial_dir(directory: Path) -> bool:
    return any((directory / marker).is_file() for marker in _TRIAL_MARKERS)


def trial_dirs(root: Path) -> list[Path]:
    """ROOT itself when it is a trial directory, else the trial directories directly below it."""
    if is_trial_dir(root):
        return [root]
    return sorted(child for child in root.iterdir() if child.is_dir() and is_trial_dir(child))


def _last_command(data: dict[str, Any]) -> str | None:
    """The command of the agent's last tool call in an ATIF trajectory."""
    steps = data.get("steps") if isinstance(data.get("steps"), list) else []
    for turn in reversed(steps):
        if not isinstance(turn, dict) or turn.get("source") != "agent":
            continue
        calls = [c for c in turn.get("tool_calls") or [] if isinstance(c, dict)]
        if calls:
            arguments = calls[-1].get("arguments")
            command = arguments.get("command") if isinstance(arguments, dict) else None
            return command if isinstance(command, str) else ""
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def identity_of(row: dict[str, Any], model: str | None) -> str:
    config = row.get("config")
    if isinstance(config, str) and config:
        return config
    return f"{HARNESS}+{row.get('model') or model or 'unknown-model'}"


def read_trial(directory: Path, relative: str, index: TaskIndex, *, source: str, command: str,
               release: str | None) -> tuple[RunFacts | None, str | None]:
    """(the run, None); (None, why it is not imported); (None, None) for a task not in the dataset."""
    row, _ = read_json_file(directory / INDEX_ROW)
    row = row if isinstance(row, dict) else {}
    name = str(row.get("trial_name") or directory.name)
    task = find_task(index, row.get("task_name") if isinstance(row.get("task_name"), str) else None,
                     name.split("__", 1)[0] if "__" in name else None)
    if task is None:
        return None, None
    data, why = read_json_file(directory / "agent" / "trajectory.json")
    data = data if isinstance(data, dict) else None
    agent_info = data.get("agent") if data and isinstance(data.get("agent"), dict) else {}
    model = row.get("model") or agent_info.get("model_name")
    trajectory = atif_to_trajectory(data, HARNESS) if data else None
    last = _last_command(data) if data else None
    submitted = last is not None and last.strip() == f"echo {SENTINEL}"
    if data is None:
        reason = f"no readable trajectory ({why}): whether the agent declared the task done is not known"
    elif not submitted:
        reason = f"the agent's last command was not `echo {SENTINEL}`: it stopped without declaring the task done"
    else:
        reason = None
    metrics = data.get("final_metrics") if data and isinstance(data.get("final_metrics"), dict) else {}
    prompt, completion = metrics.get("total_prompt_tokens"), metrics.get("total_completion_tokens")
    steps = data.get("steps") if data and isinstance(data.get("steps"), list) else []
    stamps = [turn.get("timestamp") for turn in steps if isinstance(turn, dict)]
    moment = parse_time(row.get("finished_at")) or next((parse_time(s) for s in reversed(stamps) if parse_time(s)), None)
    provenance: dict[str, Any] = {"kind": "deepswe-trials", "source": source, "trial": relative, "command": command}
    if moment is not None:
        provenance["date"] = format_time(moment)
    provenance["task_version"] = version_note(release, task)
    facts = {"trial_name": name, "task_name": row.get("task_name") or task.id, "harness": HARNESS,
             "agent_version": agent_info.get("version"), "model": model, "config": row.get("config"),
             "reasoning_effort": row.get("reasoning_effort"), "outcome_in_index": row.get("outcome"),
             "release": release, "declared_done": submitted}
    run = RunFacts(
        task=task, identity=identity_of(row, model if isinstance(model, str) else None), agent=HARNESS,
        model=model if isinstance(model, str) else None, run_id=f"deepswe-trials:{relative}",
        submitted=submitted, termination=Termination.SUBMITTED if submitted else Termination.AGENT_ERROR,
        why_not_submitted=reason, verifier=read_verifier(directory / "verifier"),
        patch=read_patch(directory / "artifacts" / "model.patch"), patch_source="artifacts/model.patch",
        provenance=provenance, facts={k: v for k, v in facts.items() if v is not None}, trajectory=trajectory,
        durations=Durations(agent_sec=_number(row.get("agent_duration_seconds"))),
        cost=_number(row.get("cost_usd")) if row.get("cost_usd") is not None else _number(metrics.get("total_cost_usd")),
        tokens=Tokens(prompt=prompt, completion=completion) if isinstance(prompt, int) and isinstance(completion, int)
        else None,
    )
    return run, None


def import_deepswe_trials(source: str, dataset_path: Path | str, out: Path | str, *,
                          selection: Selection = Selection(), release: str | None = None,
                          cache: Path | str | None = None,
                          progress: Callable[[str], None] = print,
                          warn: Callable[[str], None] = warn_stderr) -> ImportSummary:
    dataset = load_dataset(dataset_path)
    for name, error in dataset.task_errors:
        warn(f"dataset task {name} cannot be loaded, its trials are skipped: {error}")
    index = TaskIndex(dataset)
    from_index = is_url(source) or Path(source).is_file()
    command = (f"swe-residual import deepswe-trials {shlex.quote(source)} --dataset {shlex.quote(str(dataset_path))}"
               + "".join(f" {shlex.quote(arg)}" for arg in selection.as_args())
               + (f" --release {shlex.quote(release)}" if release and from_index else ""))
    problems: list[str] = []
    unknown: Counter[str] = Counter()
    extra: dict[str, Any] = {}
    release_id: str | None = None
    if from_index:
        rows = load_index(source)
        where = release or sibling(source, "release.json")
        published = load_release(where)
        release_id = published.release_id
        root = Path(cache) if cache else DEFAULT_CACHE / published.release_id
        chosen = []
        for row in select(rows, selection, lambda r: identity_of(r, None)):
            name = str(row["trial_name"])
            task = find_task(index, row.get("task_name") if isinstance(row.get("task_name"), str) else None,
                             name.split("__", 1)[0] if "__" in name else None)
            if task is None:  # not fetched: only the dataset's tasks are worth the download
                unknown[str(row.get("task_name") or name)] += 1
            else:
                chosen.append(row)
        progress(f"index {source}: {len(rows)} trial(s), {len(chosen)} selected of the dataset's tasks; "
                 f"fetching into {root}")
        directories: list[tuple[Path, str]] = []
        fetched = cached = 0
        for row in chosen:
            done = fetch_trial(published, row, root)
            fetched, cached = fetched + done.fetched, cached + done.cached
            if done.error:
                problems.append(f"{row['trial_name']}: not fetched: {done.error}")
                warn(problems[-1])
                continue
            if done.missing:
                problems.append(f"{row['trial_name']}: the release has no " + ", ".join(done.missing))
            directories.append((done.directory, done.directory.name))
        root.mkdir(parents=True, exist_ok=True)
        (root / RELEASE).write_bytes(read_location(where))  # the cache says which release it holds
        extra = {"index": source, "release": {"id": published.release_id, "location": where,
                                              "artifact_base_url": published.base_url},
                 "selected": len(chosen), "files": {"fetched": fetched, "cached": cached}}
        label = source
    else:
        root = Path(source)
        if not root.is_dir():
            raise ConfigError(f"{source}: no such directory or index file")
        found = trial_dirs(root)
        if not found:
            raise ConfigError(f"{source}: no DeepSWE trial directories (agent/trajectory.json, "
                              "artifacts/model.patch or verifier/reward.json) found")
        directories = [(path, path.relative_to(root).as_posix() if path != root else path.name) for path in found]
        label = source
        # The release the trials are of: the release.json a fetch leaves in its cache, or one
        # put beside the trial directories; without it, not recorded (validated as the dataset's).
        release_id = next((str(data.get("release_id")) for data in (read_json_file(place / RELEASE)[0]
                           for place in (root, root.parent)) if isinstance(data, dict) and data.get("release_id")),
                          None)
    runs: list[RunFacts] = []
    for directory, relative in directories:
        run, why = read_trial(directory, relative, index, source=label, command=command, release=release_id)
        if run is not None:
            runs.append(run)
        elif why:
            problems.append(f"{relative}: {why}")
        else:
            unknown[directory.name.split("__", 1)[0]] += 1
    if unknown:
        warn(f"{sum(unknown.values())} trial(s) of {len(unknown)} task(s) not in {dataset_path} skipped: "
             + ", ".join(sorted(unknown)))
    return write_runs(out, dataset_path, runs, kind="deepswe-trials", source=label, command=command,
                      spec_prefix=SPEC_PREFIX, unknown=dict(unknown), problems=problems,
                      read=len(directories) + (sum(unknown.values()) if from_index else 0), extra=extra,
                      progress=progress)


def _command(args: argparse.Namespace) -> int:
    selection = Selection(args.model or (), args.config or (), args.task or (), args.outcome or (), args.limit)
    import_deepswe_trials(args.location, args.dataset, args.out, selection=selection, release=args.release,
                          cache=args.cache)
    return 0


def register(sources: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sources.add_parser(
        "deepswe-trials",
        help="DeepSWE's trial release (its trials.json index, fetched, or trial directories) -> Stage I runs")
    parser.add_argument("location", metavar="DIR_OR_INDEX",
                        help="trial directories in the release's layout, or the release's trials.json (path or URL)")
    add_common_arguments(parser)
    parser.add_argument("--release", metavar="URL_OR_FILE",
                        help="the release's release.json (default: beside the index)")
    parser.add_argument("--cache", metavar="DIR",
                        help=f"where fetched trials are kept (default: {DEFAULT_CACHE}/<release id>)")
    parser.add_argument("--model", action="append", help="only trials of this model (index `model`; repeatable)")
    parser.add_argument("--config", action="append",
                        help="only trials of this configuration (index `config`; repeatable)")
    parser.add_argument("--task", action="append", help="only trials of this task (index `task_name`; repeatable)")
    parser.add_argument("--outcome", action="append",
                        help="only trials with this outcome in the index (`fail`, `pass`...; repeatable)")
    parser.add_argument("--limit", type=int, help="at most N trials per task and predecessor (by trial name)")
    parser.set_defaults(func=_command)

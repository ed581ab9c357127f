"""`swe-residual import predictions FILE --dataset DATASET --out WORK`: prediction files as Stage I runs.

SWE-bench's prediction format: one prediction per line (JSONL), each
`{"instance_id": ..., "model_name_or_path": ..., "model_patch": ...}`; as SWE-bench does, a
JSON list of such objects, or a JSON object keyed by instance id, is read too. Each
prediction of a task in DATASET becomes one predecessor run: the predecessor is
`model_name_or_path`, the final state is `model_patch`, and attempts are numbered per task
and predecessor in file order.

A prediction is a submission: the run is recorded as submitted. Whether it fails is not known
until Stage IV runs the verifier on the rebuilt state (and drops it when it passes), so its
outcome and reward are recorded as unknown (null), which Stage II does not exclude. A
prediction file has no trajectory and no date: the provenance names the file, the entry
and the file's SHA-256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.importing.runs import (ImportedRun, ImportSummary, TaskIndex, name_predecessors, run_record,
                                        write_stage_one)
from swe_residual.dataset.task import Task
from swe_residual.trial.record_model import Attempt, Durations
from swe_residual.dataset.values import Termination, Track

SPEC_PREFIX = "predictions:"


@dataclass(frozen=True)
class Prediction:
    entry: str  # where it is in the file: "line 3", "item 2" or "key <instance id>"
    instance_id: str
    model: str
    patch: str


def _prediction(path: Path, entry: str, data: Any, key: str | None = None) -> Prediction:
    where = f"{path}: {entry}"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a prediction must be a JSON object")
    instance_id = data.get("instance_id", key)
    model = data.get("model_name_or_path")
    patch = data.get("model_patch")
    if not isinstance(instance_id, str) or not instance_id:
        raise ConfigError(f"{where}: `instance_id` (the task id) is missing or not a string")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{where}: `model_name_or_path` (the predecessor) is missing or not a string")
    if patch is not None and not isinstance(patch, str):
        raise ConfigError(f"{where}: `model_patch` must be a string (or null: no change)")
    return Prediction(entry, instance_id, model, patch or "")


def read_predictions(path: Path) -> list[Prediction]:
    """Every prediction of the file, in file order; a bad entry is a ConfigError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a directory, not a prediction file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc}") from None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # JSONL (or a broken file: each line says where)
    if isinstance(whole, list):
        return [_prediction(path, f"item {n}", item) for n, item in enumerate(whole, start=1)]
    single = isinstance(whole, dict) and ("model_patch" in whole or "instance_id" in whole)
    if single and "\n" in text.strip():
        return [_prediction(path, "item 1", whole)]  # one prediction laid out over several lines
    if isinstance(whole, dict) and not single:
        return [_prediction(path, f"key {key}", item, key) for key, item in whole.items()]
    predictions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: line {number}: not valid JSON ({exc.msg})") from None
        predictions.append(_prediction(path, f"line {number}", data))
    return predictions


def _run(prediction: Prediction, task: Task, source: str, digest: str, command: str) -> ImportedRun:
    # Submitted, verdict unknown: Stage IV's verifier decides (a passing state is dropped there).
    record = run_record(task, prediction.model, f"predictions:{prediction.entry}").model_copy(update=dict(
        submitted=True, termination=Termination.SUBMITTED,
        attempts=(Attempt(attempt=1, termination=Termination.SUBMITTED, reverified=False, durations=Durations()),),
    ))
    provenance = {"kind": "predictions", "source": source, "entry": prediction.entry, "sha256": digest,
                  "command": command}
    patch: bytes | None = prediction.patch.encode("utf-8")
    unrecoverable = None
    if task.track != Track.REPO:
        patch, unrecoverable = None, f"{task.track} track: a patch cannot rebuild the machine's state"
    facts = {"instance_id": prediction.instance_id, "model_name_or_path": prediction.model}
    return ImportedRun(task, prediction.model, record, patch, unrecoverable, provenance, None, facts)


def import_predictions(file: Path | str, dataset_path: Path | str, out: Path | str, *,
                       progress: Callable[[str], None] = print,
                       warn: Callable[[str], None] = lambda line: print(f"warning: {line}", file=sys.stderr),
                       ) -> ImportSummary:
    path = Path(file)
    predictions = read_predictions(path)
    if not predictions:
        raise ConfigError(f"{path}: holds no predictions")
    dataset = load_dataset(dataset_path)
    for name, error in dataset.task_errors:
        warn(f"dataset task {name} cannot be loaded, its predictions are skipped: {error}")
    # The command as typed, less --out (see harbor_jobs); the file's bytes identify the input,
    # its modification time would not (a copy of the same file has another).
    command = f"swe-residual import predictions {shlex.quote(str(file))} --dataset {shlex.quote(str(dataset_path))}"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    index = TaskIndex(dataset)
    unknown: Counter[str] = Counter()
    runs: list[ImportedRun] = []
    for prediction in predictions:
        task = index.find(prediction.instance_id)
        if task is None:
            unknown[prediction.instance_id] += 1
            continue
        runs.append(_run(prediction, task, str(file), digest, command))
    if unknown:
        warn(f"{sum(unknown.values())} prediction(s) of {len(unknown)} task(s) not in {dataset_path} skipped: "
             + ", ".join(sorted(unknown)))
    if not runs:
        raise ConfigError(f"{path}: none of the {len(predictions)} prediction(s) is of a task in {dataset_path}")
    names = name_predecessors((run.identity for run in runs), lambda identity: [identity])
    import_info = {
        "kind": "predictions", "source": str(file), "command": command, "sha256": digest,
        "predictions": len(predictions), "runs": len(runs), "unknown_tasks": dict(sorted(unknown.items())),
    }
    refs = write_stage_one(out, dataset_path, runs, names, spec_prefix=SPEC_PREFIX, import_info=import_info,
                           progress=progress)
    return ImportSummary(refs, {name: identity for identity, name in names.items()}, dict(unknown),
                         sum(run.patch is None for run in runs), [])


def _command(args: argparse.Namespace) -> int:
    import_predictions(args.file, args.dataset, args.out)
    return 0


def register(sources: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sources.add_parser(
        "predictions",
        help="SWE-bench-style prediction files -> Stage I runs of `residualize` (filter, review, build next)")
    parser.add_argument("file", metavar="FILE",
                        help="predictions: JSONL, a JSON list, or a JSON object keyed by instance id")
    parser.add_argument("--dataset", required=True, help="the dataset whose task ids the instance ids are")
    parser.add_argument("--out", required=True, metavar="WORK", help="the residualization work directory")
    parser.set_defaults(func=_command)

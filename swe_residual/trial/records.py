"""Run records: one JSON object per finished item, one line each in `results.jsonl`.

Each record is appended and flushed to disk at once, so a crash loses at most the item in
flight. Reading tolerates a half-written last line (it is reported, not fatal): that item
simply has no record and is rerun on resume.

A record is a `RunRecord` everywhere in the suite; it is JSON only at the edges here:
`record_json` and `record_line` write one, `read_record` and `read_record_line` read one, and
`read_records` reads results files. The rules of its JSON are the model's
(swe_residual/trial/record_model.py).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from swe_residual.trial.record_model import FROM_JSON, RECORD_SCHEMA, RunRecord
from swe_residual.dataset.values import Outcome, Start, Track

__all__ = [
    "ItemKey", "LoadedRecords", "OUTCOMES", "RECORD_SCHEMA", "REQUIRED_FIELDS", "agent_slug", "append_record",
    "append_record_or_fallback", "dedupe_records", "fallback_path", "infra_error_record", "item_id", "item_key", "item_name",
    "read_record", "read_record_line", "read_records", "record_json", "record_key", "record_line",
    "rollout_file_suffix", "rollout_suffix", "validate_record",
]  # fmt: skip

REQUIRED_FIELDS = (
    "schema", "run_id", "agent", "task", "track", "start", "state", "predecessor", "outcome",
    "reward", "submitted", "termination", "tests", "initial_tests", "steps", "final_patch",
    "trajectory", "attempts", "durations",
)
OUTCOMES = tuple(Outcome)
STARTS = tuple(Start)


#: The identity of one measured item: (agent, track, task, start, state), and the handoff
#: view last for a non-blind one.
ItemKey = tuple[Any, ...]


def item_key(agent: Any, track: Any, task: Any, start: Any, state: Any, handoff: Any = None,
             rollout: Any = 0) -> ItemKey:
    """The one key of "the same item", used wherever records are merged, deduplicated or
    resumed. The track is part of it: a repo-track and a machine-track run of a task with the
    same name are two measurements, not a re-run of one. So is a non-blind handoff view (the
    same state under `trace` and `blind` are two items); `blind` adds nothing, so the keys of
    a run without views are what they always were. So is the rollout (`--rollouts`): two runs
    of one start are two records, never duplicates; rollout 0 (and a record of an older suite,
    which has none) adds nothing, so the keys of a one-rollout run are unchanged. The rollout
    comes last as an int, the view as a string: the two never read as each other. Its parts
    are plain values (an enum member as its string): keys travel to xdist workers, whose
    transport takes nothing else."""
    key = tuple(part.value if isinstance(part, Enum) else part for part in (agent, track, task, start, state))
    key = key if handoff in (None, "blind") else (*key, handoff)
    return key if not rollout else (*key, int(rollout))


def record_key(record: RunRecord) -> ItemKey:
    """:func:`item_key` of a run record (a record of an older suite has rollout 0)."""
    return item_key(record.agent, record.track, record.task, record.start, record.state, record.handoff,
                    record.rollout)


def dedupe_records(records: Iterable[RunRecord]) -> list[RunRecord]:
    """One record per :func:`record_key`: the last one seen, kept at the position of the key's
    first appearance, so merging the same results twice gives the same list."""
    latest: dict[ItemKey, RunRecord] = {}
    for record in records:
        latest[record_key(record)] = record
    return list(latest.values())


def item_id(agent: str, task: str, state: str | None, handoff: str | None = None, rollout: int | None = None) -> str:
    """`agent/task/clean`, `agent/task/residual:state`, and `@view` after a non-blind view;
    `#rN` last for rollout N of a run with `--rollouts` above 1 (None: a one-rollout run)."""
    return f"{agent}/{task}/" + item_name(state, handoff, rollout)


def item_name(state: str | None, handoff: str | None = None, rollout: int | None = None) -> str:
    """The start part of :func:`item_id`: `clean`, `residual:state[@view]`, then `#rN`."""
    view = "" if handoff in (None, "blind") else f"@{handoff}"
    name = Start.CLEAN if state is None else f"{Start.RESIDUAL}:{state}{view}"
    return f"{name}{rollout_suffix(rollout)}"


def rollout_suffix(rollout: int | None) -> str:
    """What item ids add for a rollout: nothing in a one-rollout run (None), `#rN` otherwise."""
    return "" if rollout is None else f"#r{rollout}"


def rollout_file_suffix(rollout: int | None) -> str:
    """What per-item file names add for a rollout: `.rN` (a `#` would cut the links of report.html)."""
    return "" if rollout is None else f".r{rollout}"


def agent_slug(agent: str) -> str:
    """A file-name-safe, unique name for an agent spec (cmd: specs can be whole scripts)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", agent).strip("_") or "agent"
    if slug == agent and len(slug) <= 60:
        return slug
    return f"{slug[:60]}-{hashlib.sha1(agent.encode()).hexdigest()[:8]}"


def infra_error_record(
    run_id: str, agent: str, task: str, track: Track, state: str | None, predecessor: str | None, error: str,
    handoff: str | None = None, rollout: int = 0,
) -> RunRecord:
    """The record of an item whose run was lost outright (e.g. its worker process died)."""
    return RunRecord.infra_error(
        run_id=run_id, agent=agent, task=task, track=track, state=state, predecessor=predecessor, error=error,
        handoff=None if handoff in (None, "blind") else handoff, rollout=rollout,
    )


def fallback_path(results_path: Path) -> Path:
    """Where the records `results_path` refuses (a full or read-only disk) are written instead:
    `swe-residual-<run id>-<hash of the results path>.unsaved.jsonl` in the system temp
    directory (`$TMPDIR`), another file system as a rule; the hash keeps two results
    directories with one run id apart. `read_records` and resume read it beside the results file."""
    results = Path(results_path).resolve()
    digest = hashlib.sha1(str(results).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"swe-residual-{results.parent.name}-{digest}.unsaved.jsonl"


def record_json(record: RunRecord) -> dict[str, Any]:
    """The record as `results.jsonl` holds it: plain JSON types (an enum member as its string,
    a tuple as a list), in the contract's order, its absent fields left out."""
    return record.model_dump(mode="json", fallback=str)


def read_record(data: Mapping[str, Any]) -> RunRecord:
    """The record of a JSON object (a results line, a Stage I run's record.json, one made by
    hand); pydantic's ValidationError names the field of a value it cannot take."""
    return RunRecord.model_validate(data, context=FROM_JSON)


def record_line(record: RunRecord) -> str:
    """A record as one line of ASCII JSON: the one form a record takes outside a process (in
    `results.jsonl`, the fallback file, an xdist report). Lossless for any text: a character
    outside ASCII is a `\\uXXXX` escape, and so is a lone surrogate (a byte that is not UTF-8,
    kept by `surrogateescape` in a patch, a file name or an output), which `json.loads` reads
    back to the same string, and `.encode("utf-8", "surrogateescape")` to the same bytes.
    (pydantic's own JSON refuses lone surrogates, so the text is Python's `json`.)"""
    return json.dumps(record_json(record), ensure_ascii=True, sort_keys=False, default=str)


def read_record_line(text: str) -> RunRecord:
    """The record of a :func:`record_line`."""
    record = json.loads(text)
    if not isinstance(record, dict):
        raise ValueError("a record line holds a JSON object")
    return read_record(record)


def append_record(path: Path, record: RunRecord) -> None:
    """Append one record as one whole line, then fsync; raises OSError when it is not on disk.

    A short write (a nearly full disk takes part of the line) is continued until the line is
    whole; a write that fails part-way has its partial line cut off again, so the file never
    holds half a record that the next append would run into.
    """
    data = (record_line(record) + "\n").encode("ascii")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            written = 0
            while written < len(data):
                count = os.write(fd, data[written:])
                if count <= 0:  # no progress and no error: treat as a full disk, never loop forever
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
                written += count
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass  # a half line left here is moved aside by resume and skipped by readers
            raise
    finally:
        os.close(fd)


def append_record_or_fallback(path: Path, record: RunRecord) -> tuple[Path, str | None]:
    """Append to `path`; when that fails, to its :func:`fallback_path`. Returns where the record
    went and why `path` refused it (None when it did not); raises OSError when both fail."""
    try:
        append_record(path, record)
        return path, None
    except OSError as exc:
        reason = f"{path}: {exc.strerror or exc}"
    fallback = fallback_path(path)
    append_record(fallback, record)
    return fallback, reason


@dataclass
class LoadedRecords:
    records: list[RunRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # "file:line" of each record, in order


def validate_record(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    missing = [name for name in REQUIRED_FIELDS if name not in record]
    if missing:
        return f"missing fields {', '.join(missing)}"
    if record["outcome"] not in OUTCOMES:
        return f"unknown outcome {record['outcome']!r}"
    if record["start"] not in STARTS:
        return f"unknown start {record['start']!r}"
    return None


def read_records(paths: Iterable[Path]) -> LoadedRecords:
    """The records of results files (or run directories), each followed by the records its
    :func:`fallback_path` holds (the ones a full disk refused), with a note that it was read."""
    loaded = LoadedRecords()
    for path in paths:
        path = Path(path)
        if path.is_dir():
            path = path / "results.jsonl"
        _read_file(path, loaded)
        fallback = fallback_path(path)
        if fallback.is_file():
            before = len(loaded.records)
            _read_file(fallback, loaded)
            loaded.problems.append(f"{path}: {len(loaded.records) - before} record(s) read from the fallback file "
                                   f"{fallback} (results.jsonl could not take them)")
    return loaded


def _read_file(path: Path, loaded: LoadedRecords) -> None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        loaded.problems.append(f"{path}: {exc.strerror or exc}")
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            loaded.problems.append(f"{path}:{number}: incomplete or corrupt line skipped")
            continue
        problem = validate_record(record)
        if problem:
            loaded.problems.append(f"{path}:{number}: {problem}")
            continue
        try:
            loaded.records.append(read_record(record))
        except ValidationError as exc:
            loaded.problems.append(f"{path}:{number}: {_refusal(exc)}")
            continue
        loaded.sources.append(f"{path}:{number}")


def _refusal(error: ValidationError) -> str:
    """Why a record was refused, in one line: each field and what it could not take (the last
    of its errors: for a number, "a valid number" after "a valid integer")."""
    by_field = {str(e["loc"][0]) if e["loc"] else "record": e for e in error.errors(include_url=False)}
    return "; ".join(f"{name}: {e['msg']} ({e['input']!r:.60})" for name, e in by_field.items())

"""Editing an exported task's `task.toml` without losing a byte of what it says.

The standard library reads TOML but cannot write it, and a re-serialized task.toml would lose
its comments (which explain the task to whoever reads it on Harbor's side). So the export edits
the text: keys are inserted under the `[metadata]` header, `[task] name` is replaced in place,
`[environment] docker_image` is commented out. Text edits of TOML are only safe when checked,
so every result is parsed again and must equal the original document with exactly the intended
changes; anything else (a header inside a multi-line string, a table defined with dotted keys,
a key that already exists) is a `DatasetError` naming the file, never a wrong task.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.values import Start

# A line that starts with `[` outside a string is a header; names are compared without spaces.
_HEADER = re.compile(r"^\s*\[(?P<name>[^#]*)\]\s*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def _headers(lines: list[str]) -> list[tuple[int, str]]:
    """(line index, table name) of every `[table]` or `[[array]]` header line."""
    found = []
    for index, line in enumerate(lines):
        if _ARRAY_HEADER.match(line):
            found.append((index, "[[" + line.strip()))
        elif match := _HEADER.match(line):
            found.append((index, match["name"].replace(" ", "")))
    return found


def _table_span(lines: list[str], table: str) -> tuple[int, int] | None:
    """[header line, end) of `[table]`: up to the next header of any kind."""
    headers = _headers(lines)
    for position, (index, name) in enumerate(headers):
        if name == table:
            end = headers[position + 1][0] if position + 1 < len(headers) else len(lines)
            return index, end
    return None


def _key_line(lines: list[str], span: tuple[int, int], key: str) -> int | None:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for index in range(span[0] + 1, span[1]):
        if pattern.match(lines[index]):
            return index
    return None


def edit_task_toml(
    path: Path, text: str, *, metadata: dict[str, str], task_name: str | None = None,
    drop_docker_image: bool = False,
) -> str:
    """`text` (the task.toml at `path`) with `metadata` keys added under `[metadata]`, `[task]
    name` set to `task_name` (when given and the task has one) and `[environment] docker_image`
    commented out (when asked); checked by parsing the result."""
    try:
        original = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(path, f"not valid TOML: {exc}") from exc
    expected = copy.deepcopy(original)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"

    # Replacements first (they keep line positions), the insertion last.
    if task_name is not None and isinstance(expected.get("task"), dict) and "name" in expected["task"]:
        span = _table_span(lines, "task")
        index = _key_line(lines, span, "name") if span else None
        if index is None:
            raise DatasetError(path, "cannot find the line that sets [task] name", field="task.name")
        lines[index] = f"name = {toml_string(task_name)}\n"
        expected["task"]["name"] = task_name
    if drop_docker_image:
        span = _table_span(lines, "environment")
        index = _key_line(lines, span, "docker_image") if span else None
        if index is None:
            raise DatasetError(path, "cannot find the line that sets [environment] docker_image",
                               field="environment.docker_image")
        # Kept as a comment: the reader sees which image environment/Dockerfile now starts FROM.
        lines[index] = "# " + lines[index].lstrip()
        del expected["environment"]["docker_image"]

    table = expected.setdefault("metadata", {})
    if not isinstance(table, dict):
        raise DatasetError(path, "must be a table", field="metadata")
    clash = sorted(set(metadata) & set(table))
    if clash:
        raise DatasetError(path, f"already has {clash[0]!r} (an exported task exported again?)",
                           field=f"metadata.{clash[0]}")
    table.update(metadata)
    added = [f"{key} = {toml_string(value)}\n" for key, value in metadata.items()]
    span = _table_span(lines, "metadata")
    if span is not None:
        lines[span[0] + 1:span[0] + 1] = added
    else:
        lines += ["\n", "[metadata]\n", *added]

    result = "".join(lines)
    try:
        parsed = tomllib.loads(result)
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(path, f"could not be edited safely ({exc}); the export leaves it out") from exc
    if parsed != expected:
        raise DatasetError(path, "could not be edited safely (the edited text means something else); "
                                 "the export leaves it out")
    return result


def read_toml_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot be read: {exc}") from exc


def metadata_keys(task_id: str, dataset: str, state: ResidualState | None) -> dict[str, str]:
    """The keys that trace an exported task back to its source (docs/harbor-export.md)."""
    keys = {"swe_residual_dataset": dataset, "swe_residual_source_task": task_id,
            "swe_residual_start": Start.CLEAN if state is None else Start.RESIDUAL}
    if state is not None:
        keys["swe_residual_source_state"] = state.id
        keys["swe_residual_predecessor"] = state.predecessor
    return keys

"""A small TOML writer for state.toml (strings, numbers, booleans, lists, nested tables).

The standard library reads TOML but cannot write it; state files need only these types.
Keys keep their insertion order, so the same state always gives the same bytes.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML cannot hold {value!r} here")
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dumps(data: dict[str, Any]) -> str:
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines) + "\n"


def _table(data: dict[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in data.items() if v is not None and not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    if path and (scalars or not tables):
        lines.append("[" + ".".join(_key(part) for part in path) + "]")
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in tables.items():
        _table(value, [*path, key], lines)

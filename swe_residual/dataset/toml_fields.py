"""Typed reading of a parsed TOML document that names the file and the dotted field on error."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import DatasetError


class FieldReader:
    """Typed access to a parsed TOML table that names the file and dotted field on error."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def table(self, dotted: str) -> dict[str, Any]:
        node: Any = self.data
        for part in dotted.split("."):
            node = node.get(part, {}) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                raise DatasetError(self.path, "must be a table", field=dotted)
        return node

    def get(self, dotted: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        *parents, key = dotted.split(".")
        table = self.table(".".join(parents)) if parents else self.data
        if key not in table:
            return default
        value = table[key]
        # bool is an int in Python; a TOML `true` is never a valid number here.
        if isinstance(value, bool) and bool not in _as_tuple(kind):
            raise DatasetError(self.path, f"expected {_kind_name(kind)}, got {value!r}", field=dotted)
        if not isinstance(value, kind):
            raise DatasetError(self.path, f"expected {_kind_name(kind)}, got {value!r}", field=dotted)
        return value

    def number(self, dotted: str, default: float | None) -> float | None:
        """A number that must be greater than 0 when given (timeouts, CPUs)."""
        value = self.get(dotted, (int, float), default)
        if value is not None and not value > 0:
            raise DatasetError(self.path, f"must be greater than 0, got {value!r}", field=dotted)
        return None if value is None else float(value)

    def positive_int(self, dotted: str) -> int | None:
        value = self.get(dotted, int, None)
        if value is not None and value <= 0:
            raise DatasetError(self.path, f"must be greater than 0, got {value!r}", field=dotted)
        return value

    def string_map(self, dotted: str) -> dict[str, str]:
        table = self.table(dotted)
        for key, value in table.items():
            if not isinstance(value, (str, int, float, bool)):
                raise DatasetError(self.path, f"value of {key!r} must be a scalar", field=dotted)
        return {key: str(value) for key, value in table.items()}


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", list: "a list", bool: "a boolean"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(path, "file is missing") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(path, f"malformed TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"not UTF-8 text: {exc}") from exc

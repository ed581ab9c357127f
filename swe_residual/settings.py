"""Run settings resolved from the command line and the ini file, each bad value named
with its source (command line > ini > default), in the way pytest-timeout resolves its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from swe_residual.errors import ConfigError
from swe_residual.gates import Gate

T = TypeVar("T")
BACKENDS = ("auto", "local", "docker")


@dataclass(frozen=True)
class RunSettings:
    agents: tuple[str, ...]
    dataset: Path
    backend: str
    infra_retries: int
    results_dir: Path
    run_id: str | None
    timeout_multiplier: float
    max_steps: int | None
    cost_limit: float | None
    shard: tuple[int, int] | None = None
    resume: Path | None = None
    gates: tuple[Gate, ...] = ()


def resolve(
    name: str,
    cli_value: object,
    ini_value: object,
    default: T,
    parse: Callable[[str], T],
    *,
    cli_flag: str,
    ini_name: str,
) -> T:
    """The first value given among CLI, ini and default, parsed, with its source in errors."""
    for value, source in ((cli_value, f"command line {cli_flag}"), (ini_value, f"ini option {ini_name}")):
        if value is None or value == "" or value == []:
            continue
        try:
            return parse(str(value))
        except (ValueError, ConfigError) as exc:
            raise ConfigError(f"{name}: bad value {value!r} from the {source}: {exc}") from exc
    return default


def parse_non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def parse_positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be 1 or more")
    return value


def parse_positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be greater than 0")
    return value


def parse_backend(text: str) -> str:
    if text not in BACKENDS:
        raise ValueError(f"one of {', '.join(BACKENDS)}")
    return text

"""Writing summary.json and summary.md beside the results (shared by plugin and CLI)."""

from __future__ import annotations

import os
from pathlib import Path

from swe_residual.metrics.summary.model import Summary, summary_text


def _write_atomic(path: Path, text: str) -> None:
    # Write then rename, so a reader never sees half a summary. A byte that is not UTF-8 (in an
    # agent's error output quoted by summary.md) is shown as \xNN; summary.json escapes it.
    temporary = path.with_name(path.name + f".tmp{os.getpid()}")
    temporary.write_bytes(text.encode("utf-8", "backslashreplace"))
    temporary.replace(path)


def write_summary_files(directory: Path, summary: Summary, markdown: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(directory / "summary.json", summary_text(summary))
    _write_atomic(directory / "summary.md", markdown)

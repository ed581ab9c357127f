"""The `--summarizer` hook of Stage III: a command that reads a candidate's trajectory JSON on
its standard input (the request in `SWE_RESIDUAL_INSTRUCTION`) and prints the summary the
paper shows reviewers. Its answer is kept beside the packet (`<candidate>.summary.txt`), so
the packet and the page show the same text and the hook runs once per candidate."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from swe_residual.residualize.workdir import RunRef, Workdir, write_bytes

SUMMARIZER_TIMEOUT_SEC = 600


def summary_path(work: Workdir, ref: RunRef) -> Path:
    return work.root / "review" / ref.task / f"{ref.candidate}.summary.txt"


def run_summarizer(command: str, trajectory_path: Path | None, request: str) -> str:
    data = trajectory_path.read_text(encoding="utf-8") if trajectory_path and trajectory_path.is_file() else "{}"
    try:
        done = subprocess.run(command, shell=True, input=data, capture_output=True, text=True,
                              timeout=SUMMARIZER_TIMEOUT_SEC, check=False,
                              env={**os.environ, "SWE_RESIDUAL_INSTRUCTION": request})
    except subprocess.TimeoutExpired:
        return f"(the summarizer did not finish within {SUMMARIZER_TIMEOUT_SEC}s)"
    if done.returncode != 0:
        return f"(the summarizer exited with {done.returncode}: {done.stderr.strip()[-500:]})"
    return done.stdout.strip() or "(the summarizer printed nothing)"


def summarize(work: Workdir, ref: RunRef, request: str, command: str) -> str:
    """The candidate's summary: the one kept from an earlier run, else the hook's answer now."""
    kept = summary_path(work, ref)
    if kept.is_file():
        return kept.read_text(encoding="utf-8")
    record = work.record(ref)
    trajectory = work.run_dir(ref) / record.trajectory if record.trajectory else None
    text = run_summarizer(command, trajectory, request)
    write_bytes(kept, text.encode("utf-8"))
    return text

"""What a predecessor said, kept with the state Stage IV writes: `trajectory.jsonl` (its
normalized trajectory, one step per line) and `notes.md` (its final message). The suite's
non-blind handoff views read them (swe_residual/trial/handoff/views.py); `blind` never does.

Both are a pure function of the Stage I run, like the rest of the state: timings and token
counts are left out (they are not what the predecessor said, and would make two builds of the
same work differ), and a run without a trajectory or a final message gives no file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swe_residual.dataset.states.state import NOTES_FILE, TRAJECTORY_FILE
from swe_residual.trial.record_model import RunRecord

#: the step fields a handoff keeps, in this order (swe_residual.agents.trajectory.steps_from_jsonl reads them)
STEP_FIELDS = ("action", "command", "path", "output", "exit_code")


def trajectory_lines(steps: list[Any]) -> bytes:
    lines = []
    for step in steps:
        if isinstance(step, dict):
            kept = {name: step[name] for name in STEP_FIELDS if step.get(name) is not None}
            lines.append(json.dumps(kept, ensure_ascii=False) + "\n")
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def predecessor_files(run_dir: Path, record: RunRecord) -> dict[str, bytes]:
    """{file name: content} for the state directory, from the run's record and trajectory."""
    files: dict[str, bytes] = {}
    document: dict[str, Any] = {}
    relative = record.trajectory
    if isinstance(relative, str) and (run_dir / relative).is_file():
        try:
            loaded = json.loads((run_dir / relative).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None  # an unreadable trajectory is no trajectory: the state keeps none
        document = loaded if isinstance(loaded, dict) else {}
    steps = document.get("steps")
    if isinstance(steps, list) and steps:
        files[TRAJECTORY_FILE] = trajectory_lines(steps)
    message = document.get("final_message") or record.message
    if isinstance(message, str) and message.strip():
        files[NOTES_FILE] = (message.strip() + "\n").encode("utf-8", errors="surrogateescape")
    return files

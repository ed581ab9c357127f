"""A taskfactory task whose Residual State keeps what its predecessor said (trajectory.jsonl
with a failing test run, notes.md claiming success), and whose verifier records whether a
handoff file is anywhere it can see (`handoff_seen` in reward.json, so in the record's
`rewards`): /tmp/swe-residual/handoff.md (a container's scratch) or $TMPDIR/handoff.md (the
local backend runs the verifier with TMPDIR at the workspace's scratch directory)."""

from __future__ import annotations

import json
from pathlib import Path

from taskfactory import TEST_SH, make_task

SEES_HANDOFF = """\
seen=0
for f in /tmp/swe-residual/handoff.md "${TMPDIR:-/nonexistent}/handoff.md"; do [ -e "$f" ] && seen=1; done
echo "{\\"reward\\": $(cat "$LOGS_DIR/reward.txt"), \\"handoff_seen\\": $seen}" > "$LOGS_DIR/reward.json"
"""
HANDOFF_TEST_SH = TEST_SH.replace("esac\nexit 0\n", "esac\n" + SEES_HANDOFF + "exit 0\n")
assert HANDOFF_TEST_SH != TEST_SH

PYTEST_OUTPUT = (
    "..F.                                                                     [100%]\n"
    "=================================== FAILURES ===================================\n"
    "_______________________________ test_clamp_high ________________________________\n"
    "    assert clamp(50, 0, 10) == 10\nE   assert 50 == 10\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_calc.py::test_clamp_high - assert 50 == 10\n"
    "1 failed, 3 passed in 0.02s\n"
)
STEPS = [
    {"action": "view", "path": "calc.py", "output": "def clamp(value, low, high):\n    return value\n"},
    {"action": "command", "command": "sed -i 's/return value$/return max(low, value)/' calc.py && echo ran > debug.log",
     "output": "", "exit_code": 0},
    {"action": "command", "command": "python -m pytest -q tests", "output": PYTEST_OUTPUT, "exit_code": 1},
    {"action": "message", "output": "clamp handles the low bound now; the task is complete."},
]
NOTES = "Implemented clamp's bounds. The task is complete.\n"


def make_handoff_task(root: Path, task_id: str = "calc", *, environment_mode: str = "separate",
                      trajectory: bool = True, notes: bool = True) -> Path:
    task = make_task(root, task_id, test_sh=HANDOFF_TEST_SH, environment_mode=environment_mode)
    state = task / "residual" / "drafter-1"
    if trajectory:
        (state / "trajectory.jsonl").write_text("".join(json.dumps(step) + "\n" for step in STEPS))
    if notes:
        (state / "notes.md").write_text(NOTES)
    return task

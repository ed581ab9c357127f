"""Stage I's "declared done" is the agent's own claim (harbor/declared.py): Terminus's
task_complete, a tool-call agent's final message reporting the work; a run that stopped
(its last turn typed commands, or its last words announce the next step) claimed nothing and
Stage II excludes it as `not_submitted`. Trajectories are small ones of this test's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harborjobs import terminus_atif, tool_call_atif, write_trial
from taskfactory import make_machine_task

from swe_residual.residualize.filter import filter_runs
from swe_residual.residualize.harbor.declared import (episodes_declaration, final_message_declaration,
                                                       terminus_declaration)
from swe_residual.residualize.harbor.jobs import import_harbor_jobs
from swe_residual.residualize.harbor.terminus import read_keystrokes
from swe_residual.residualize.harbor.tool_calls import read_tool_calls

EXEC = {"name": "exec", "arguments": {"command": "echo made > /app/made"}, "answer": "", "status": "completed",
        "exit_code": 0}
EPISODES = [[{"keystrokes": "echo one > /app/one\n", "duration": 0.1}],
            [{"keystrokes": "cat /app/one\n", "duration": 0.1}]]


@pytest.mark.unit
@pytest.mark.parametrize("message", [
    # The recorded end of a run that stopped (tb2-residual's write-compressor OpenClaw trial).
    "This is getting complex.\n\nLet me write a Python compressor that more carefully models the decompressor:",
    "The C version does not link yet. Let me try a Python approach...",
    "Compiled. Now I'll run the tests.",
    "Actually, let me check the output once more.",
    "I need to verify the file before finishing.",
    "Working on it…",
    "   ",
])
def test_a_final_message_announcing_more_work_is_not_a_claim(message: str) -> None:
    declaration = final_message_declaration(message)
    assert not declaration.declared and "stopped" in declaration.how


@pytest.mark.unit
@pytest.mark.parametrize("message", [
    "Created `/app/run.py` with the `run_tasks` async function. It uses `asyncio.Semaphore` for concurrency.",
    "I've analyzed the gcode file: the text is **HELLO**. The result has been written to `/app/out.txt`.",
    "## Fitting Results\n\n| x0 | 1580 |\n\nThe results have been saved to `/app/results.json`.",
    "Done.",
])
def test_a_final_message_reporting_the_work_is_a_claim(message: str) -> None:
    assert final_message_declaration(message).declared


@pytest.mark.unit
def test_terminus_declares_with_task_complete_in_its_last_turn() -> None:
    steps = terminus_atif(EPISODES)["steps"]
    turns = [step for step in steps if step["source"] == "agent"]
    assert terminus_declaration(turns).declared  # the helper's last turn calls mark_task_complete
    confirmed = terminus_declaration([*turns, {**turns[-1], "step_id": 9}])
    assert confirmed.declared and "confirming" in confirmed.how
    stopped = terminus_declaration(turns[:-1])  # its last turn typed commands
    assert not stopped.declared and "did not mark the task complete" in stopped.how
    # A marked turn earlier in the run, then more commands: the last turn decides.
    assert not terminus_declaration([turns[-1], *turns[:-1]]).declared
    # Raw-content trajectories keep the model's answer as the message.
    raw = {"step_id": 4, "source": "agent", "message": json.dumps({"commands": [], "task_complete": True})}
    assert terminus_declaration([*turns[:-1], raw]).declared


@pytest.mark.unit
def test_terminus_answers_kept_as_episodes() -> None:
    answer = {"analysis": "a", "plan": "p", "commands": []}
    assert episodes_declaration([json.dumps({**answer, "task_complete": False}),
                                 json.dumps({**answer, "task_complete": True})]).declared
    assert episodes_declaration(['{"commands": [], "is_task_complete": true}']).declared  # Terminus-1
    assert episodes_declaration(["<response><task_complete>true</task_complete></response>"]).declared
    assert not episodes_declaration([json.dumps({**answer, "task_complete": True}),
                                     json.dumps({**answer, "task_complete": False})]).declared
    assert not episodes_declaration([]).declared


def _records(work: Path, task: str, pred: str) -> dict[int, dict[str, Any]]:
    runs = work / "runs" / task / pred
    return {int(d.name): json.loads((d / "record.json").read_text()) for d in runs.iterdir()}


@pytest.mark.unit
def test_stopped_runs_are_imported_as_not_declared_and_filtered(tmp_path: Path) -> None:
    dataset, jobs, work = tmp_path / "dataset", tmp_path / "jobs", tmp_path / "work"
    task = make_machine_task(dataset, "claims", None, tmux=False)
    openclaw = {"agent": "openclaw", "provider": "openai", "model": "z-ai/glm-5"}
    terminus = {"agent": "terminus-2", "provider": "openai", "model": "gpt-5"}
    common: dict[str, Any] = {"task_name": task.name, "rewards": {"reward": 0.0}}
    write_trial(jobs / "j", "claims__1", task, minute=0, trajectory=tool_call_atif([[EXEC]], "Wrote /app/made."),
                **common, **openclaw)
    write_trial(jobs / "j", "claims__2", task, minute=1, **common, **openclaw,
                trajectory=tool_call_atif([[EXEC]], "It fails to compile. Let me try a Python approach..."))
    stopped = terminus_atif(EPISODES)
    stopped["steps"] = stopped["steps"][:-1]  # ends with a turn that typed commands
    write_trial(jobs / "j", "claims__3", task, minute=2, trajectory=terminus_atif(EPISODES), **common, **terminus)
    write_trial(jobs / "j", "claims__4", task, minute=3, trajectory=stopped, **common, **terminus)
    assert read_tool_calls(jobs / "j" / "claims__2") is not None
    assert not read_tool_calls(jobs / "j" / "claims__2").declared_done  # type: ignore[union-attr]
    keys = read_keystrokes(jobs / "j" / "claims__4")
    assert keys is not None and keys.declaration is not None and not keys.declaration.declared
    import_harbor_jobs(jobs, dataset, work, progress=lambda _: None, warn=lambda _: None)
    records = {**{("openclaw", n): r for n, r in _records(work, "claims", "openclaw__openai_z_ai_glm_5").items()},
               **{("terminus", n): r for n, r in _records(work, "claims", "terminus_2__openai_gpt_5").items()}}
    claimed = {key: (r["submitted"], r["residualize"]["import"]["declared_done"]) for key, r in records.items()}
    assert claimed == {("openclaw", 1): (True, True), ("openclaw", 2): (False, False),
                       ("terminus", 1): (True, True), ("terminus", 2): (False, False)}
    assert "Let me try a Python approach" in records[("openclaw", 2)]["residualize"]["import"]["declared_how"]
    assert "without declaring the task done" in records[("terminus", 2)]["error"]
    result = filter_runs(work, progress=lambda _: None)
    assert result["counts"]["not_submitted"] == 2
    assert len(result["candidates"]) == 2  # the two runs that claimed the task done

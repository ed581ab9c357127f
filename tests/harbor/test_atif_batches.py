"""A Terminus-2 turn sends several keystroke batches and sees one terminal screen after them:
the screen answers the turn's last command, so what it showed is not lost to the metrics."""

from __future__ import annotations

import pytest

from swe_residual.agents.atif import atif_to_trajectory


def turn(calls: list[tuple[str, dict]], results: list[dict]) -> dict:
    return {"source": "agent", "message": "plan",
            "tool_calls": [{"tool_call_id": f"call_{i}", "function_name": name, "arguments": args}
                           for i, (name, args) in enumerate(calls)],
            "observation": {"results": results}, "metrics": {"prompt_tokens": 7, "completion_tokens": 3}}


@pytest.mark.unit
def test_one_unlinked_screen_answers_the_last_command_of_a_batch() -> None:
    data = {"steps": [turn([("bash_command", {"keystrokes": "git status\n"}), ("bash_command", {"keystrokes": "git diff\n"}),
                            ("mark_task_complete", {})], [{"content": "diff --git a/x b/x"}])]}
    steps = atif_to_trajectory(data, "harbor:terminus-2").steps
    assert [(s.action, s.command, s.output) for s in steps] == [
        ("command", "git status\n", ""), ("command", "git diff\n", "diff --git a/x b/x"),
        ("message", None, "mark_task_complete {}"),
    ]
    assert (steps[0].prompt_tokens, steps[0].completion_tokens) == (7, 3)


@pytest.mark.unit
def test_a_linked_result_stays_with_its_call_and_a_lone_call_takes_the_unlinked_one() -> None:
    data = {"steps": [turn([("bash_command", {"keystrokes": "ls\n"}), ("mark_task_complete", {})],
                           [{"source_call_id": "call_0", "content": "a.py"}]),
                      turn([("mark_task_complete", {})], [{"content": "sure?"}])]}
    steps = atif_to_trajectory(data, "harbor:terminus-2").steps
    assert [(s.action, s.output) for s in steps] == [
        ("command", "a.py"), ("message", "mark_task_complete {}"), ("message", "mark_task_complete {}\nsure?"),
    ]

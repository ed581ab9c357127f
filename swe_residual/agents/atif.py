"""Harbor's ATIF trajectories (`agent/trajectory.json`) as the suite's normalized trajectory.

ATIF (Agent Trajectory Interchange Format) records a run as turns (`steps`), each from the
system, the user or the agent; an agent turn has a message, tool calls and the observation
results answering them. The suite's trajectory (`swe_residual.agents.trajectory`) is a list of
actions: shell commands, file views, file edits and messages, each with what it showed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swe_residual.dataset.harbor_layout import read_object
from swe_residual.agents.trajectory import Trajectory

# How tool calls map to the suite's step kinds. Scaffolds name their tools differently; an
# editor tool with a `command` sub-action (str_replace_editor) is told apart by that action.
_VIEW_TOOLS = {"read", "read_file", "view", "view_file", "open", "open_file", "cat"}
_EDIT_TOOLS = {"edit", "write", "multiedit", "write_file", "edit_file", "create_file", "create",
               "apply_patch", "str_replace", "insert"}
_EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool", "edit_tool", "editor", "file_editor"}
_PATH_KEYS = ("path", "file_path", "filename", "file", "target_file")
_COMMAND_KEYS = ("command", "cmd", "keystrokes", "script")


def _content_text(content: Any) -> str:
    """An ATIF message or observation content: a string, or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return shlex.join(value)
    return None


def _tool_step(name: str, arguments: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    """(action, command, path) of one tool call."""
    lowered = name.lower()
    path = next((arguments[key] for key in _PATH_KEYS if isinstance(arguments.get(key), str)), None)
    if lowered in _EDITOR_TOOLS:
        sub = arguments.get("command")
        return ("view" if sub == "view" else "edit"), None, path
    if lowered in _VIEW_TOOLS and path:
        return "view", None, path
    if lowered in _EDIT_TOOLS:
        return "edit", None, path
    for key in _COMMAND_KEYS:
        command = _command_text(arguments.get(key))
        if command is not None:
            return "command", command, None
    return "message", None, path


def atif_to_trajectory(data: Mapping[str, Any], agent: str) -> Trajectory:
    """The suite's normalized trajectory of an ATIF document.

    Each agent tool call becomes one step (a shell command, a file view or edit, or a
    message naming the tool), with the observation results answering it as its output; an
    agent turn without tool calls becomes a message step. System and user turns (the task's
    prompt) are not the agent's actions and are left out. A turn's token counts go on its
    first step.
    """
    trajectory = Trajectory(agent=agent)
    last_message: str | None = None
    steps = data.get("steps")
    steps = [turn for turn in steps if isinstance(turn, dict)] if isinstance(steps, list) else []
    # OpenClaw answers each tool call in a later agent step naming it (`extra.tool_call_id`):
    # that answer is the call's output, not a turn of its own.
    answered = {str(_object(turn.get("extra")).get("tool_call_id")): turn for turn in steps
                if not turn.get("tool_calls") and _object(turn.get("extra")).get("tool_call_id")}
    for turn in steps:
        if turn.get("source") != "agent" or (not turn.get("tool_calls")
                                             and _object(turn.get("extra")).get("tool_call_id")):
            continue
        message = _content_text(turn.get("message"))
        last_message = message or last_message
        results = _object(turn.get("observation")).get("results")
        results = [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
        calls = [c for c in turn.get("tool_calls") or [] if isinstance(c, dict)]
        metrics = _object(turn.get("metrics"))
        tokens = {"prompt_tokens": _int(metrics.get("prompt_tokens")),
                  "completion_tokens": _int(metrics.get("completion_tokens"))}
        made = []
        # Results linked to no call (Terminus-2's one terminal screen after a batch of
        # keystrokes) answer the turn's last command: what the screen shows once all of them ran.
        unlinked = [r for r in results if not r.get("source_call_id")]
        kinds = [_tool_step(str(call.get("function_name") or ""), _object(call.get("arguments"))) for call in calls]
        commands = [position for position, kind in enumerate(kinds) if kind[0] == "command"]
        last = commands[-1] if commands else len(calls) - 1
        for position, call in enumerate(calls):
            call_id = call.get("tool_call_id")
            answers = [r for r in results if r.get("source_call_id") == call_id]
            if not answers and str(call_id) in answered:
                later = _object(answered[str(call_id)].get("observation")).get("results")
                answers = [r for r in later if isinstance(r, dict)] if isinstance(later, list) else []
            if not answers and position == last:
                answers = unlinked
            output = "\n".join(_content_text(r.get("content")) for r in answers)
            name = str(call.get("function_name") or "")
            arguments = _object(call.get("arguments"))
            action, command, path = kinds[position]
            if action == "message":
                output = f"{name} {json.dumps(arguments, sort_keys=True, ensure_ascii=False)}\n{output}".rstrip()
            made.append(trajectory.add(action, command=command, path=path, output=output))
        if not calls and message:
            made.append(trajectory.add("message", output=message))
        if made:
            made[0].prompt_tokens, made[0].completion_tokens = tokens["prompt_tokens"], tokens["completion_tokens"]
    trajectory.final_message = last_message
    return trajectory


def read_atif(path: Path, agent: str) -> tuple[Trajectory | None, str | None]:
    """(normalized trajectory, None), or (None, why the file cannot be read)."""
    data, why = read_object(path)
    if data is None:
        return None, why
    return atif_to_trajectory(data, agent), None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

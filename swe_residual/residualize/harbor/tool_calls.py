"""The tool calls of an ATIF trial that acted through tools (OpenClaw), as machine-track interactions.

OpenClaw (run by Harbor as an installed agent) acts through tools, recorded in the trial's
`agent/trajectory.json` (ATIF-v1.6): each assistant turn is an agent step with `tool_calls`
(`function_name`, `arguments`, `tool_call_id`), and each answer a later agent step whose
`extra.tool_call_id` names the call, with the text the tool returned
(`observation.results[].content`) and, for commands, `extra.exec_status` (`completed`,
`failed`, `running`: moved to the background after its yield time, `error`: refused by the
tool before running) and `extra.exec_exit_code`. A trajectory that links results the standard
way (`observation.results[].source_call_id` in the calling step) is read the same way.

Each call becomes what rebuilds its effect on the machine (states/tool_calls.py's forms):

| tool | replayed as |
|---|---|
| `exec` | one command, `sh -c` (OpenClaw's shell) at its `workdir`, else the session's recorded `cwd`, else the task's workdir; run to its end within its `timeout` (at most `MAX_TIMEOUT_SEC`; at least `MIN_ENDED_TIMEOUT_SEC` when the recording saw it end); the output and exit status the agent saw kept as `observed`, with the set-up's own files it names (`WORKSPACE_FILES`) listed as `harness_files` |
| `write` | `{"write": path, "content": ...}` |
| `edit` | `{"edit": path, "replace": [{"old", "new"}, ...]}` (OpenClaw's `edits` of `oldText`/`newText`) |
| `read`, `web_search`, `web_fetch`, `memory_*`, `session_status` | nothing: they change nothing on the machine (counted) |
| `process` `poll`/`log`/`list` | nothing: a wait for a command the replay already ran to its end (counted) |

A call the tool answered with an error never ran and is skipped (counted). Anything else is
refused, with the step that made it: an `exec` in the background or on a pty, one that ended by
a signal or was left running, `process` `kill`/`write`/`send-keys`, and any other tool
(`browser`, `canvas`, `image`, ...): what it did cannot be replayed.

Declared done (harbor/declared.py): the agent's last turn calls no tool and its message reports
the work rather than announcing a next action ("Let me try a Python approach..." is a run that
stopped, not a claim).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.dataset.harbor_layout import read_object
from swe_residual.residualize.harbor.declared import Declaration, final_message_declaration

MAX_TIMEOUT_SEC = 1800.0  # OpenClaw's own default deadline for a command
# A command the recording saw end gets at least this long in a replay: a slower or busier
# machine must not cut short what finished there (an `apt-get install` given 120 s took 62).
MIN_ENDED_TIMEOUT_SEC = 600.0
# The files OpenClaw's set-up writes into its working directory before the agent's first turn
# (its workspace bootstrap files): no tool call made them, so no replay makes them again.
WORKSPACE_FILES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md",
                   "MEMORY.md")
SHELL = "sh"  # OpenClaw runs `sh -c` (its errors read `sh: 1: ...: not found`)
NO_EFFECT = frozenset({"read", "web_search", "web_fetch", "session_status", "memory_search", "memory_get",
                       "sessions_list", "sessions_history", "agents_list"})
WAITS = frozenset({"poll", "log", "list"})
_BACKGROUNDED = re.compile(r"Command still running \(session ([\w-]+)")
_EXITED = re.compile(r"Process exited with code (-?\d+)\.?\s*$")
_SIGNALLED = re.compile(r"Process exited with signal (\w+)")


@dataclass
class ToolCalls:
    interactions: list[dict[str, Any]]
    source: str  # where they were read, relative to the trial directory
    declared_done: bool
    counts: dict[str, int] = field(default_factory=dict)  # replayed / skipped per tool and reason
    refused: str | None = None  # why the calls cannot rebuild the final state
    declared_how: str = ""  # the evidence for declared_done, in one line


@dataclass(frozen=True)
class _Answer:
    text: str
    status: str | None
    exit_code: int | None
    error: bool


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _answers(steps: list[dict[str, Any]]) -> dict[str, _Answer]:
    found: dict[str, _Answer] = {}
    for step in steps:
        extra = step.get("extra") if isinstance(step.get("extra"), dict) else {}
        results = (step.get("observation") or {}).get("results") if isinstance(step.get("observation"), dict) else None
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, dict):
                continue
            call_id = result.get("source_call_id") or extra.get("tool_call_id")
            if not isinstance(call_id, str):
                continue
            text = _text(result.get("content"))
            status = extra.get("exec_status") if isinstance(extra.get("exec_status"), str) else None
            code = extra.get("exec_exit_code")
            refused = status == "error" or extra.get("is_error") is True or text.lstrip().startswith(
                '{\n  "status": "error"')
            found[call_id] = _Answer(text, status, code if isinstance(code, int) else None, refused)
    return found


def _agent_turns(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's own turns: not the steps that only carry a tool's answer."""
    turns = []
    for step in steps:
        extra = step.get("extra") if isinstance(step.get("extra"), dict) else {}
        if step.get("source") != "agent" or step.get("is_copied_context"):
            continue
        if extra.get("openclaw_role") == "toolResult" or (not step.get("tool_calls") and extra.get("tool_call_id")):
            continue
        turns.append(step)
    return turns


def _session_cwd(agent_dir: Path) -> str | None:
    """The working directory OpenClaw's session recorded (`openclaw-session.jsonl`, first line)."""
    try:
        with (agent_dir / "openclaw-session.jsonl").open(encoding="utf-8") as handle:
            first = json.loads(handle.readline() or "null")
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    cwd = first.get("cwd") if isinstance(first, dict) else None
    return cwd if isinstance(cwd, str) and cwd.startswith("/") else None


def _observed(exit_code: int, text: str) -> dict[str, Any]:
    """What the agent saw; the set-up's own files it lists are named, to be set aside."""
    observed: dict[str, Any] = {"exit_code": exit_code, "output": text}
    named = [name for name in WORKSPACE_FILES if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", text)]
    if named:
        observed["harness_files"] = named
    return observed


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return MAX_TIMEOUT_SEC
    return min(float(value), MAX_TIMEOUT_SEC)


class _Reader:
    def __init__(self, answers: dict[str, _Answer], cwd: str | None) -> None:
        self.answers, self.cwd = answers, cwd
        self.lines: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()
        self.background: dict[str, dict[str, Any]] = {}  # session -> its command's line, until seen ending
        self.refused: str | None = None

    def refuse(self, step: Any, name: str, why: str) -> None:
        if self.refused is None:
            self.refused = f"step {step}: {name}: {why}"

    def call(self, step: Any, call: dict[str, Any]) -> None:
        name = str(call.get("function_name") or "")
        arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
        answer = self.answers.get(str(call.get("tool_call_id")))
        if answer is not None and answer.error:
            self.counts[f"skipped: {name} answered with an error (never ran)"] += 1
        elif name == "exec":
            self.exec(step, arguments, answer)
        elif name == "write":
            path, content = arguments.get("path") or arguments.get("file_path"), arguments.get("content")
            if not isinstance(path, str) or not isinstance(content, str):
                self.refuse(step, name, "no path or content in its arguments")
                return
            self.lines.append({"write": path, "content": content})
            self.counts["replayed: write"] += 1
        elif name == "edit":
            self.edit(step, arguments)
        elif name in NO_EFFECT:
            self.counts[f"skipped: {name} (changes nothing on the machine)"] += 1
        elif name == "process":
            self.process(step, arguments, answer)
        else:
            self.refuse(step, name or "(unnamed)", "a tool whose effect on the machine cannot be replayed")

    def exec(self, step: Any, arguments: dict[str, Any], answer: _Answer | None) -> None:
        command = arguments.get("command")
        if not isinstance(command, str):
            self.refuse(step, "exec", "no command in its arguments")
            return
        for flag in ("background", "pty", "elevated"):
            if arguments.get(flag):
                self.refuse(step, "exec", f"run with `{flag}`: its effect cannot be replayed as one command")
                return
        line: dict[str, Any] = {"command": command, "shell": SHELL, "timeout_sec": _timeout(arguments.get("timeout"))}
        cwd = arguments.get("workdir") if isinstance(arguments.get("workdir"), str) else self.cwd
        if cwd:
            line["cwd"] = cwd
        if answer is not None and answer.status in ("completed", "failed"):
            if answer.exit_code is None:
                self.refuse(step, "exec", f"ended without an exit status ({answer.text.strip()[-80:]!r}): "
                                          "a command stopped part-way cannot be replayed")
                return
            line["observed"] = _observed(answer.exit_code, answer.text)
            line["timeout_sec"] = max(line["timeout_sec"], MIN_ENDED_TIMEOUT_SEC)
        elif answer is not None and answer.status == "running":
            session = _BACKGROUNDED.search(answer.text)
            if session is None:
                self.refuse(step, "exec", "moved to the background under no session name")
                return
            self.background[session.group(1)] = line
        self.lines.append(line)
        self.counts["replayed: exec"] += 1

    def edit(self, step: Any, arguments: dict[str, Any]) -> None:
        path = arguments.get("path") or arguments.get("file_path")
        edits = arguments.get("edits")
        if edits is None and "oldText" in arguments:
            edits = [{"oldText": arguments.get("oldText"), "newText": arguments.get("newText")}]
        replace = []
        for item in edits if isinstance(edits, list) else []:
            old = item.get("oldText", item.get("old_string")) if isinstance(item, dict) else None
            new = item.get("newText", item.get("new_string")) if isinstance(item, dict) else None
            if isinstance(old, str) and old and isinstance(new, str):
                replace.append({"old": old, "new": new})
        if not isinstance(path, str) or not replace or len(replace) != len(edits or []):
            self.refuse(step, "edit", "no path, or an edit without its old and new text")
            return
        self.lines.append({"edit": path, "replace": replace})
        self.counts["replayed: edit"] += 1

    def process(self, step: Any, arguments: dict[str, Any], answer: _Answer | None) -> None:
        action, session = arguments.get("action"), arguments.get("sessionId")
        if action not in WAITS:
            self.refuse(step, f"process {action}", "acts on a running command: what it did cannot be replayed")
            return
        self.counts[f"skipped: process {action} (a wait: the replay runs each command to its end)"] += 1
        line = self.background.get(session) if isinstance(session, str) else None
        if line is None or answer is None:
            return
        if _SIGNALLED.search(answer.text):
            self.refuse(step, f"process {action}", f"its command ended by a signal ({answer.text.strip()[-60:]!r})")
        elif (ended := _EXITED.search(answer.text)) is not None:
            line["observed"] = {"exit_code": int(ended.group(1))}  # its output came in pieces: not compared
            line["timeout_sec"] = max(line["timeout_sec"], MIN_ENDED_TIMEOUT_SEC)
            del self.background[session]


def interactions_jsonl(entries: list[dict[str, Any]]) -> bytes:
    """Interactions as the bytes of `commands.jsonl` (import and `dataset build` write the same)."""
    return "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries).encode()


def read_tool_calls(trial_dir: Path) -> ToolCalls | None:
    """The trial's tool calls as interactions (none: it only answered in words), or None when its
    trajectory records no turn of the agent."""
    agent_dir = trial_dir / "agent"
    data, _ = read_object(agent_dir / "trajectory.json")
    steps = [step for step in (data or {}).get("steps") or [] if isinstance(step, dict)]
    turns = _agent_turns(steps)
    if not turns:
        return None
    reader = _Reader(_answers(steps), _session_cwd(agent_dir))
    for turn in turns:
        for call in turn.get("tool_calls") or []:
            if isinstance(call, dict):
                reader.call(turn.get("step_id"), call)
    if reader.refused is None and reader.background:
        session = sorted(reader.background)[0]
        reader.refused = (f"exec {reader.background[session]['command'][:80]!r} went on in the background "
                          f"(session {session}) and was never seen to end: the replay would run it to its end")
    if turns[-1].get("tool_calls"):
        declaration = Declaration(False, f"its last turn (step {turns[-1].get('step_id')}) called a tool: "
                                         "the run stopped")
    else:
        message = turns[-1].get("message")
        declaration = final_message_declaration(message if isinstance(message, str) else None)
    return ToolCalls(reader.lines, "agent/trajectory.json", declaration.declared, dict(sorted(reader.counts.items())),
                     reader.refused, declaration.how)

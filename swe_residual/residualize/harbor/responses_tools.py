"""The tool calls of a Harbor trial whose agent logs its own events (ThinHarness, Pi), as
machine-track interactions.

The layout read (ryanbbrown/ThinHarness-terminal-bench: `agent_info.name =
"direct-openai-pairwise"`, a runner that installs the harness in the task container and runs its
loop there, as root, in `/app`), relative to the trial directory. ThinHarness 0.7.0:

| file | what it holds |
|---|---|
| `agent/thinharness-events.jsonl` | one line per model request, `{"payload", "response", "sequence", "usage"}`: `payload` the OpenAI Responses request, `response` the whole response. The calls are the response's `output[]` items of type `function_call` (`name`, `arguments` a JSON string, `call_id`); their results the next request's `payload.input[]` items of type `function_call_output` (`call_id`, `output` a JSON string `{"ok", "content", "metadata"}`) |

A `bash` result's `content` is `stdout:\\n` STDOUT `\\nstderr:\\n` STDERR (each `(no output)` when
empty), its `metadata` `exit_code`, `timed_out`, `cwd`, `timeout_seconds`, `stdout_bytes`,
`stdout_truncated`, `stderr_truncated`. Each call "starts a fresh shell".

Pi 0.84.2 logs a different form, its session's JSON events:

| file | what it holds |
|---|---|
| `agent/pi-events.jsonl` | `{"type": "session", "cwd"}`, then per turn `message_end` of the `assistant` message (`content` blocks `text`, `thinking`, `toolCall` with `id`, `name`, `arguments` an object; `stopReason` `toolUse`, `stop`, ...) and one `tool_execution_end` per call (`toolCallId`, `result.content[]` text, `result.details`, `isError`) |

Pi's `bash` takes `{command, timeout?}` (no cwd: the session's) and shows stdout and stderr as one
stream; a non-zero exit makes the result an error whose text ends `\\n\\nCommand exited with
code N` (the output `(no output)` when empty); a cut output ends with a `[Showing ...]` or
`[Output truncated ...]` note. Its `edit` takes `{path, edits: [{oldText, newText}]}` and
applies all or none; its `write` `{path, content}`.

| recorded | replayed as |
|---|---|
| `bash` with its result | one command, `bash -c` (a fresh shell per call), in its cwd (ThinHarness: the `cwd` its result's metadata resolved; Pi: the session's), within its deadline (at least `MIN_ENDED_TIMEOUT_SEC`: it ended when recorded; Pi's calls without one, the runner's `RUN_LIMIT_SEC`), the exit status and output the agent saw kept as `observed` (only the exit status when the output was cut, or, ThinHarness, when both streams printed: the order they interleaved in is lost) |
| `write` | `{"write": path, "content": ...}` |
| `edit` | `{"edit": path, "replace": [{"old", "new"}, ...]}`, one line per run of edits of one file (ThinHarness's edits may name several files) |
| `read` (Pi also `grep`, `find`, `ls`) | nothing: they change nothing on the machine (counted) |
| a `write` or `edit` answered with an error | nothing: it never changed the file (counted) |

Calls of one response run in order, one after the other (both harnesses may run them in
parallel). The harness's own install (its venv, node, staged files) is not replayed: no call
made it.

Refused, with the request's sequence (ThinHarness) or the turn (Pi) that made it: a call with no
result (the run ended while it ran), a timed-out or aborted `bash`, one without its exit status,
a `write` with `append` (the interactions have no append), an edit that replaces every
occurrence (`all` with `expected_replacements` not 1: an interaction's edit replaces one), a
ThinHarness batch of several edits answered with an error (some may have taken effect), any
other tool, a line that is not JSON, and a gap in the sequence.

Declared done (harbor/declared.py): the last response calls no tool, completed
(ThinHarness: `status` `completed`; Pi: `stopReason` `stop`), and its text reports the work;
a last response that calls a tool, or was cut off, is a run that stopped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from swe_residual.residualize.harbor.declared import Declaration, final_message_declaration
from swe_residual.residualize.harbor.tool_calls import MIN_ENDED_TIMEOUT_SEC, ToolCalls

THIN_EVENTS = "agent/thinharness-events.jsonl"
PI_EVENTS = "agent/pi-events.jsonl"
EVENT_FILES = (THIN_EVENTS, PI_EVENTS)
SHELL = "bash"
# The runner's bound on the agent's whole run (`environment.exec(..., timeout_sec=1800)`): no
# call outlasted it.
RUN_LIMIT_SEC = 1800.0
NO_EFFECT = frozenset({"read", "grep", "find", "ls"})
_NO_OUTPUT = "(no output)"
_STDOUT, _STDERR = "stdout:\n", "\nstderr:\n"
_PI_EXITED = re.compile(r"\n*Command exited with code (-?\d+)\s*$")
_PI_CUT = re.compile(r"\n\n\[(?:Showing |Output truncated)")
_PI_STOPPED = re.compile(r"Command (?:timed out|aborted)")


class _Refused(Exception):
    """What makes the trial's calls unreplayable, with where it was recorded."""


def _lines(trial_dir: Path, name: str) -> list[dict[str, Any]]:
    events = []
    try:
        text = (trial_dir / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Refused(f"{name} cannot be read ({exc.__class__.__name__})") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _Refused(f"{name} line {number} is not JSON: {exc}") from exc
        if isinstance(event, dict):
            events.append(event)
    return events


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _timeout(given: Any) -> float:
    """A call's deadline as given, at least MIN_ENDED_TIMEOUT_SEC (it ended); the run's bound without one."""
    if isinstance(given, bool) or not isinstance(given, (int, float)) or given <= 0:
        return RUN_LIMIT_SEC
    return max(float(given), MIN_ENDED_TIMEOUT_SEC)


class _Reader:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()

    def command(self, command: str, cwd: str | None, timeout: float, observed: dict[str, Any]) -> None:
        line: dict[str, Any] = {"command": command, "shell": SHELL, "timeout_sec": timeout}
        if cwd:
            line["cwd"] = cwd
        line["observed"] = observed
        self.lines.append(line)
        self.counts["replayed: bash"] += 1
        if "output" not in observed:
            self.counts["observed: exit status only (output cut, or two streams whose order is lost)"] += 1

    def write(self, where: str, arguments: dict[str, Any], failed: bool) -> None:
        path, content = arguments.get("path"), arguments.get("content")
        if not isinstance(path, str) or not path.strip() or not isinstance(content, str):
            raise _Refused(f"{where}: write without a path and a content")
        if arguments.get("append") is True:
            raise _Refused(f"{where}: write {path} with append: the interactions have no append "
                           "(a write puts the whole content)")
        if failed:
            self.counts["skipped: write answered with an error (never wrote)"] += 1
            return
        self.lines.append({"write": path, "content": content})
        self.counts["replayed: write"] += 1

    def edits(self, edits: list[tuple[str, str, str]]) -> None:
        """(path, old, new) of one call, in order: one edit line per run of edits of one file."""
        lines: list[dict[str, Any]] = []
        for path, old, new in edits:
            if lines and lines[-1]["edit"] == path:
                lines[-1]["replace"].append({"old": old, "new": new})
            else:
                lines.append({"edit": path, "replace": [{"old": old, "new": new}]})
        self.lines.extend(lines)
        self.counts["replayed: edit"] += len(lines)

    def other(self, where: str, name: str) -> None:
        if name in NO_EFFECT:
            self.counts[f"skipped: {name} (changes nothing on the machine)"] += 1
            return
        raise _Refused(f"{where}: {name or '(unnamed)'}: a tool whose effect on the machine cannot be replayed")


# ThinHarness

def _thin_result(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    return data if isinstance(data, dict) else {"ok": False, "content": text, "metadata": {}}


def _thin_streams(content: str, metadata: dict[str, Any]) -> tuple[str, str] | None:
    """(stdout, stderr) of a bash result's content, or None when they cannot be told apart."""
    if not content.startswith(_STDOUT):
        return None
    body = content[len(_STDOUT):]
    size = metadata.get("stdout_bytes")
    for found in re.finditer(re.escape(_STDERR), body):
        stdout, stderr = body[:found.start()], body[found.end():]
        stdout = "" if stdout == _NO_OUTPUT and size == 0 else stdout
        if not isinstance(size, int) or len(stdout.encode("utf-8")) == size:
            return stdout, "" if stderr == _NO_OUTPUT else stderr
    return None


def _thin_observed(where: str, command: str, result: dict[str, Any]) -> dict[str, Any] | None:
    """What the agent saw of a bash call; None when the tool refused it (it never ran)."""
    metadata = _object(result.get("metadata"))
    shown = command[:80]
    if metadata.get("timed_out") is True:
        raise _Refused(f"{where}: bash {shown!r} timed out: a command cut short cannot be replayed")
    code = metadata.get("exit_code")
    if isinstance(code, bool) or not isinstance(code, int):
        if result.get("ok") is False:
            return None
        raise _Refused(f"{where}: bash {shown!r} has a result without its exit status")
    if code < 0:
        raise _Refused(f"{where}: bash {shown!r} ended by signal {-code}: a command cut short cannot be replayed")
    observed: dict[str, Any] = {"exit_code": code}
    content = result.get("content")
    streams = _thin_streams(content, metadata) if isinstance(content, str) else None
    cut = metadata.get("stdout_truncated") is True or metadata.get("stderr_truncated") is True
    if streams is not None and not cut and not (streams[0] and streams[1]):
        observed["output"] = streams[0] or streams[1]
    return observed


def _thin_call(reader: _Reader, where: str, item: dict[str, Any], result: dict[str, Any]) -> None:
    name = str(item.get("name") or "")
    try:
        arguments = json.loads(item.get("arguments") or "{}")
    except (TypeError, json.JSONDecodeError) as exc:
        raise _Refused(f"{where}: {name}: its arguments are not JSON") from exc
    if not isinstance(arguments, dict):
        raise _Refused(f"{where}: {name}: its arguments are not an object")
    failed = result.get("ok") is False
    if name == "bash":
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _Refused(f"{where}: bash without a command")
        observed = _thin_observed(where, command, result)
        if observed is None:
            reader.counts["skipped: bash answered with an error (never ran)"] += 1
            return
        metadata = _object(result.get("metadata"))
        cwd = metadata.get("cwd") if isinstance(metadata.get("cwd"), str) else arguments.get("cwd")
        reader.command(command, cwd if isinstance(cwd, str) and cwd not in ("", ".") else None,
                       _timeout(metadata.get("timeout_seconds", arguments.get("timeout"))), observed)
    elif name == "write":
        reader.write(where, arguments, failed)
    elif name == "edit":
        items = arguments.get("edits")
        if not isinstance(items, list) or not items:
            raise _Refused(f"{where}: edit without its list of edits")
        if failed:
            if len(items) > 1:
                raise _Refused(f"{where}: a batch of {len(items)} edits answered with an error: "
                               "some may have taken effect, which is not recorded")
            reader.counts["skipped: edit answered with an error (never changed the file)"] += 1
            return
        edits = []
        for edit in items:
            path = edit.get("path") if isinstance(edit, dict) else None
            old = edit.get("old_string") if isinstance(edit, dict) else None
            new = edit.get("new_string") if isinstance(edit, dict) else None
            if not isinstance(path, str) or not isinstance(old, str) or not old or not isinstance(new, str):
                raise _Refused(f"{where}: edit without its path, old and new text")
            if edit.get("all") is True and edit.get("expected_replacements") != 1:
                raise _Refused(f"{where}: edit of {path} replaces every occurrence (all=true): "
                               "an interaction's edit replaces one")
            edits.append((path, old, new))
        reader.edits(edits)
    else:
        reader.other(where, name)


def _thin_text(response: dict[str, Any]) -> str:
    return "\n\n".join(part["text"] for item in response.get("output") or [] if isinstance(item, dict)
                       and item.get("type") == "message" for part in item.get("content") or []
                       if isinstance(part, dict) and isinstance(part.get("text"), str))


def _read_thin(trial_dir: Path, reader: _Reader) -> tuple[str | None, Declaration]:
    try:
        events = _lines(trial_dir, THIN_EVENTS)
    except _Refused as why:
        return str(why), Declaration(False, f"{why}: the claim is unknown")
    events.sort(key=lambda event: number if isinstance(number := event.get("sequence"), int) else -1)
    sequences = [event.get("sequence") for event in events]
    if not events:
        return f"{THIN_EVENTS} records no request", Declaration(False, "no response recorded: the claim is unknown")
    refused: str | None = None
    if sequences != list(range(1, len(events) + 1)):
        refused = f"the requests' sequence is not 1 to {len(events)} ({sequences[:3]}...)"
    outputs: dict[str, dict[str, Any]] = {}
    for event in events:
        payload = _object(event.get("payload"))
        given = payload.get("input")
        for item in given if isinstance(given, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output" and isinstance(item.get("output"), str):
                outputs[str(item.get("call_id"))] = _thin_result(item["output"])
    for event in events:
        if refused is not None:
            break
        where = f"sequence {event.get('sequence')}"
        response = _object(event.get("response"))
        try:
            for item in response.get("output") or []:
                if not isinstance(item, dict) or item.get("type") != "function_call":
                    continue
                result = outputs.get(str(item.get("call_id")))
                if result is None:
                    raise _Refused(f"{where}: {item.get('name')} has no result: the run ended while it ran, "
                                   "and a call cut short cannot be replayed")
                _thin_call(reader, where, item, result)
        except _Refused as why:
            refused = str(why)
    last, number = events[-1].get("response"), events[-1].get("sequence")
    if not isinstance(last, dict):
        return refused, Declaration(False, f"its last request (sequence {number}) has no response: the run stopped")
    calls = [str(item.get("name")) for item in last.get("output") or []
             if isinstance(item, dict) and item.get("type") == "function_call"]
    if calls:
        return refused, Declaration(False, f"its last response (sequence {number}) called {', '.join(calls)}: "
                                           "the run stopped")
    if last.get("status") != "completed":
        return refused, Declaration(False, f"its last response (sequence {number}) ended with status "
                                           f"{last.get('status')!r}, not completed: the run stopped")
    found = final_message_declaration(_thin_text(last))
    return refused, Declaration(found.declared, f"sequence {number}: {found.how}")


# Pi

def _pi_text(content: Any) -> str:
    return "\n".join(part["text"] for part in content if isinstance(part, dict) and part.get("type") == "text"
                     and isinstance(part.get("text"), str)) if isinstance(content, list) else ""


def _pi_observed(where: str, command: str, result: dict[str, Any], error: bool) -> dict[str, Any]:
    text = _pi_text(result.get("content"))
    shown = command[:80]
    code = 0
    if error:
        if _PI_STOPPED.search(text[-200:]):
            raise _Refused(f"{where}: bash {shown!r} timed out or was aborted: a command cut short cannot be replayed")
        exited = _PI_EXITED.search(text)
        if exited is None:
            raise _Refused(f"{where}: bash {shown!r} has a result without its exit status ({text[-80:]!r})")
        code, text = int(exited.group(1)), text[:exited.start()]
    observed: dict[str, Any] = {"exit_code": code}
    details = _object(result.get("details"))
    if not details.get("truncation") and not _PI_CUT.search(text):
        observed["output"] = "" if text.strip() == _NO_OUTPUT else text
    return observed


def _pi_call(reader: _Reader, where: str, call: dict[str, Any], cwd: str | None,
             results: dict[str, tuple[dict[str, Any], bool]]) -> None:
    name = str(call.get("name") or "")
    arguments = _object(call.get("arguments"))
    answer = results.get(str(call.get("id")))
    if answer is None:
        raise _Refused(f"{where}: {name} has no result: the run ended while it ran, and a call cut short "
                       "cannot be replayed")
    result, error = answer
    if name == "bash":
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _Refused(f"{where}: bash without a command")
        reader.command(command, cwd, _timeout(arguments.get("timeout")), _pi_observed(where, command, result, error))
    elif name == "write":
        reader.write(where, arguments, error)
    elif name == "edit":
        path = arguments.get("path")
        items = arguments.get("edits")
        if items is None and "oldText" in arguments:
            items = [{"oldText": arguments.get("oldText"), "newText": arguments.get("newText")}]
        if error:
            reader.counts["skipped: edit answered with an error (never changed the file)"] += 1
            return
        edits = []
        for edit in items if isinstance(items, list) else []:
            old = edit.get("oldText") if isinstance(edit, dict) else None
            new = edit.get("newText") if isinstance(edit, dict) else None
            if isinstance(path, str) and isinstance(old, str) and old and isinstance(new, str):
                edits.append((path, old, new))
        if not edits or len(edits) != len(items or []):
            raise _Refused(f"{where}: edit without its path, or an edit without its old and new text")
        reader.edits(edits)
    else:
        reader.other(where, name)


def _read_pi(trial_dir: Path, reader: _Reader) -> tuple[str | None, Declaration]:
    try:
        events = _lines(trial_dir, PI_EVENTS)
    except _Refused as why:
        return str(why), Declaration(False, f"{why}: the claim is unknown")
    cwd = next((event["cwd"] for event in events if event.get("type") == "session"
                and isinstance(event.get("cwd"), str)), None)
    turns = [event["message"] for event in events if event.get("type") == "message_end"
             and isinstance(event.get("message"), dict) and event["message"].get("role") == "assistant"]
    results = {str(event.get("toolCallId")): (event["result"] if isinstance(event.get("result"), dict) else {},
                                              event.get("isError") is True)
               for event in events if event.get("type") == "tool_execution_end"}
    if not turns:
        return f"{PI_EVENTS} records no turn of the agent", Declaration(False, "no turn recorded: the claim is unknown")
    refused: str | None = None
    for number, turn in enumerate(turns, start=1):
        try:
            for block in turn.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    _pi_call(reader, f"turn {number}", block, cwd, results)
        except _Refused as why:
            refused = str(why)
            break
    last, number = turns[-1], len(turns)
    blocks = [block for block in last.get("content") or [] if isinstance(block, dict)]
    calls = [str(block.get("name")) for block in blocks if block.get("type") == "toolCall"]
    if calls:
        return refused, Declaration(False, f"its last turn ({number}) called {', '.join(calls)}: the run stopped")
    if last.get("stopReason") != "stop":
        return refused, Declaration(False, f"its last turn ({number}) ended with stopReason "
                                           f"{last.get('stopReason')!r}, not stop: the run stopped")
    found = final_message_declaration(_pi_text(blocks))
    return refused, Declaration(found.declared, f"turn {number}: {found.how}")


def read_responses_tool_calls(trial_dir: Path) -> ToolCalls | None:
    """The trial's tool calls as interactions, or None when it has no ThinHarness or Pi events file."""
    reader = _Reader()
    if (trial_dir / THIN_EVENTS).is_file():
        source, (refused, declaration) = THIN_EVENTS, _read_thin(trial_dir, reader)
    elif (trial_dir / PI_EVENTS).is_file():
        source, (refused, declaration) = PI_EVENTS, _read_pi(trial_dir, reader)
    else:
        return None
    return ToolCalls(reader.lines, source, declaration.declared, dict(sorted(reader.counts.items())), refused,
                     declaration.how)

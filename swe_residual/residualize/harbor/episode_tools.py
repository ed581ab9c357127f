"""The bash calls of a Harbor trial whose agent logs each model turn as an episode of Anthropic
Messages (ktb-openrouter), as machine-track interactions.

The layout read (`ktb.harbor_agent:OpenRouterHarborAgent` of captaindpt/kill-terminalbench,
`agent_info.name = "ktb-openrouter"`, one tool `bash`), relative to the trial directory:

| file | what it holds |
|---|---|
| `agent/episodes/episode-N/response.json` | the model's answer (an Anthropic Messages response): `content` blocks `text`, `thinking`, `tool_use` (`name: "bash"`, `input.command`, `input.timeout_sec`?), and `stop_reason` |
| `agent/episodes/episode-N/tool-results.json` | `[{"type": "tool_result", "tool_use_id", "content"}]`, one per bash call run, written after all of the episode's calls ran |
| `agent/persisted-tool-results/episode-N/tool-II.txt` | the whole text of a result too long for the context (its `content` is then `[persisted_output]`, the path the harness uploaded it to, and a preview) |
| `config.json` | `agent.kwargs.command_timeout`, the bound on every call's deadline |

How the agent ran a call, which the replay repeats: Harbor's `environment.exec(command,
timeout_sec=...)`, i.e. `docker compose exec main bash -c COMMAND` (the trials' `ps` listings
show `bash -c`), as root, in the image's WORKDIR (no `-w`: the task's workdir), a fresh shell
per call, stdout and stderr in one stream. Its deadline is `min(input.timeout_sec,
command_timeout)`; a call that reaches it makes Harbor raise ("Command timed out after N
seconds") and ends the trial, so every answered call ended by itself (the formatter's
"command timed out" note is its label for any exit status 143, the command's own). A result's
text is `[exit_code=N]` (or `[exit_code=N; note=...]`), a blank line, then the output, or
`(no output)`.

| recorded | replayed as |
|---|---|
| the agent's set-up | `mkdir -p /tmp/ktb-agent-artifacts` (the harness's directory for long outputs) |
| a `bash` call with its result | one command, `bash -c`, at the task's workdir, within its deadline (at least `MIN_ENDED_TIMEOUT_SEC`: it ended when recorded), the output and exit status the agent saw kept as `observed` |
| a long result the harness persisted | after the episode's commands, `{"write": "/tmp/ktb-agent-artifacts/episode-NNN-tool-II.txt", "content": ...}`: the harness uploaded it there, and the agent may read it |
| an empty command | nothing: the harness answered it without running anything (counted) |
| a `tool_use` of another tool | nothing: the agent runs only `bash` (counted) |

Refused, with the episode that made it: a bash call with no result (the run ended while it ran:
a command cut short cannot be replayed), a result without its exit status, a persisted result
whose file is missing, an episode missing from the sequence or whose files cannot be read.

Declared done (harbor/declared.py): the last episode ends its turn (`stop_reason: "end_turn"`)
with text and no `tool_use`, and that text reports the work ("The build is complete. ...");
a last episode that calls a tool, was cut off (`max_tokens`), or announces a next step is a run
that stopped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from swe_residual.dataset.harbor_layout import read_object
from swe_residual.residualize.harbor.declared import Declaration, final_message_declaration
from swe_residual.residualize.harbor.predev_tools import read_predev_tool_calls
from swe_residual.residualize.harbor.responses_tools import read_responses_tool_calls
from swe_residual.residualize.harbor.tool_calls import MIN_ENDED_TIMEOUT_SEC, ToolCalls, read_tool_calls

EPISODES = "agent/episodes"
PERSISTED = "agent/persisted-tool-results"
TOOL = "bash"
SHELL = "bash"  # Harbor's exec: `bash -c COMMAND`
ARTIFACT_DIR = "/tmp/ktb-agent-artifacts"  # the harness's REMOTE_ARTIFACT_DIR, made at set-up
SETUP_TIMEOUT_SEC = 30.0  # the harness's own deadline for that mkdir
# The agent's default `command_timeout` (300 s until its last version, 700 s since); a trial's
# config.json says which it ran with.
DEFAULT_COMMAND_TIMEOUT_SEC = 700.0
_EPISODE = re.compile(r"^episode-(\d+)$")
_HEADER = re.compile(r"^\[exit_code=(-?\d+)(?:; note=[^\]\n]*)?\]")
_PERSISTED = re.compile(r"^\[persisted_output\]\nFull output saved to (\S+)\n")
_PERSISTED_NAME = re.compile(r"episode-(\d+)-tool-(\d+)\.txt$")
_NO_OUTPUT = "(no output)"
_STDERR = "[stderr]\n"


class _Refused(Exception):
    """What makes the trial's calls unreplayable, with the episode that recorded it."""


def _episodes(trial_dir: Path) -> list[tuple[int, Path]]:
    root = trial_dir / EPISODES
    if not root.is_dir():
        return []
    found = [(int(match.group(1)), path) for path in root.iterdir()
             if path.is_dir() and (match := _EPISODE.match(path.name))]
    return sorted(found)


def _command_timeout(trial_dir: Path) -> float:
    config, _ = read_object(trial_dir / "config.json")
    agent = (config or {}).get("agent")
    kwargs = agent.get("kwargs") if isinstance(agent, dict) else None
    value = kwargs.get("command_timeout") if isinstance(kwargs, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return DEFAULT_COMMAND_TIMEOUT_SEC
    return float(value)


def _response(episode: int, path: Path) -> dict[str, Any]:
    data, why = read_object(path / "response.json")
    if data is None:
        raise _Refused(f"episode {episode}: {why}")
    if not isinstance(data.get("content"), list):
        raise _Refused(f"episode {episode}: response.json has no list of `content` blocks")
    return data


def _results(episode: int, path: Path) -> dict[str, str] | None:
    """tool_use_id -> the result's text, or None when the episode wrote no tool-results.json."""
    file = path / "tool-results.json"
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Refused(f"episode {episode}: tool-results.json cannot be read: {exc}") from exc
    if not isinstance(data, list):
        raise _Refused(f"episode {episode}: tool-results.json is not a list of tool results")
    found: dict[str, str] = {}
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("tool_use_id"), str) \
                or not isinstance(item.get("content"), str):
            raise _Refused(f"episode {episode}: tool-results.json holds an entry without a tool_use_id "
                           f"and a text content: {str(item)[:120]}")
        found[item["tool_use_id"]] = item["content"]
    return found


def _observed(episode: int, text: str) -> dict[str, Any]:
    """The exit status and output the agent saw, from the harness's formatted result."""
    header = _HEADER.match(text)
    if header is None:
        raise _Refused(f"episode {episode}: a result without its exit status ({text[:80]!r})")
    body = text[header.end():].removeprefix("\n\n")
    if body.strip() == _NO_OUTPUT:
        body = ""
    # Harbor's exec merges stderr into stdout; a separate stderr section is joined after it.
    stdout, marker, stderr = body.partition("\n\n" + _STDERR)
    if not marker and body.startswith(_STDERR):
        stdout, stderr = "", body[len(_STDERR):]
    output = f"{stdout}\n{stderr}" if stdout and stderr else stdout or stderr
    return {"exit_code": int(header.group(1)), "output": output}


class _Reader:
    def __init__(self, trial_dir: Path) -> None:
        self.trial_dir = trial_dir
        self.deadline = _command_timeout(trial_dir)
        self.lines: list[dict[str, Any]] = [{"command": f"mkdir -p {ARTIFACT_DIR}", "shell": SHELL,
                                             "timeout_sec": SETUP_TIMEOUT_SEC}]
        self.counts: Counter[str] = Counter({f"replayed: harness set-up (mkdir -p {ARTIFACT_DIR})": 1})

    def timeout(self, given: Any) -> float:
        """The call's deadline as the agent set it, made at least MIN_ENDED_TIMEOUT_SEC (it ended)."""
        deadline = self.deadline
        if not isinstance(given, bool) and isinstance(given, (int, float)) and given > 0:
            deadline = min(float(int(given)), deadline)  # the agent took int() of it
        return max(deadline, MIN_ENDED_TIMEOUT_SEC)

    def persisted(self, episode: int, content: str) -> tuple[str, str] | None:
        """(where the harness uploaded a long result, its whole text), or None for a short one."""
        found = _PERSISTED.match(content)
        if found is None:
            return None
        remote = found.group(1)
        name = _PERSISTED_NAME.search(remote)
        if name is None:
            raise _Refused(f"episode {episode}: a persisted result at an unknown path ({remote})")
        local = self.trial_dir / PERSISTED / f"episode-{int(name.group(1))}" / f"tool-{name.group(2)}.txt"
        try:
            return remote, local.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _Refused(f"episode {episode}: its persisted result {local.relative_to(self.trial_dir)} "
                           f"cannot be read ({exc.__class__.__name__}): the output the agent saw is unknown") from exc

    def episode(self, episode: int, blocks: list[Any], results: dict[str, str] | None) -> None:
        uploads: list[dict[str, Any]] = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            name = str(block.get("name") or "")
            if name != TOOL:
                self.counts[f"skipped: {name or '(unnamed)'} (the agent runs only bash: never ran)"] += 1
                continue
            given = block.get("input")
            arguments: dict[str, Any] = given if isinstance(given, dict) else {}
            command = arguments.get("command")
            content = (results or {}).get(str(block.get("id")))
            if content is None:
                shown = command[:80] if isinstance(command, str) else command
                raise _Refused(f"episode {episode}: bash {shown!r} has no result: the run ended while it ran, "
                               "and a command cut short cannot be replayed")
            if not isinstance(command, str) or not command.strip():
                self.counts["skipped: bash with an empty command (the harness ran nothing)"] += 1
                continue
            persisted = self.persisted(episode, content)
            text = content if persisted is None else persisted[1]
            self.lines.append({"command": command, "shell": SHELL,
                               "timeout_sec": self.timeout(arguments.get("timeout_sec")),
                               "observed": _observed(episode, text)})
            self.counts["replayed: bash"] += 1
            if persisted is not None:
                uploads.append({"write": persisted[0], "content": persisted[1]})
                self.counts["replayed: persisted output (the harness's upload of a long result)"] += 1
        self.lines.extend(uploads)  # uploaded after all of the episode's calls ran


def _declaration(episode: int, response: dict[str, Any]) -> Declaration:
    blocks = [block for block in response["content"] if isinstance(block, dict)]
    calls = [str(block.get("name") or "") for block in blocks if block.get("type") == "tool_use"]
    if calls:
        return Declaration(False, f"its last episode ({episode}) called {', '.join(calls)}: the run stopped")
    stop = response.get("stop_reason")
    if stop != "end_turn":
        return Declaration(False, f"its last episode ({episode}) ended with stop_reason {stop!r}, not end_turn: "
                                  "the run stopped")
    text = "\n\n".join(block["text"] for block in blocks
                       if block.get("type") == "text" and isinstance(block.get("text"), str))
    found = final_message_declaration(text)
    return Declaration(found.declared, f"episode {episode}: {found.how}")


def read_episode_tool_calls(trial_dir: Path) -> ToolCalls | None:
    """The trial's bash calls as interactions, or None when it has no `agent/episodes/episode-N`."""
    episodes = _episodes(trial_dir)
    if not episodes:
        return None
    reader = _Reader(trial_dir)
    refused: str | None = None
    numbers = [number for number, _ in episodes]
    if numbers != list(range(len(numbers))):
        missing = sorted(set(range(numbers[-1] + 1)) - set(numbers))
        refused = f"episode {missing[0]} is missing (episodes on disk: {numbers[0]} to {numbers[-1]})"
    last: dict[str, Any] | None = None
    for number, path in episodes:
        try:
            response = _response(number, path)
            if number == numbers[-1]:
                last = response
            if refused is None:
                reader.episode(number, response["content"], _results(number, path))
        except _Refused as why:
            refused = refused or str(why)
    if last is None:
        declaration = Declaration(False, f"its last episode ({numbers[-1]}) cannot be read: the claim is unknown")
    else:
        declaration = _declaration(numbers[-1], last)
    return ToolCalls(reader.lines, EPISODES, declaration.declared, dict(sorted(reader.counts.items())), refused,
                     declaration.how)


def read_any_tool_calls(trial_dir: Path) -> ToolCalls | None:
    """A trial's tool calls, by the layout it has: its ATIF trajectory (tool_calls.py), else pre.dev's
    collected one (predev_tools.py), else its episodes' bash calls, else its harness's events file
    (ThinHarness, Pi: responses_tools.py); None when it has none (what `import harbor-jobs` and
    `dataset build` both read)."""
    for read in (read_tool_calls, read_predev_tool_calls, read_episode_tool_calls, read_responses_tool_calls):
        tools = read(trial_dir)
        if tools is not None:
            return tools
    return None

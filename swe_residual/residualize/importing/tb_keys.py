"""The keystrokes a Terminal-Bench trial typed, from its `commands.txt`, timed by its `.cast`.

Terminal-Bench (the harness before Harbor) drives one tmux session per trial and appends every
`send_keys` call to the trial's `commands.txt`, one Python `repr` a line, before preparing it:
a string (`'ls -la\\n'`: Terminus sends its keystrokes as one tmux argument) or a list of tmux
arguments (`['clear', 'Enter']`). tmux reads an argument that is a key name (`Enter`, `C-c`)
as that key and anything else as literal text. What it does not record: the `; tmux wait -S
done` it appended to a blocking command, and how long it waited.

The file also holds the harness's own keys: `['asciinema rec --stdin /logs/agent.cast',
'Enter']` and `['clear', 'Enter']` first, then, when the agent is done, `['C-d']` (ending the
recording), `['asciinema rec --stdin /logs/tests.cast', 'Enter']`, `['clear', 'Enter']` and
`['bash ', '/tests/run-tests.sh', 'Enter']` for the tests. The agent's keys are the lines
between the opening pair and the first test-phase line; lines after that were typed by an
agent that outlived its time limit while the tests ran, and are left out (and counted).

The recording, `sessions/agent.cast` (asciinema v2: a header line, then `[time, "i"|"o",
data]` events; `--stdin` records what was typed as `"i"` events), times the batches: each batch
the agent sent is one burst of `"i"` events, and the time from it to the next burst (to the
recording's last event, for the last batch) is the wait the recording had after it. It is
used only when every burst matches its batch's keys in order; otherwise (or without a cast)
the keystrokes carry no `duration_sec` and the replay waits for each command to finish.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_residual.dataset.states.state import KEYSTROKES

# The harness's own lines (Terminal-Bench's TmuxSession and its test phase).
RECORD_START = re.compile(r"^asciinema rec\b.*\bagent\.cast$")
TESTS_START = re.compile(r"^asciinema rec\b.*\btests\.cast$")
TESTS_RUN = "/tests/run-tests.sh"
# tmux key names that turn into the keys a terminal receives (enough to compare with a cast;
# an unknown key name compares as itself).
ENTER_KEYS = frozenset({"Enter", "C-m", "KPEnter"})
_CONTROL = re.compile(r"^(?:C-|\^)([a-zA-Z@\[\\\]^_?])$")
_NAMED = {"Escape": "\x1b", "Tab": "\t", "BSpace": "\x7f", "Space": " ", "C-Space": "\x00"}
_OTHER_KEY = re.compile(r"^(?:(?:[CMS]-)+.|F\d{1,2}|Up|Down|Left|Right|Home|End|PageUp|PgUp|PageDown|PgDn|NPage|"
                        r"PPage|IC|DC|Insert|Delete|BTab)$")
INSTALLED_AGENT = "/installed-agent/"  # where Terminal-Bench's installed agents are set up
TMUX_WAIT = "; tmux wait -S done"  # what Terminal-Bench appended to a blocking command
BURST_GAP_SEC = 0.05  # "i" events closer than this came from one send


def is_key_name(argument: str) -> bool:
    return (argument in ENTER_KEYS or argument in _NAMED or _CONTROL.match(argument) is not None
            or _OTHER_KEY.match(argument) is not None)


def typed_bytes(keys: str) -> str:
    """What the terminal received for one keystroke entry (one tmux argument), for comparing
    with a cast: a key name is its key, `\\n` is Enter (`\\r`)."""
    if keys in ENTER_KEYS:
        return "\r"
    if keys in _NAMED:
        return _NAMED[keys]
    control = _CONTROL.match(keys)
    if control:
        return chr(ord(control.group(1).upper()) & 0x1F) if control.group(1) != "?" else "\x7f"
    return keys.replace("\n", "\r")


@dataclass(frozen=True)
class TrialKeys:
    interactions: list[dict[str, Any]]  # the commands.jsonl keystroke form, in the order typed
    lines: int  # the agent's lines of commands.txt
    after_tests: int  # agent lines typed after the tests started (left out)
    timing: str  # where the waits came from: "cast" or why not

    def commands_jsonl(self) -> bytes:
        """The interactions as a state's commands.jsonl (one JSON object per line)."""
        return "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in self.interactions).encode()


def _arguments(line: str) -> tuple[list[str], bool] | None:
    """One commands.txt line as (tmux arguments, whether it was a list), or None when it is not
    a repr of keys. The harness sends lists; Terminus sends its keystrokes as one string."""
    try:
        value = ast.literal_eval(line)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, str):
        return [value], False
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value, True
    return None


def _entries(arguments: list[str]) -> list[str]:
    """tmux arguments -> keystroke entries (each one tmux argument, as the suite sends them).

    Literal text and Enter keys are joined (`['clear', 'Enter']` is `"clear\\n"`); any other
    key name is an entry of its own, so that it is still read as that key.
    """
    entries: list[str] = []
    text = ""
    for argument in arguments:
        if len(arguments) > 1 and argument in ENTER_KEYS:
            text += "\n"
        elif len(arguments) > 1 and is_key_name(argument):
            if text:
                entries.append(text)
                text = ""
            entries.append(argument)
        else:
            text += argument
    if text:
        entries.append(text)
    return entries


def read_commands_txt(path: Path) -> tuple[list[list[str]], int, str | None]:
    """(the agent's batches as tmux arguments, lines after the tests started, None) or
    ([], 0, why not)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], 0, "no commands.txt"
    except (OSError, UnicodeDecodeError) as exc:
        return [], 0, f"commands.txt cannot be read: {exc}"
    batches: list[list[str]] = []
    after_tests = 0
    recording, tests = False, False
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        parsed = _arguments(line)
        if parsed is None:
            return [], 0, f"commands.txt line {number} is not a repr of tmux keys"
        arguments, harness = parsed  # only the harness sends lists (an agent may type the same text)
        first = arguments[0] if arguments else ""
        if harness and (TESTS_START.match(first) or any(TESTS_RUN in argument for argument in arguments)):
            tests = True
            continue
        if harness and not recording and not batches and RECORD_START.match(first):
            recording = True
            continue
        if tests:
            # The test phase's own `clear` and `C-d`, or an agent still typing after its limit.
            if not (harness and arguments in (["clear", "Enter"], ["C-d"])):
                after_tests += 1
            continue
        if harness and recording and not batches and arguments == ["clear", "Enter"]:
            continue  # the harness clears the screen once the recording starts
        if harness and arguments == ["C-d"] and recording:
            recording = False  # the harness ends the agent's recording
            continue
        batches.append(arguments)
    return batches, after_tests, None


def _cast_bursts(path: Path) -> tuple[list[tuple[float, str]], float] | str:
    """([(time, typed text)] per burst of "i" events, the last event's time), or why not."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"{path.name} cannot be read: {exc}"
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("version") != 2:
        return f"{path.name} is not an asciinema v2 recording"
    bursts: list[tuple[float, str]] = []
    last_time, last_input = 0.0, None
    for line in lines[1:]:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a recording cut off mid-line
        if not (isinstance(event, list) and len(event) == 3 and isinstance(event[0], (int, float))):
            continue
        moment, kind, data = float(event[0]), event[1], event[2]
        last_time = max(last_time, moment)
        if kind != "i" or not isinstance(data, str):
            continue
        if bursts and last_input is not None and moment - last_input < BURST_GAP_SEC:
            start, text = bursts[-1]
            bursts[-1] = (start, text + data)
        else:
            bursts.append((moment, data))
        last_input = moment
    return bursts, last_time


def _comparable(typed: str) -> str:
    # tmux passes a literal newline through as is, and Enter as a carriage return.
    return typed.replace(TMUX_WAIT, "").replace("\n", "\r")


def _waits(batches: list[list[str]], cast: Path) -> list[float] | str:
    """The recorded wait after each batch, or why the cast cannot time them."""
    read = _cast_bursts(cast)
    if isinstance(read, str):
        return read
    bursts, end = read
    # The cast starts after `asciinema rec`: its first input is the harness's `clear`.
    if bursts and bursts[0][1] == "clear\r":
        bursts = bursts[1:]
    if len(bursts) < len(batches):
        return f"{cast.name} holds {len(bursts)} typed burst(s) for {len(batches)} batch(es)"
    for number, (batch, (_, text)) in enumerate(zip(batches, bursts), start=1):
        expected = "".join(typed_bytes(argument) for argument in batch)
        if _comparable(text) != _comparable(expected):
            return f"{cast.name}: typed burst {number} is not batch {number} of commands.txt"
    times = [start for start, _ in bursts[:len(batches)]]
    following = [start for start, _ in bursts[len(batches):len(batches) + 1]]
    ends = times[1:] + [following[0] if following else end]
    return [round(max(0.0, after - start), 3) for start, after in zip(times, ends)]


def read_trial_keys(trial: Path) -> TrialKeys | str:
    """The keystrokes that rebuild the trial's final state, or why there are none."""
    batches, after_tests, why = read_commands_txt(trial / "commands.txt")
    if why is not None:
        return why
    if not batches:
        return "commands.txt holds no keys of the agent (only the harness's own)"
    if any(INSTALLED_AGENT in argument for batch in batches for argument in batch):
        # The harness typed the agent's own command line (mini-swe-agent, OpenHands, ...):
        # replaying it would run the agent again, not rebuild what it did.
        return (f"the agent ran inside one command ({INSTALLED_AGENT} in commands.txt): its keys start the agent, "
                "they do not rebuild its final state (only its .cast records what it did)")
    cast = trial / "sessions" / "agent.cast"
    waits: list[float] | str = _waits(batches, cast) if cast.is_file() else "no sessions/agent.cast"
    interactions: list[dict[str, Any]] = []
    for number, batch in enumerate(batches):
        entries = _entries(batch)
        for position, keys in enumerate(entries):
            entry: dict[str, Any] = {KEYSTROKES: keys}
            if not isinstance(waits, str):
                # The batch's recorded wait follows its last part; its key names went at once.
                entry["duration_sec"] = waits[number] if position == len(entries) - 1 else 0.0
            interactions.append(entry)
    timing = "cast" if not isinstance(waits, str) else f"untimed: {waits}"
    return TrialKeys(interactions, len(batches), after_tests, timing)

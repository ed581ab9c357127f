"""Restoring a machine-track state by replaying its `commands.jsonl` into a fresh environment.

Any backend whose environments have the protocol's `exec`, `read_file` and `write_file`
(environments/base.py) restores a machine state this way: the predecessor's interactions run
again, in order, so its files, installed software and live processes (a server, a program in the
terminal's foreground) are there when the agent starts. A backend that can snapshot an
environment (docker commits) replays once, in a build environment, and starts instances from
the snapshot when `restore_by_replay` says the replay left no live process (live.py); one that
cannot replays at every start.

- a `command` line runs to its end (or its deadline) on its own;
- `keystrokes` lines are typed into one tmux session (terminal.py), started at the first of them
  and left running;
- a `write` or `edit` line changes one file as the agent's tool did (dataset/states/tool_replay.py).

What the environment must provide (`REPLAY_NEEDS`): `bash` and POSIX `sh` with `cat`, `mkdir`,
`rm`, `tr`; `tmux` for keystroke lines (when it is missing, it is installed with the image's
package manager, as Terminus-2 does: that needs one and a network); `ps` or a readable /proc for
the process listing; `awk` to tell a computing pane from a waiting one (without it the replay
waits by the screen alone); `dpkg-query` and `python3` only for the package listing (optional);
a writable /tmp (staged input and output).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.states.state import KEYSTROKES, ResidualState, is_keystrokes
from swe_residual.dataset.states.tool_calls import is_file_tool
from swe_residual.dataset.states.tool_replay import (
    DEFAULT_COMMAND_TIMEOUT_SEC,
    Replayed,
    pin_recorded_installs,
    run_command,
    run_file_tool,
    unpin,
)
from swe_residual.environments.machine.listing import list_machine
from swe_residual.environments.machine.live import live_after_replay
from swe_residual.environments.machine.runner import CommandRunner, ExecRunner, Machine
from swe_residual.environments.machine.terminal import TerminalSession

# The tools an environment must have for a replay (module docstring), for a backend's docs and checks.
REPLAY_NEEDS: tuple[str, ...] = ("bash", "sh", "cat", "mkdir", "rm", "tr", "tmux (keystroke lines; installed if missing)",
                                 "ps or /proc", "awk (optional)", "dpkg-query, python3 (optional)", "writable /tmp")


@dataclass(frozen=True)
class ReplayResult:
    """What `restore_by_replay` found."""

    # The replayed commands that record what the predecessor saw, with what they printed now
    # (Stage IV compares them with the recording).
    outputs: tuple[Replayed, ...]
    # Command lines of the processes the replay left running that the clean start had not (less
    # the replay's own idle terminal session): what a snapshot of the files would lose.
    live: tuple[str, ...]


def replay(environment: Machine, state: ResidualState, *, runner: CommandRunner | None = None) -> list[Replayed]:
    """The predecessor's interactions, in order, in `environment` (a fresh instance of the task's
    clean start); returns the outputs of the commands that record what the predecessor saw.

    `runner` runs the command and file-tool lines: by default an `ExecRunner` over the
    environment's exec; a backend with a native one passes it (docker's environment itself).
    A line that cannot be replayed raises DatasetError (the state, not the machinery, failed)."""
    assert state.commands_path is not None
    runner = runner if runner is not None else ExecRunner(environment)
    terminal = TerminalSession(environment, state.commands_path)
    replayed: list[Replayed] = []
    entries = list(state.read_commands())
    pinned = pin_recorded_installs(runner, entries, str(state.commands_path))
    for number, entry in enumerate(entries, start=1):
        if is_keystrokes(entry):
            wait = entry.get("duration_sec")
            terminal.send(entry[KEYSTROKES], None if wait is None else float(wait))
            continue
        if is_file_tool(entry):
            run_file_tool(runner, number, entry, str(state.commands_path))
            continue
        timed_out, seen = run_command(runner, number, entry, pinned)
        # `timed_out: true` was recorded: the predecessor's command was killed at its deadline too.
        if timed_out and not entry.get("timed_out"):
            timeout = entry.get("timeout_sec", DEFAULT_COMMAND_TIMEOUT_SEC)
            raise DatasetError(state.commands_path, f"command {number} did not finish within {timeout}s while replaying")
        if seen is not None:
            replayed.append(seen)
    if pinned:
        unpin(runner)
    return replayed


LIVE_LOOKS = 3  # listings after a replay before its state is said to hold no live process
LIVE_LOOK_GAP_SEC = 0.5


def restore_by_replay(environment: Machine, state: ResidualState, *,
                      runner: CommandRunner | None = None) -> ReplayResult:
    """`replay`, with the processes listed right before and after it: which live processes the
    state holds (live.py), so the backend knows whether a snapshot of its files would do."""
    clean = list_machine(environment)
    outputs = replay(environment, state, runner=runner)
    live = live_after_replay(clean, list_machine(environment))
    # A loop the terminal's shell runs itself (`while true; do ...; sleep 0.1; done`) shows as a
    # child only while one of its commands runs: one listing can fall between two of them and
    # see an idle shell (on a loaded CI machine it did, and the state lost its ticker to a
    # snapshot). "None" is only concluded after LIVE_LOOKS listings agree on it.
    for _ in range(LIVE_LOOKS - 1):
        if live:
            break
        time.sleep(LIVE_LOOK_GAP_SEC)
        live = live_after_replay(clean, list_machine(environment))
    return ReplayResult(tuple(outputs), tuple(live))

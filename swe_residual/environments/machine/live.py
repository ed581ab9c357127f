"""How a machine-track state starts: from a snapshot of its files, or replayed at every start.

A snapshot (a docker commit) holds files, installed software and configuration, not running
processes. So after a replay, the processes running that were not running at the environment's
clean start (listed in the same environment right before the replay, listing.py) decide:

- none: every start is an instance of the snapshot ("snapshot"), as cheap as a clean start, where
  the backend can snapshot;
- some: the state holds live processes a snapshot would lose (a server the predecessor left
  running, a program in the terminal's foreground); every start replays ("replay").

The terminal session the keystroke replay itself opened (terminal.py) is not the predecessor's:
no agent attaches to it (each starts its own), so its tmux server and a pane whose shell runs
nothing are left out of the count. What the shell still runs (a foreground program, a job in
the background) is counted, and with it the state is replayed.
"""

from __future__ import annotations

import os

from swe_residual.environments.machine.listing import MachineListing, Process, new_processes
from swe_residual.environments.machine.terminal import SESSION

# Bump when the rule above changes: it is part of a machine snapshot's tag (docker/states.py state_tag),
# so snapshots labelled under an older rule are rebuilt instead of reused.
RESTORE_RULE = "3"  # 3: "none" only after three listings agree (machine/replay.py restore_by_replay)
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ash"})


def _is_session_server(process: Process) -> bool:
    words = process.args.split()
    return bool(words) and os.path.basename(words[0]) == "tmux" and SESSION in words


def _is_idle_shell(process: Process, processes: list[Process]) -> bool:
    command = process.args.split()[0] if process.args.split() else ""
    idle = os.path.basename(command).lstrip("-") in SHELLS
    return idle and not any(other.ppid == process.pid for other in processes)


def live_after_replay(before: MachineListing, after: MachineListing) -> list[str]:
    """The command lines of the processes a replay left that a snapshot start would not have."""
    started = new_processes(before, after)
    servers = {process.pid for process in started if _is_session_server(process)}
    own = set(servers) | {process.pid for process in started
                          if process.ppid in servers and _is_idle_shell(process, after.processes)}
    return [process.args for process in started if process.pid not in own]

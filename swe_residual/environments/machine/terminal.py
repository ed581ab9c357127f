"""A terminal session (tmux) in an environment, driven by keystrokes as Terminus-2 drives it.

It needs only the environment's `exec` and `write_file` (`Shell`), so any backend replays keystrokes.

A Terminus-2 run is not a list of commands: the agent typed keys into one long-lived shell in
a tmux pane and waited a while after each batch. What that shell did depends on what was
typed before: an unclosed quote turns the next lines into a string, a server started in the
foreground keeps the pane busy (and keeps running), `C-c` interrupts whatever is in the
foreground. Replaying such a run means replaying the keys into the same kind of session:

- the session is started as Terminus-2 starts it (`tmux new-session -d` running `bash --login`,
  TERM=xterm-256color, a 160x40 pane) in the environment's working directory;
- each keystroke entry is sent with `tmux send-keys -t SESSION -- KEYS` (tmux reads a key name
  such as `C-c` or `Enter` as that key, anything else as literal text), or, when it is too long
  for one tmux command, through a paste buffer, as Terminus-2 does;
- keys that end with Enter start a command: the replay then waits at least the entry's
  `duration_sec` (the wait the recording had after these keys: a floor, never the wait
  itself), and beyond it until the command is done (the shell is the pane's foreground
  process again and the pane stopped changing) or the pane's output has been quiescent for
  twice the recorded duration (at least `QUIET_MIN_SEC`, at most `QUIET_SEC`) while its
  processes are idle (a server waiting
  for requests, a program waiting for input; a script computing in silence is still running), at most
  `HARD_CAP_SEC`. The pane's processes are its shell and all its descendants, whatever their
  session (`apt-get` runs dpkg and its maintainer scripts in a pseudo-terminal of their own, a
  new session: counting the shell's session alone took an install for a waiting command). They
  are at work when they used `BUSY_CPU_SHARE` of a CPU since the last poll (each process's own
  time: one that ended takes its time with it, never cancelling the others'), or when one of
  them that was there at the last poll is running or in uninterruptible sleep (`R`, `D`): work
  that waits on a disk or an overlay's user-space file system uses little CPU of its own; output that keeps changing while the processes stay idle (a ticker, `tail -f`)
  counts as waiting after `IDLE_CHANGING_FACTOR` quiet windows. So under load the next keys never go into a command still running (a
  script the recording saw finish, an `apt install` whose debconf would swallow them), and the
  machine is not snapshotted before the last command ended; a command that never returns
  still gets the next keys, as it did in the recording, once its output is quiet. Without a
  recorded duration the floor is 0 and the wait is bounded by `DEFAULT_COMMAND_WAIT_SEC`;
- other keys (`C-c`, text typed into an editor) wait the entry's `duration_sec` (default 1 s),
  less the time the send took, as Terminus-2's non-blocking sends do.

The session is left running when the replay ends: its shell and whatever the agent left in the
foreground are live processes of the state (live.py; the backend then gives it the `replay` fidelity).

tmux must be in the environment (replay.py's REPLAY_NEEDS). When it is not, it is installed with the image's package
manager, as Terminus-2 installs it at set-up (the recorded run had it installed too); when that
fails (no package manager, no network), the replay fails with one error saying so.
"""

from __future__ import annotations

import secrets
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.states.state import DEFAULT_COMMAND_WAIT_SEC, DEFAULT_KEYSTROKE_WAIT_SEC
from swe_residual.environments.base import ExecResult

SESSION = "swe-residual"
PANE_WIDTH, PANE_HEIGHT = 160, 40  # Terminus-2's defaults
# tmux refuses a command longer than its message buffer (~16 KB); longer keys go through a
# paste buffer (Terminus-2 uses the same bound).
SEND_KEYS_MAX_BYTES = 16_000 - 64
INSTALL_TIMEOUT_SEC = 300.0
COMMAND_TIMEOUT_SEC = 30.0
HARD_CAP_SEC = 600.0  # no wait after one entry is longer, whatever was recorded
QUIET_SEC = 15.0  # a pane unchanged this long is waiting for something other than time
# With a recorded wait, a pane unchanged (and its processes idle) for twice that wait, and at
# least QUIET_MIN_SEC, is waiting: the agent expected the command to show something by then.
QUIET_MIN_SEC = 2.0
QUIET_PER_RECORDED_SEC = 2.0
POLL_SEC = 0.25
# A pane that shows nothing new is polled less and less often, up to POLL_MAX_SEC apart, and
# again every POLL_SEC once it changes or its processes work: each poll is an exec in the
# container (its processes read from /proc, the pane captured), and a replay that waits out a
# long command or a quiet window would otherwise spend a share of a CPU on polls alone.
POLL_MAX_SEC = 1.0
POLL_BACKOFF = 1.5
# A pane whose processes use at least this share of one CPU between two polls is computing (a
# script working in silence), not waiting: a loop that wakes now and then (a ticker writing a
# file every 0.1 s uses about 2%) is waiting. /proc counts CPU time in USER_HZ ticks, 100 a second.
BUSY_CPU_SHARE = 0.2
# A pane whose output keeps changing while its processes stay under BUSY_CPU_SHARE for this many
# quiet windows is waiting too (a foreground ticker or log follower never goes quiet).
IDLE_CHANGING_FACTOR = 2.0
TICKS_PER_SEC = 100
ENTER_KEYS = frozenset({"Enter", "C-m", "KPEnter"})
# One exec per poll: the pane's foreground process; the pane's processes, the shell and all its
# descendants whatever their session (module docstring), one `pid:ticks:state` each (CPU time in
# clock ticks, the /proc state letter; read from /proc with awk, empty where the image has no
# awk; the shell first); then the content.
_PANE_TICKS = (f"pid=$(tmux display-message -p -t {SESSION} '#{{pane_pid}}'); "
               "cat /proc/[0-9]*/stat 2>/dev/null | awk -v s=\"$pid\" "
               "'{ p = $1; sub(/^.*\\) /, \"\"); up[p] = $2; t[p] = $12 + $13; st[p] = $1 } "
               "END { if (!(s in up)) { print \"\"; exit } in_[s] = 1; do { more = 0; "
               "for (p in up) if (!(p in in_) && (up[p] in in_)) { in_[p] = 1; more = 1 } } while (more); "
               "line = s \":\" t[s] \":\" st[s]; for (p in in_) if (p != s) line = line \" \" p \":\" t[p] \":\" st[p]; "
               "print line }' 2>/dev/null || echo")
PANE_STATE = (f"tmux display-message -p -t {SESSION} '#{{pane_current_command}}' && {{ {_PANE_TICKS}; }} && "
              f"tmux capture-pane -p -t {SESSION}")
# Terminus-2's package-manager install of tmux, per package manager it knows.
INSTALL_TMUX = (
    "if command -v apt-get >/dev/null 2>&1; then DEBIAN_FRONTEND=noninteractive apt-get update "
    "&& DEBIAN_FRONTEND=noninteractive apt-get install -y tmux; "
    "elif command -v dnf >/dev/null 2>&1; then dnf install -y tmux; "
    "elif command -v yum >/dev/null 2>&1; then yum install -y tmux; "
    "elif command -v apk >/dev/null 2>&1; then apk add --no-cache tmux; "
    "elif command -v zypper >/dev/null 2>&1; then zypper install -y -n tmux; "
    "elif command -v pacman >/dev/null 2>&1; then pacman -Sy --noconfirm tmux; "
    "else echo 'no package manager found' >&2; exit 127; fi"
)
START_SESSION = (
    "export TERM=xterm-256color && export SHELL=/bin/bash && "
    f"tmux new-session -x {PANE_WIDTH} -y {PANE_HEIGHT} -d -s {SESSION} 'bash --login' && "
    "tmux set-option -g history-limit 10000000"
)


class Shell(Protocol):
    def exec(self, command: str, *, timeout_sec: float | None = None, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ExecResult: ...

    def write_file(self, path: str, data: bytes) -> None: ...


class TerminalSession:
    """One tmux session in `environment`; `source` names the file being replayed in errors."""

    def __init__(self, environment: Shell, source: Path, *, quiet_sec: float = QUIET_SEC,
                 hard_cap_sec: float = HARD_CAP_SEC) -> None:
        self.environment = environment
        self.source = source
        self.started = False
        self.quiet_sec = quiet_sec
        self.hard_cap_sec = hard_cap_sec
        self.shell = "bash"  # the pane's foreground process when it is at its prompt
        self.waits: list[tuple[float, str]] = []  # (seconds, why it ended) per command sent

    def _run(self, command: str, what: str, timeout_sec: float = COMMAND_TIMEOUT_SEC) -> ExecResult:
        result = self.environment.exec(command, timeout_sec=timeout_sec)
        if result.timed_out or result.exit_code != 0:
            raise DatasetError(self.source, f"replaying keystrokes: {what} failed "
                                            f"(exit {result.exit_code}): {result.output.strip()[-400:]}")
        return result

    def ensure_tmux(self) -> None:
        if self.environment.exec("tmux -V", timeout_sec=COMMAND_TIMEOUT_SEC).exit_code == 0:
            return
        installed = self.environment.exec(INSTALL_TMUX, timeout_sec=INSTALL_TIMEOUT_SEC)
        if self.environment.exec("tmux -V", timeout_sec=COMMAND_TIMEOUT_SEC).exit_code != 0:
            raise DatasetError(
                self.source,
                "replaying keystrokes needs tmux in the container: the task's image has none and installing it "
                "with the package manager, as Terminus-2 does, failed"
                + (" (timed out)" if installed.timed_out else f" (exit {installed.exit_code}): "
                   f"{installed.output.strip()[-300:]}")
                + "; add tmux to the task's image")

    def start(self) -> None:
        self.ensure_tmux()
        self._run(START_SESSION, "starting the tmux session")
        self.started = True
        # The login shell is the pane's process until something runs in its foreground.
        current, _ = self.pane_state()
        if current:
            self.shell = current

    def pane_state(self) -> tuple[str, str]:
        """(the pane's foreground process name, its visible content)."""
        current, _, content = self._poll()
        return current, content

    def _poll(self) -> tuple[str, PaneProcesses | None, str]:
        """(foreground process name, the pane's processes or None where unknown, content)."""
        result = self.environment.exec(PANE_STATE, timeout_sec=COMMAND_TIMEOUT_SEC)
        if result.exit_code != 0:
            return "", None, result.output
        current, _, rest = result.output.partition("\n")
        processes, _, content = rest.partition("\n")
        return current.strip(), pane_processes(processes), content

    def send(self, keys: str, wait_sec: float | None) -> None:
        """Type `keys` into the session, then wait: for the command they start (keys ending with
        Enter) to be done, at most `wait_sec`; for other keys, `wait_sec` from the start of the send."""
        if not self.started:
            self.start()
        began = time.monotonic()
        if len(shlex.quote(keys).encode("utf-8")) <= SEND_KEYS_MAX_BYTES:
            self._run(f"tmux send-keys -t {SESSION} -- {shlex.quote(keys)}", "tmux send-keys")
        else:
            self._paste(keys)
        if runs_command(keys):
            floor = 0.0 if wait_sec is None else min(wait_sec, self.hard_cap_sec)
            bound = DEFAULT_COMMAND_WAIT_SEC if wait_sec is None else self.hard_cap_sec
            quiet = self.quiet_sec if wait_sec is None else \
                min(self.quiet_sec, max(QUIET_MIN_SEC, QUIET_PER_RECORDED_SEC * wait_sec))
            self.waits.append(self.settle(began, min(bound, self.hard_cap_sec), floor, quiet))
            return
        left = min(DEFAULT_KEYSTROKE_WAIT_SEC if wait_sec is None else wait_sec, self.hard_cap_sec) \
            - (time.monotonic() - began)
        if left > 0:
            time.sleep(left)

    def settle(self, began: float, bound_sec: float, floor_sec: float = 0.0,
               quiet_sec: float | None = None) -> tuple[float, str]:
        """Wait, never less than `floor_sec` from `began`, until the command just started is
        done, or the pane is quiescent for `quiet_sec` (default the session's), or `bound_sec`
        from `began` passed: (seconds waited, "done" | "quiet" | "bound")."""
        quiet_sec = self.quiet_sec if quiet_sec is None else quiet_sec
        previous: tuple[str, str] | None = None
        changed_at = busy_at = time.monotonic()
        last: tuple[float, PaneProcesses | None] = (time.monotonic(), None)  # the previous poll's time and processes
        interval = POLL_SEC
        while True:
            elapsed = time.monotonic() - began
            if elapsed >= bound_sec:
                return round(elapsed, 3), "bound"
            time.sleep(min(interval, bound_sec - elapsed))
            current, processes, content = self._poll()
            now = time.monotonic()
            idle_known = processes is not None and last[1] is not None
            if idle_known and at_work(last[1], processes, now - last[0]):  # type: ignore[arg-type]
                changed_at = busy_at = now  # working in silence: still at work, not quiet
            last = (now, processes)
            unchanged = previous is not None and content == previous[1] and changed_at < now
            interval = min(POLL_MAX_SEC, interval * POLL_BACKOFF) if unchanged else POLL_SEC
            if now - began < floor_sec:
                # The recorded wait is not over: whatever the pane shows, the keys wait (the
                # recording's next keys came no sooner). Changes still count for quiescence.
                if previous is None or content != previous[1]:
                    changed_at = now
                previous = (current, content)
                continue
            if previous is not None and content == previous[1]:
                # Done: the shell is in the foreground on two polls in a row with nothing new on
                # the screen (one poll could fall between two commands of a `;` list).
                if current == self.shell and previous[0] == self.shell:
                    return round(now - began, 3), "done"
                if now - changed_at >= quiet_sec:
                    return round(now - began, 3), "quiet"
            else:
                changed_at = now
                # Output that keeps changing while the pane's processes stay idle (a ticker, `tail
                # -f`, a server's log) is a command waiting, not working: it gets the next keys
                # once idle for IDLE_CHANGING_FACTOR quiet windows, not at the hard cap.
                if idle_known and now - busy_at >= IDLE_CHANGING_FACTOR * quiet_sec:
                    return round(now - began, 3), "quiet"
            previous = (current, content)

    def capture(self) -> str:
        """The pane's content now, its scrollback included (for comparing with a recording)."""
        result = self.environment.exec(f"tmux capture-pane -p -S - -t {SESSION}", timeout_sec=COMMAND_TIMEOUT_SEC)
        return result.output if result.exit_code == 0 else ""

    def _paste(self, keys: str) -> None:
        # Literal text too long for send-keys: staged in a file and pasted, which turns its
        # newlines into Enter as typing it would.
        token = secrets.token_hex(8)
        path, buffer = f"/tmp/.swe-residual-paste-{token}", f"swe-residual-{token}"
        self.environment.write_file(path, keys.encode("utf-8"))
        try:
            self._run(f"tmux load-buffer -b {buffer} {path} && tmux paste-buffer -d -b {buffer} -t {SESSION}",
                      "pasting long keystrokes")
        finally:
            self.environment.exec(f"rm -f {path}", timeout_sec=COMMAND_TIMEOUT_SEC)


# The pane's processes at one poll: pid -> (CPU ticks used so far, /proc state letter); the
# pane's shell is `PaneProcesses.shell`.
@dataclass(frozen=True)
class PaneProcesses:
    shell: str
    processes: dict[str, tuple[int, str]]


# /proc states of a process at work: running (or runnable), uninterruptible sleep (a disk, an
# overlay's user-space file system).
WORKING_STATES = frozenset("RD")


def pane_processes(line: str) -> PaneProcesses | None:
    """The poll's `pid:ticks:state` list (the shell first), or None when it says nothing (no awk,
    no pane)."""
    found: dict[str, tuple[int, str]] = {}
    for item in line.split():
        pid, _, rest = item.partition(":")
        ticks, _, state = rest.partition(":")
        if not pid.isdigit() or not ticks.isdigit():
            return None
        found[pid] = (int(ticks), state[:1])
    return PaneProcesses(line.split()[0].partition(":")[0], found) if found else None


def at_work(before: PaneProcesses, now: PaneProcesses, seconds: float) -> bool:
    """Whether the pane's processes worked between two polls `seconds` apart: together they used
    `BUSY_CPU_SHARE` of a CPU (each its own time since the last poll, all of it for one that
    started since: one that ended takes its time with it, never cancelling the others'), or one
    of them other than the shell, there at both polls, is running or in uninterruptible sleep."""
    used = sum(max(0, ticks - before.processes.get(pid, (0, ""))[0]) for pid, (ticks, _) in now.processes.items())
    if used >= BUSY_CPU_SHARE * TICKS_PER_SEC * seconds:
        return True
    return any(state in WORKING_STATES and pid != now.shell and pid in before.processes
               for pid, (_, state) in now.processes.items())


def runs_command(keys: str) -> bool:
    """Whether the keys end with Enter: a line is handed to whatever reads the terminal."""
    return keys in ENTER_KEYS or keys.endswith(("\n", "\r"))

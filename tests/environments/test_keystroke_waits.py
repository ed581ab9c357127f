"""A keystroke replay waits for each command to finish (the shell back at its prompt, the pane
quiet), with the recorded duration as a floor, not as the wait (environments/machine/terminal.py).

Driven through a real tmux on this machine, the session's commands run by a real bash (the
same `TerminalSession` a container's replay uses, its shell here the host's, the tmux server
on a socket of the test's own directory): no engine is needed to time the waits."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from swe_residual.environments.base import ExecResult
from swe_residual.environments.machine.terminal import (PANE_STATE, POLL_MAX_SEC, POLL_SEC, SESSION, PaneProcesses,
                                                         TerminalSession, at_work, pane_processes)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux on this machine")


class HostShell:
    """Commands run by bash on this machine, with a tmux server of their own (TMUX_TMPDIR)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {**os.environ, "TMUX_TMPDIR": str(root), "HOME": str(root)}
        self.env.pop("TMUX", None)

    def exec(self, command: str, *, timeout_sec: float | None = None, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ExecResult:
        started = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=cwd or self.root, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=timeout_sec)
        return ExecResult(exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr,
                          duration_sec=time.monotonic() - started)

    def write_file(self, path: str, data: bytes) -> None:
        Path(path).write_bytes(data)


@pytest.fixture
def session(tmp_path: Path):  # type: ignore[no-untyped-def]
    shell = HostShell(tmp_path)
    terminal = TerminalSession(shell, tmp_path / "commands.jsonl")  # the replay's own quiet rule
    yield terminal, tmp_path
    shell.exec("tmux kill-server 2>/dev/null; true")  # the test's own server (its own socket)


def test_the_next_keys_wait_for_a_command_that_outlasts_its_recorded_duration(session) -> None:  # type: ignore[no-untyped-def]
    terminal, root = session
    began = time.monotonic()
    # Recorded with a 0.3 s wait; here it computes for 2 s printing nothing (a loaded machine),
    # longer than the pane may stay unchanged (twice 0.3 s, at least 2 s): its CPU time says it
    # is still at work;
    # a loop that only wakes now and then (below) is waiting.
    terminal.send(f"timeout 3 sh -c 'while :; do :; done'; echo finished > {root}/done\n", 0.3)
    waited, why = terminal.waits[-1]
    assert (root / "done").read_text() == "finished\n" and why == "done"
    assert waited >= 3.0 and time.monotonic() - began >= 3.0


def test_the_recorded_duration_is_a_floor(session) -> None:  # type: ignore[no-untyped-def]
    terminal, root = session
    terminal.send("true\n", 1.5)  # done at once, but the recording's next keys came 1.5 s later
    waited, why = terminal.waits[-1]
    assert why == "done" and waited >= 1.5


def test_a_command_that_never_returns_gets_the_next_keys_once_quiet(session) -> None:  # type: ignore[no-untyped-def]
    terminal, root = session
    terminal.send("cat\n", 0.3)  # reads the terminal forever, printing nothing
    waited, why = terminal.waits[-1]
    assert why == "quiet" and 2.0 <= waited < 10.0  # quiet for twice its recorded 0.3 s, at least 2 s
    terminal.send("typed into cat\n", 0.3)  # the keys go to cat, as they did in the recording
    current, _ = terminal.pane_state()
    assert current == "cat"
    assert SESSION in terminal.environment.exec("tmux ls").stdout


def test_a_quiet_pane_is_polled_less_and_less_often(session) -> None:  # type: ignore[no-untyped-def]
    terminal, root = session
    polls: list[float] = []
    shell_exec = terminal.environment.exec

    def counted(command: str, **options):  # type: ignore[no-untyped-def]
        if command == PANE_STATE:
            polls.append(time.monotonic())
        return shell_exec(command, **options)

    terminal.environment.exec = counted
    terminal.send("cat\n", 1.5)  # prints nothing, never returns: quiet after 3 s unchanged
    waited, why = terminal.waits[-1]
    assert why == "quiet" and 3.0 <= waited < 10.0
    gaps = [later - earlier for earlier, later in zip(polls, polls[1:])]
    # every POLL_SEC at first, then further apart while nothing changes, never past POLL_MAX_SEC
    # (a poll's own time aside); at a fixed POLL_SEC the same wait took about 20 polls
    assert gaps[0] < POLL_SEC + 0.3 and max(gaps) >= POLL_MAX_SEC - 0.05, gaps
    assert max(gaps) < POLL_MAX_SEC + 0.5 and len(polls) <= 12, gaps


def test_a_loop_that_wakes_now_and_then_is_waiting_not_computing(session) -> None:  # type: ignore[no-untyped-def]
    terminal, root = session
    # A ticker left in the foreground (as a Terminus-2 run left one): its few wake-ups a second
    # are no work in progress, so the replay moves on once the pane is quiet, not at the cap.
    terminal.send(f"while :; do date +%s%N > {root}/tick; sleep 0.1; done\n", 0.3)
    waited, why = terminal.waits[-1]
    # "done" when two polls fell between its sleeps (the loop runs in the shell itself).
    assert why in ("quiet", "done") and waited < 10.0
    assert terminal.pane_state()[0] in ("bash", "sleep", "date")  # still looping in the foreground


def test_work_in_a_session_of_its_own_is_still_the_commands(session) -> None:  # type: ignore[no-untyped-def]
    terminal, root = session
    # apt-get runs dpkg in a pseudo-terminal of its own, a new session: the install's work is
    # there, and the command is not waiting. Recorded with a 0.3 s wait, it works for 3 s.
    terminal.send(f"timeout 3 setsid -w sh -c 'while :; do :; done'; echo finished > {root}/done\n", 0.3)
    waited, why = terminal.waits[-1]
    assert (root / "done").read_text() == "finished\n" and why == "done" and waited >= 3.0


def test_what_counts_as_work_between_two_polls() -> None:
    def poll(**processes: tuple[int, str]) -> PaneProcesses:
        return PaneProcesses("1", {pid.removeprefix("p"): value for pid, value in processes.items()})

    shell = (5, "S")
    # a process that ended takes its time with it: the other's 30 ticks in 1 s are still work
    assert at_work(poll(p1=shell, p2=(500, "S"), p3=(0, "S")), poll(p1=shell, p3=(30, "S")), 1.0)
    # one that started since the last poll: all its time counts
    assert at_work(poll(p1=shell), poll(p1=shell, p4=(25, "S")), 1.0)
    # asleep and idle: waiting
    assert not at_work(poll(p1=shell, p2=(100, "S")), poll(p1=shell, p2=(101, "S")), 1.0)
    # running, or in uninterruptible sleep (a disk, a user-space file system), at both polls: working
    assert at_work(poll(p1=shell, p2=(100, "S")), poll(p1=shell, p2=(101, "D")), 1.0)
    assert at_work(poll(p1=shell, p2=(100, "R")), poll(p1=shell, p2=(100, "R")), 1.0)
    # a short-lived process caught running (a ticker's `date`), or the shell itself: not work
    assert not at_work(poll(p1=shell), poll(p1=shell, p9=(0, "R")), 1.0)
    assert not at_work(poll(p1=(5, "R")), poll(p1=(5, "R")), 1.0)
    assert pane_processes("12:7:S 40:3:R") == PaneProcesses("12", {"12": (7, "S"), "40": (3, "R")})
    assert pane_processes("") is None

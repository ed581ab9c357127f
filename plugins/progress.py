"""Progress lines for the long first steps of a run (base image, task images, state snapshots,
agent set-up layers), shown on the terminal even while pytest captures the item's output.

On the controller they go through the terminal reporter; an xdist worker's terminal is not
shown, but its standard error is the controller's (execnet keeps it), so a worker writes
there, its id in front. Either way pytest's capture is suspended around the write, as
`capsys.disabled()` does, so the line appears while the build runs, not after the item.

A line never breaks pytest's status line: without `-v`, a line written in the middle of
`residual_tests/test_starts.py SSu` ends that line and leaves the reporter's current path as it
was, so the letters go on below the progress lines instead of under a repeated path (with
`ensure_newline` pytest would print the path again after every build). With `-v` each item
has its own line anyway, and pytest rewrites the item's name before its word, as it should.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import pytest

PREFIX = "swe-residual"


def terminal_progress(config: pytest.Config) -> Callable[[str], None]:
    """A `progress(message)` writing one line per message, with the time since the run began."""
    capture = config.pluginmanager.getplugin("capturemanager")
    terminal = config.pluginmanager.getplugin("terminalreporter")
    worker = getattr(config, "workerinput", {}).get("workerid")
    started = time.monotonic()

    def write(message: str) -> None:
        elapsed = time.monotonic() - started
        line = f"{PREFIX}{f' [{worker}]' if worker else ''} +{elapsed:.0f}s: {message}"
        with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
            if worker is None and terminal is not None:
                _write_between_letters(terminal, line)
            else:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()

    return write


def _write_between_letters(terminal: Any, line: str) -> None:
    if terminal.verbosity > 0 or terminal.currentfspath is None:
        terminal.ensure_newline()
        terminal.write_line(line)
        return
    # Mid status line: end it without forgetting its path (TerminalWriter's column count is
    # the only way to know whether the cursor is at a line's start).
    writer = getattr(terminal, "_tw", None)
    if writer is None or writer.width_of_current_line > 0:
        terminal.write("\n")
    terminal.line(line)

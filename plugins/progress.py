"""Progress lines for the long first steps of a run (base image, task images, state snapshots,
agent set-up layers), shown on the terminal even while pytest captures the item's output.

On the controller they go through the terminal reporter; an xdist worker's terminal is not
shown, but its standard error is the controller's (execnet keeps it), so a worker writes
there, its id in front. Either way pytest's capture is suspended around the write, as
`capsys.disabled()` does, so the line appears while the build runs, not after the item.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import nullcontext

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
                terminal.ensure_newline()
                terminal.write_line(line)
            else:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()

    return write

"""Does a replayed terminal look as the recorded one did? The last lines of two panes compared.

Terminal-Bench saved the agent's pane when it stopped (`panes/post-agent.txt`, tmux
`capture-pane`); a replay of its keystrokes ends with a pane of its own
(`TerminalSession.capture`). The two are compared on their last lines, after what differs
between any two machines is set aside: the container's host name in the prompt
(`root@56f036e0b9ee:/app#`), trailing spaces and trailing blank lines. The result names the
first line, counted from the top of the compared tail, where they differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LAST_LINES = 10
# A shell prompt's user@host: a container's host name is its id, different on every machine.
_HOST = re.compile(r"\b([a-z_][a-z0-9_-]*)@[0-9a-f]{12}\b")


@dataclass(frozen=True)
class Divergence:
    line: int  # 1-based, in the compared tail
    recorded: str | None  # None: the recorded tail is shorter
    replayed: str | None


def normalized(pane: str) -> list[str]:
    lines = [_HOST.sub(r"\1@HOST", line.rstrip()) for line in pane.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def first_divergence(recorded: str, replayed: str, last_lines: int = LAST_LINES) -> Divergence | None:
    """None when the panes' last `last_lines` lines agree, else where they first differ."""
    want, got = normalized(recorded)[-last_lines:], normalized(replayed)[-last_lines:]
    for number in range(max(len(want), len(got))):
        left = want[number] if number < len(want) else None
        right = got[number] if number < len(got) else None
        if left != right:
            return Divergence(number + 1, left, right)
    return None


def describe(divergence: Divergence | None) -> str:
    if divergence is None:
        return "the replayed pane ends as the recorded one did"
    return (f"the replayed pane differs from the recorded one at line {divergence.line} of their last lines: "
            f"recorded {divergence.recorded!r}, replayed {divergence.replayed!r}")

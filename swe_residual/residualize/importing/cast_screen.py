"""What an asciinema v2 recording printed, as the rows of text a terminal would have shown.

An installed agent's trial (tb_installed.py) records its whole run in `sessions/agent.cast`:
a header line, then `[time, "o"|"i", data]` events. Programs that redraw a status line (rich's
spinner: the line, `\\r`, `ESC[2K`; on stop a newline, `ESC[1A`, `ESC[2K`) overwrite what they
printed, so the output is replayed on a small model of a terminal that never scrolls away:
rows of text, a cursor, and the few controls that move it or erase (`\\r`, `\\n`, `\\b`, CSI
`A`/`B`/`C`/`D`/`G`/`K`/`J`/`H`). Select Graphic Rendition sequences (`ESC[...m`) are kept in the
row's text, where they cost no column: they tell a program's own markers (its headers are
coloured) from the plain text it printed. Every other control sequence (cursor visibility,
bracketed paste, OSC titles) is dropped.

Columns are counted in characters, not cells: the only overwriting these recordings do is of a
whole line after `\\r` and an erase, where the two agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# One control sequence: CSI (parameters, intermediates, final byte), OSC (ended by BEL or ST),
# or a two-character escape.
CONTROL_SEQUENCE = re.compile(r"\x1b\[([0-?]*)([ -/]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def cast_output(path: Path) -> str:
    """Everything the recording printed (its "o" events, in order); raises ValueError when the
    file is not an asciinema v2 recording."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("version") != 2:
        raise ValueError(f"{path.name} is not an asciinema v2 recording")
    printed: list[str] = []
    for line in lines[1:]:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a recording cut off mid-line
        if isinstance(event, list) and len(event) == 3 and event[1] == "o" and isinstance(event[2], str):
            printed.append(event[2])
    return "".join(printed)


def cast_width(path: Path) -> int | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            header = json.loads(handle.readline() or "null")
    except (OSError, json.JSONDecodeError):
        return None
    width = header.get("width") if isinstance(header, dict) else None
    return width if isinstance(width, int) and width > 0 else None


def visible(row: str) -> str:
    """A row without its colours."""
    return SGR.sub("", row)


class _Screen:
    def __init__(self) -> None:
        self.rows: list[str] = [""]
        self.row = 0
        self.column = 0

    def _line(self) -> str:
        while self.row >= len(self.rows):
            self.rows.append("")
        return self.rows[self.row]

    def write(self, text: str) -> None:
        line = self._line()
        plain = visible(line)
        if self.column >= len(plain):
            # Past the end (after a cursor move): pad with spaces, then append.
            self.rows[self.row] = line + " " * (self.column - len(plain)) + text
        else:
            # Overwriting printed text: colours of the overwritten part are lost, which is fine
            # for a status line rewritten after `\r`.
            self.rows[self.row] = plain[:self.column] + text + plain[self.column + len(text):]
        self.column += len(text)

    def control(self, parameters: str, final: str) -> None:
        count = int(parameters) if parameters.isdigit() else 1
        if final == "A":
            self.row = max(0, self.row - count)
        elif final == "B":
            self.row += count
        elif final == "C":
            self.column += count
        elif final == "D":
            self.column = max(0, self.column - count)
        elif final == "G":
            self.column = max(0, count - 1)
        elif final == "K":
            plain = visible(self._line())
            if parameters == "2":
                self.rows[self.row] = ""
            elif parameters in ("", "0"):
                self.rows[self.row] = plain[:self.column] if self.column < len(plain) else self._line()
            elif parameters == "1":
                self.rows[self.row] = " " * min(self.column, len(plain)) + plain[self.column:]
        elif final == "J" and parameters in ("2", "3"):
            self.rows, self.row = [""], 0
        elif final == "H":
            self.column = 0

    def newline(self) -> None:
        self.row += 1
        self._line()


def screen_rows(printed: str) -> list[str]:
    """The rows a terminal would show for `printed`, colours kept (see the module's docstring)."""
    screen = _Screen()
    position = 0
    plain_run = re.compile(r"[^\x1b\r\n\b]+")
    while position < len(printed):
        char = printed[position]
        if char == "\x1b":
            found = CONTROL_SEQUENCE.match(printed, position)
            if found is None:
                position += 1
                continue
            if found.group(3) == "m" and not found.group(2):
                screen.rows[screen.row] = screen._line() + found.group(0)
            elif found.group(3) is not None and not found.group(1).startswith("?"):
                screen.control(found.group(1), found.group(3))
            position = found.end()
        elif char == "\r":
            screen.column = 0
            position += 1
        elif char == "\n":
            screen.newline()
            position += 1
        elif char == "\b":
            screen.column = max(0, screen.column - 1)
            position += 1
        else:
            run = plain_run.match(printed, position)
            assert run is not None
            screen.write(run.group(0))
            position = run.end()
    return screen.rows

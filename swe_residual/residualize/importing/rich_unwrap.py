"""Text that the `rich` library printed wrapped to a terminal's width, joined back where that is
decidable.

rich (`Console.print` of a plain string) splits each line of the text into words, a word being
`\\s*\\S+\\s*` (its trailing spaces belong to it), and breaks the line before a word whose
visible part (`word.rstrip()`) does not fit in what is left of the width, keeping the spaces
that ended the previous line (they are cut only where they run past the width). A word wider
than the whole width is folded: cut into pieces of at most the width, in cells (a wide
character is two cells, and goes to the next piece when only one cell is left). Tabs are
expanded to 8-column stops first and `\\a \\b \\v \\f \\r` removed.

Reading the rows back, a break between a row and the next is

- a line end of the source, when the next row's first word (or, for a row without a space at
  its end, its first character) would still have fitted: rich never breaks where the text goes
  on fitting;
- `"wrap"` when the row ends with a space and the next word would not have fitted: rich's wrap,
  or a line of the source that ended with spaces (an agent copying a file that has trailing
  spaces prints exactly that: a recorded heredoc's `EOF` read as a wrap joins its last line);
- `"undecidable"` when a row fills the width (or all but a cell before a wide character) with
  no space at its end: a folded word, a line of exactly that width, or a line whose spaces past
  the width were cut.

Only the first is certain; `unwrap` gives the text when every break is one, and otherwise says
which row is open to two readings. Nothing is guessed: a caller that can show that both
readings give the same result (tb_mini.py: the same action) may go on.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_FIRST_WORD = re.compile(r"\S+")


@lru_cache(maxsize=4096)
def char_cells(char: str) -> int:
    """Columns a character takes on a terminal: 0 for combining marks and format characters,
    2 for East Asian wide and full-width ones (most emoji), else 1."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_len(text: str) -> int:
    return sum(char_cells(char) for char in text)


@dataclass(frozen=True)
class Unwrapped:
    text: str | None  # the source text, or None when a break is undecidable
    undecidable: str | None = None  # which break, and why


def break_kind(row: str, following: str, width: int) -> str:
    """`"line"`, `"wrap"` (or a line that ended with spaces) or `"undecidable"` for the break
    between `row` and `following`."""
    used = cell_len(row)
    if row.endswith(" "):
        word = _FIRST_WORD.match(following)
        if word is not None and word.start() == 0 and used + cell_len(word.group(0)) > width:
            return "wrap"
        return "line"  # rich breaks only before a word that does not fit
    if following and used + char_cells(following[0]) > width:
        return "undecidable"  # a folded word, or a line that filled the width
    return "line"


def unwrap(rows: list[str], width: int, trust_wraps: bool = False) -> Unwrapped:
    """The text rich printed as `rows` at `width` columns, when no break in it is open to two
    readings (see the module's docstring): every break a line end of the source. With
    `trust_wraps`, a `"wrap"` break is read as rich's wrap (the rows joined)."""
    parts = [rows[0]] if rows else []
    for number, (row, following) in enumerate(zip(rows, rows[1:]), start=1):
        kind = break_kind(row, following, width)
        if kind == "wrap" and trust_wraps:
            parts.append(following)
            continue
        if kind == "wrap":
            return Unwrapped(None, f"row {number} ({cell_len(row)} of {width} columns, ending {row[-20:]!r}) may be "
                                   f"wrapped or a line that ended with spaces before {following[:20]!r}")
        if kind == "undecidable":
            return Unwrapped(None, f"row {number} ({cell_len(row)} of {width} columns, ending {row[-20:]!r}) "
                                   f"may be wrapped or a line of its own before {following[:20]!r}")
        parts.append("\n" + following)
    return Unwrapped("".join(parts))

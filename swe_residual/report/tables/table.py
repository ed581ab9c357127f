"""The table model: :class:`Column`, :class:`Table` and :class:`Section`, and how a value is
written (:class:`Format`).

A :class:`Column` says what a reader sees (its title, and the terminal's or Markdown's when
those differ), how its value is read from a typed row, and how it is written. A :class:`Table`
is a name, a title, its columns, how it is laid out (:class:`Layout`) and the function that
lists its rows from a :class:`~swe_residual.metrics.summary.model.Summary`. A :class:`Section` is a
titled part of every output: lines of text, each with the table it introduces. The renderers
(:mod:`swe_residual.report.render` for the terminal and summary.md,
:mod:`swe_residual.report.html_tables` for report.html) draw any table and any section.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from swe_residual.metrics.summary.model import Summary

__all__ = ["Align", "Column", "Format", "Layout", "Part", "Scopes", "Section", "Table", "pct", "text_over"]


def pct(value: Any, digits: int = 1) -> str:
    """A figure with ``digits`` decimals, ``-`` when there is none (never "-0.0": a difference
    that rounds to zero has no sign)."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


class Format(StrEnum):
    """How a column's values are written (the same in every output)."""

    PCT = "pct"  # a success rate or share in %, one decimal
    POINTS = "points"  # a difference of two rates in points, one decimal
    RATIO = "ratio"  # a plain ratio, two decimals
    SECONDS = "seconds"  # a duration, two decimals
    NUMBER = "number"  # a quantity of any size (tokens, cost), six significant digits
    COUNT = "count"  # a whole number
    TEXT = "text"  # a name, or text the row makes
    CODE = "code"  # a name to copy (an item id, a command): code in summary.md and report.html

    def text(self, value: Any) -> str:
        """``value`` as the cell's text; ``-`` where there is none."""
        if value is None:
            return "-"
        if self in (Format.PCT, Format.POINTS):
            return pct(value)
        if self in (Format.RATIO, Format.SECONDS):
            return pct(value, 2)
        if self is Format.NUMBER:
            return f"{value:.6g}"
        return str(value)

    @property
    def is_figure(self) -> bool:
        """A measured figure (not a count or a name): what report.html spreads across scopes."""
        return self in (Format.PCT, Format.POINTS, Format.RATIO, Format.SECONDS, Format.NUMBER)


class Align(StrEnum):
    LEFT = "left"
    RIGHT = "right"


class Layout(StrEnum):
    """How a table's rows are laid out."""

    GRID = "grid"  # columns under their titles
    #: the same, but summary.md's pipes are not padded: a table of long texts, where padding
    #: would widen every line to the longest
    UNPADDED = "unpadded"
    #: one item per row, its cells run together: a bulleted list in summary.md and report.html,
    #: indented lines on the terminal
    LIST = "list"
    #: one paragraph per row, its cells run together, an emphasized cell in bold: the notices
    #: at the top of summary.md and report.html (an interrupted run, a partial merge)
    NOTICES = "notices"


class Scopes(StrEnum):
    """Which scopes a per-scope table lists for each agent."""

    OWN = "own"  # the agent's tracks, then overall unless it ran one track (summary.md)
    SHARED = "shared"  # the run's tracks, then overall when there are several; agents without figures there left out
    SHARED_ALL = "shared_all"  # the same, an agent without figures there shown with none (report.html)
    TRACKS = "tracks"  # the agent's tracks, never overall (acceptance bias: never pooled)


@dataclass(frozen=True)
class Column:
    """One column: ``title`` in report.html (and summary.md unless ``markdown``), ``terminal``
    on the terminal (None: not shown there), the value read from a typed row."""

    title: str
    value: Callable[[Any], Any]
    format: Format = Format.TEXT
    align: Align = Align.RIGHT
    #: what the column means (:mod:`swe_residual.report.meanings` for the figures)
    note: str | None = None
    markdown: str | None = None
    terminal: str | None = None
    #: bold in report.html where the table is drawn across scopes (the Gap), and a notice's label
    emphasis: bool = False
    #: shown only when some row has a value other than 0 (a rare kind of termination)
    optional: bool = False
    #: shown only when some row has a value at all (not None): figures of runs with rollouts
    given_only: bool = False
    #: report.html's cell as markup, when it is more than the text (an arrow)
    html: Callable[[Any], str] | None = None
    #: the value's interval ``(low, high)`` read from the row (None: the row has none), written
    #: after the value as ``22.0 [12.5, 31.0]`` by every renderer
    interval: Callable[[Any], tuple[float, float] | None] | None = None
    #: the terminal writes the interval too (where 100 columns leave room: the Gap)
    terminal_interval: bool = False
    #: the terminal wraps the cell in the width its line leaves, on at most this many lines,
    #: instead of cutting it (an error every excluded item shares, said once and whole)
    terminal_wrap: int | None = None

    @property
    def markdown_title(self) -> str:
        return self.markdown if self.markdown is not None else self.title

    def text(self, row: Any) -> str:
        return self.format.text(self.value(row))

    def bounds(self, row: Any) -> tuple[float, float] | None:
        """The row's interval of this column's value; None without one (or without a value)."""
        if self.interval is None or self.value(row) is None:
            return None
        return self.interval(row)

    def cell(self, row: Any, *, intervals: bool = True) -> str:
        """The cell's text: the value, and its interval after it when there is one."""
        text = self.text(row)
        bound = self.bounds(row) if intervals else None
        return text if bound is None else f"{text} [{self.format.text(bound[0])}, {self.format.text(bound[1])}]"


@dataclass(frozen=True)
class Table:
    """A table: ``rows(summary, scopes)`` lists its typed rows (None for a table whose rows its
    section or writer makes: the terminations, the skipped items of one reason); ``empty`` is
    what summary.md writes instead of a table without rows (None: the header alone),
    ``empty_html`` the same for report.html."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: Callable[[Summary, Scopes], list[Any]] | None = None
    scopes: Scopes = Scopes.OWN
    empty: str | None = None
    empty_html: str | None = None
    layout: Layout = Layout.GRID
    #: the rows the terminal lists (None: all), where summary.md and report.html list every
    #: one: the exceptions worth a glance
    terminal_rows: Callable[[Any], bool] | None = None
    #: the terminal writes a list's items on one line, comma-separated (many short names)
    terminal_inline: bool = False
    #: report.html's class of a notice's paragraph, read from its row (which notice it is)
    html_class: Callable[[Any], str] | None = None

    def rows_of(self, summary: Summary, scopes: Scopes | None = None) -> list[Any]:
        if self.rows is None:
            raise ValueError(f"table {self.name}: its rows come from its section or its writer, not from the summary")
        return self.rows(summary, scopes or self.scopes)

    def shown(self, rows: Sequence[Any]) -> tuple[Column, ...]:
        """The columns to draw for ``rows``: an optional column only when some row counts one."""
        return tuple(c for c in self.columns
                     if (not c.optional or any(c.value(r) for r in rows))
                     and (not c.given_only or any(c.value(r) is not None for r in rows)))


@dataclass(frozen=True)
class Part:
    """A piece of a section: a line of text (None: none; it may hold line breaks, which
    summary.md keeps and the other outputs join), and the table under it (None: none)."""

    text: str | None = None
    table: Table | None = None
    rows: Sequence[Any] = ()


@dataclass(frozen=True)
class Section:
    """A titled part of every output: ``parts(summary)`` lists its pieces, none when the section
    has nothing to say (then no output shows it). ``name`` is its anchor in report.html,
    ``level`` its heading's (2: a section, 3: a part of the one before)."""

    name: str
    title: str
    parts: Callable[[Summary], list[Part]]
    level: int = 2


def text_over(text: str, table: Table, *,
              shown: Callable[[Summary], bool] | None = None) -> Callable[[Summary], list[Part]]:
    """The parts of a section of one text over one table: the table's rows, when ``shown``
    (by default: when it has rows)."""
    def parts(summary: Summary) -> list[Part]:
        rows = table.rows_of(summary)
        visible = shown(summary) if shown is not None else bool(rows)
        return [Part(text, table, rows)] if visible else []

    return parts

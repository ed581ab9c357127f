"""Any :class:`~swe_residual.summary.tables.Table` as Markdown (summary.md) or as terminal lines.

Both lay the cells out with tabulate: key columns (left-aligned) first, figures right-aligned,
each cell written by its column's format (``-`` where a figure is missing). report.html's
renderer is :func:`swe_residual.report.tables.html_table`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tabulate import tabulate

from swe_residual.summary.tables import Column, Table

__all__ = ["markdown_table", "md_cell", "terminal_table"]


def md_cell(value: Any) -> Any:
    # A "|" or a newline inside a cell would break the Markdown table.
    return value.replace("|", "\\|").replace("\n", " ") if isinstance(value, str) else value


def _aligns(columns: Sequence[Column]) -> list[str]:
    return [str(c.align) for c in columns]


def markdown_table(table: Table, rows: Sequence[Any]) -> list[str]:
    """``rows`` as a Markdown (pipe) table; without rows, the table's ``empty`` line (or the
    header alone when it has none)."""
    if not rows and table.empty is not None:
        return [table.empty]
    columns = table.shown(rows)
    return tabulate(
        [[md_cell(c.cell(row)) for c in columns] for row in rows],
        headers=[c.markdown_title for c in columns],
        tablefmt="pipe",
        colalign=_aligns(columns),
        disable_numparse=True,  # every cell is written by its format: an agent named "1" stays text
    ).splitlines()


def terminal_table(
    table: Table, rows: Sequence[Any], *, first: Callable[[str], str] = lambda text: text, compact: bool = False
) -> list[str]:
    """``rows`` as plain columns, under the terminal titles (a column without one is not shown);
    ``first`` shortens the first column (an agent's name) to fit. ``compact`` lays the header
    out as a row, without tabulate's padding of headers, where many columns must fit 100."""
    columns = [c for c in table.shown(rows) if c.terminal is not None]
    header = [c.terminal or "" for c in columns]
    cells = [[first(c.text(row)) if i == 0 else c.cell(row, intervals=c.terminal_interval)
              for i, c in enumerate(columns)] for row in rows]
    if compact:
        return tabulate([header, *cells], tablefmt="plain", colalign=_aligns(columns),
                        disable_numparse=True).splitlines()
    return tabulate(cells, headers=header, tablefmt="plain", colalign=_aligns(columns),
                    disable_numparse=True).splitlines()


def terminal_across(
    rows: Sequence[Any], *, keys: Sequence[str], key: Column, across: Column, cell: Callable[[Any], str],
    corner: str, first: Callable[[str], str], head: Callable[[str], str],
) -> list[str]:
    """A table of ``rows`` spread across the values of column ``across``: one line per key
    (``keys``, the values of column ``key``, in order), one column per value of ``across``
    (sorted), ``cell(row)`` where a row has both, ``-`` where none does; ``corner`` heads the
    key column and ``head`` shortens a value's heading."""
    values = sorted({across.value(r) for r in rows})
    if not values:
        return []
    found = {(key.value(r), across.value(r)): r for r in rows}
    lines = [[first(k), *(cell(found[(k, v)]) if (k, v) in found else "-" for v in values)] for k in keys]
    return tabulate(lines, headers=[corner, *(head(v) for v in values)], tablefmt="plain", disable_numparse=True,
                    colalign=["left"] + ["right"] * len(values)).splitlines()

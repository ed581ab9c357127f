"""The table model: each table's columns in one place, and any table drawn by the terminal,
Markdown and HTML renderers (a column added once appears in all three)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from handoff_records import default_records, view_records

from summaries import summary_of

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS
from swe_residual.report.html_tables import html_grouped, html_table
from swe_residual.report.markdown import render_markdown
from swe_residual.report.render import markdown_table, terminal_table
from swe_residual.report.tables import (
    ACCEPTANCE, ACCEPTANCE_COLUMNS, AGENT, HANDOFF_ACCEPTANCE, HEADLINE, TERMINATIONS, TRACK, Column, Format, Scopes,
    TerminationRow, pct,
)  # fmt: skip

PACKAGE = Path(__file__).resolve().parents[2] / "swe_residual"
TITLES = [c.title for c in ACCEPTANCE_COLUMNS]


def test_the_acceptance_bias_titles_are_written_in_one_source_file() -> None:
    # "Steps" alone also heads the items table's step count (a record's own steps)
    specific = [title for title in TITLES if title != "Steps"]
    holding = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
               for title in specific if f'"{title}"' in path.read_text(encoding="utf-8")}
    assert holding == {"report/tables/figures.py"}


def test_the_acceptance_columns_follow_acceptance_keys() -> None:
    assert len(ACCEPTANCE_COLUMNS) == len(ACCEPTANCE_KEYS)
    assert TITLES[ACCEPTANCE_KEYS.index("steps_ratio")] == "Steps"
    assert [c.format for c in ACCEPTANCE_COLUMNS].count(Format.RATIO) == 1
    # the by-view table shares the very same columns
    assert HANDOFF_ACCEPTANCE.columns[-len(ACCEPTANCE_COLUMNS):] == ACCEPTANCE_COLUMNS
    assert ACCEPTANCE.columns[-len(ACCEPTANCE_COLUMNS):] == ACCEPTANCE_COLUMNS


def test_formats() -> None:
    assert [Format.PCT.text(12.345), Format.POINTS.text(-3.0), Format.RATIO.text(0.5), Format.NUMBER.text(1234567.0),
            Format.COUNT.text(3), Format.TEXT.text("a"), Format.PCT.text(None)] == \
        ["12.3", "-3.0", "0.50", "1.23457e+06", "3", "a", "-"]
    assert pct(None) == "-" and pct(2.0, 2) == "2.00"
    assert pct(-0.0) == "0.0" and pct(-0.04) == "0.0" and pct(-0.05001) == "-0.1"  # no signed zero


def test_scopes_as_each_output_lists_them() -> None:
    summary = summary_of(default_records())  # A: repo and machine; B: repo only
    own = [(r.agent, r.scope) for r in HEADLINE.rows_of(summary)]
    assert own == [("A", "machine"), ("A", "repo"), ("A", "overall"), ("B", "repo")]
    shared = [(r.agent, r.scope) for r in HEADLINE.rows_of(summary, Scopes.SHARED)]
    assert shared == [("A", "machine"), ("A", "repo"), ("A", "overall"), ("B", "repo"), ("B", "overall")]
    every = [(r.agent, r.scope) for r in HEADLINE.rows_of(summary, Scopes.SHARED_ALL)]
    assert ("B", "machine") in every and len(every) == 6
    assert [(r.agent, r.scope) for r in ACCEPTANCE.rows_of(summary)] == [("A", "machine"), ("A", "repo"), ("B", "repo")]


def test_a_column_added_once_is_drawn_by_every_renderer() -> None:
    """The worked example of docs/tables.md: one Column, and the terminal, summary.md and
    report.html all show it."""
    solved = Column("Solved tasks", lambda r: r.figures.cond_fail_tasks, Format.COUNT, markdown="n_solved",
                    terminal="solved")
    table = replace(HEADLINE, columns=(*HEADLINE.columns, solved))
    summary = summary_of(view_records())
    rows = table.rows_of(summary)

    markdown = markdown_table(table, rows)
    assert markdown[0].rstrip("|").split("|")[-1].strip() == "n_solved"
    a_repo = next(line for line in markdown if line.startswith("| A ") and "| repo " in line)
    assert a_repo.rstrip("|").split("|")[-1].strip() == str(summary.agents["A"].tracks["repo"].cond_fail_tasks)

    terminal = terminal_table(table, [r for r in table.rows_of(summary, Scopes.SHARED) if r.scope == "repo"])
    assert terminal[0].split()[-1] == "solved" and terminal[0].split()[0] == "agent"
    assert "Track" not in terminal[0]  # the terminal groups by track: no column for it

    html = html_table(table, rows)
    assert "<th class=\"\">Solved tasks</th>" in html
    grouped = html_grouped(table, table.rows_of(summary, Scopes.SHARED_ALL), key=AGENT, group=TRACK)
    assert re.search(r'title="\d+ tasks, \d+ states, \d+ solved tasks"', grouped)  # the counts behind a figure


def test_an_empty_table_says_so_where_its_declaration_says() -> None:
    summary = summary_of([])
    assert markdown_table(HEADLINE, HEADLINE.rows_of(summary)) == ["(no agents)"]
    assert "(no residual states)" in render_markdown(summary)


def test_an_optional_column_is_drawn_only_when_counted() -> None:
    rows = [TerminationRow("a", 2, {"submitted": 2}), TerminationRow("b", 1, {"other": 1})]
    assert terminal_table(TERMINATIONS, rows[:1])[0].split() == ["agent", "items", "submitted", "budget",
                                                                 "agent", "error", "infra"]
    assert terminal_table(TERMINATIONS, rows)[0].split()[-1] == "other"


def test_excluded_items_sharing_an_error_are_one_row_per_agent_and_error() -> None:
    from swe_residual.metrics.summary.model import ExcludedItem
    from swe_residual.report.tables import EXCLUDED, excluded_groups

    no_network = "agent-setup: a: its install step needs the network"
    items = [ExcludedItem(agent=agent, task=task, state=state, error=error) for agent, task, state, error in (
        ("a", "t1", None, no_network), ("a", "t1", "s1", no_network), ("a", "t2", "s2", no_network),
        ("b", "t1", None, no_network), ("a", "t3", None, "environment: lost container"))]
    groups = excluded_groups(items)
    assert [(g.agent, g.error, len(g.items), g.task, g.state) for g in groups] == [
        ("a", no_network, 3, "2 tasks", "3 starts"), ("b", no_network, 1, "t1", "(clean)"),
        ("a", "environment: lost container", 1, "t3", "(clean)")]
    table = markdown_table(EXCLUDED, groups)
    assert sum(no_network in line for line in table) == 2  # said once per agent, not once per item

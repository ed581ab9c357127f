"""Each figure's meaning is written once, in summary/meanings.py, and every output reads it from
there: a wording changed in one place cannot leave another output saying something else."""

from __future__ import annotations

from pathlib import Path

import pytest
from handoff_records import default_records
from summaries import records_of, summary_of

from swe_residual.report.html import render_html
from swe_residual.report import meanings
from swe_residual.report.markdown import render_markdown
from swe_residual.report.terminal import render_terminal
from swe_residual.report.tables import ACCEPTANCE_COLUMNS, COND_FAIL, GAP

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "swe_residual"

#: A phrase only the meaning has, per figure (a copy of the meaning elsewhere would hold it too).
PHRASES = {
    "Success rates": (meanings.RATES, "then equally across tasks"),
    "Residual": (meanings.RESIDUAL, "work a predecessor left"),
    "Ref. Clean": (meanings.CLEAN, "clean start on the same tasks"),
    "Gap": (meanings.GAP, "computed before rounding"),
    "CondFail": (meanings.COND_FAIL, "failed on the tasks the agent solves"),
    "pass@K": (meanings.PASS_AT_K, "of each start, averaged the same way"),
    "Disagree": (meanings.DISAGREE, "Residual States whose rollouts disagree"),
    "Smallest detectable": (meanings.MDE, "t(0.8, n - 1)"),
    "After Holm": (meanings.AFTER_HOLM, "testing every pair of the track"),
    "R/C": (meanings.TAKEOVER_RATIO, "median over the same tasks' Clean items"),
    "Same failing": (meanings.ACCEPTANCE["same_failing"], "exactly the tests that failed"),
    "Init. failing": (meanings.ACCEPTANCE["initially_failing_clean"], "failing tests that pass at the end"),
    "Kept": (meanings.ACCEPTANCE["kept"], "added lines still in the final diff"),
    "Left out": (meanings.ACCEPTANCE["left_out_clean"], "change a file the reference solution changes"),
    "Opened": (meanings.ACCEPTANCE["left_out_opened"], "showed a left-out file"),
    "Steps": (meanings.ACCEPTANCE["steps_ratio"], "Residual/Clean step ratio"),
    "Inspected": (meanings.ACCEPTANCE["inspected"], "read a file the predecessor changed"),
    "Split by Kept": (meanings.ACCEPTANCE["split_by_kept"], "keep more / less than"),
}


@pytest.mark.parametrize("figure", list(PHRASES))
def test_each_meaning_is_written_in_one_source_file(figure: str) -> None:
    meaning, phrase = PHRASES[figure]
    assert phrase in meaning  # the phrase is the meaning's own
    holding = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
               if phrase in path.read_text(encoding="utf-8")}
    assert holding == {"report/meanings.py"}


def test_every_output_says_the_headline_figures_in_the_same_words(tmp_path: Path) -> None:
    summary = summary_of(default_records(), compare=True)
    markdown = " ".join(render_markdown(summary).split())  # its paragraphs are broken into lines
    terminal = render_terminal(summary)
    page = render_html(summary, records_of(default_records()), tmp_path).replace("&#x27;", "'")
    for meaning in (meanings.RESIDUAL, meanings.CLEAN, meanings.GAP, meanings.COND_FAIL):
        assert meaning in markdown and meaning in page
        assert any(line.endswith(f"= {meaning};") for line in terminal)  # the legend
    # the columns explain themselves in the same words
    assert (GAP.note, COND_FAIL.note) == (meanings.GAP, meanings.COND_FAIL)
    assert [c.note for c in ACCEPTANCE_COLUMNS] == list(meanings.ACCEPTANCE.values())

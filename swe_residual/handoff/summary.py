"""The summary's "by handoff view" part: ``summary["by_handoff"]`` and its Markdown and terminal
tables (the HTML ones are in :mod:`swe_residual.handoff.report`; the tables' columns are
declared in :mod:`swe_residual.summary.tables`).

Present only when more than one view ran, so a run without ``--handoff`` (or with ``blind``
alone) has exactly the summary it always had. The metrics are
:mod:`swe_residual.handoff.metrics`'s; nothing here computes one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from swe_residual.handoff.metrics import by_handoff, views_of
from swe_residual.metrics.headline import Record
from swe_residual.summary.model import Summary
from swe_residual.summary.render import markdown_table, terminal_table
from swe_residual.summary.tables import HANDOFF_ACCEPTANCE, HANDOFF_VIEWS, TAKEOVER

__all__ = ["handoff_markdown", "handoff_summary", "handoff_terminal"]


def handoff_summary(records: Sequence[Record]) -> dict[str, Any] | None:
    """``{AGENT: {VIEW: {...}}}`` for ``summary["by_handoff"]``, or None when one view ran."""
    return by_handoff(records) if len(views_of(records)) > 1 else None


def handoff_markdown(summary: Summary) -> list[str]:
    """The three by-view tables as Markdown lines (none when one view ran)."""
    s = summary
    if not s.by_handoff:
        return []
    out = ["## By handoff view", ""]
    out += ["What the agent was told of its predecessor (blind: nothing, the paper's protocol). Each view's"]
    out += ["Residual States against the same Clean Starts, on that view's tasks; success in %, Gap in points;"]
    out += ["R/C = median over the Residual items / median over the same tasks' Clean items.", ""]
    out += markdown_table(HANDOFF_VIEWS, HANDOFF_VIEWS.rows_of(s)) + [""]
    out += ["### Takeover cost by handoff view", ""]
    out += ["Steps, tokens (prompt + completion) and cost where known; every outcome counts, infra errors do not.", ""]
    out += markdown_table(TAKEOVER, TAKEOVER.rows_of(s)) + [""]
    out += ["### Acceptance bias by handoff view", ""]
    out += ["Normally submitted runs, per track as in the acceptance-bias table above.", ""]
    return out + markdown_table(HANDOFF_ACCEPTANCE, HANDOFF_ACCEPTANCE.rows_of(s)) + [""]


def handoff_terminal(summary: Summary,
                     clip: Callable[[str, int], str] = lambda text, width: text) -> list[str]:
    """The by-view headline table for the terminal (none when one view ran), within 100 columns."""
    s = summary
    if not s.by_handoff:
        return []
    # Laid out without tabulate's header padding: nine columns must fit.
    return terminal_table(HANDOFF_VIEWS, HANDOFF_VIEWS.rows_of(s), first=lambda agent: clip(agent, 26), compact=True)

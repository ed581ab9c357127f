"""``report.html``'s "by handoff view" tables, read from ``summary["by_handoff"]`` alone (present
only when more than one view ran; :mod:`swe_residual.handoff.summary` builds it, the tables are
declared in :mod:`swe_residual.summary.tables`)."""

from __future__ import annotations

from swe_residual.report.tables import heading, html_table
from swe_residual.summary.model import Summary
from swe_residual.summary.tables import HANDOFF_ACCEPTANCE, HANDOFF_VIEWS, TAKEOVER

__all__ = ["handoff_section"]


def handoff_section(summary: Summary) -> list[str]:
    s = summary
    if not s.by_handoff:
        return []
    return [
        heading(2, "by-handoff", "Success and takeover cost by handoff view (what the agent was told of its "
                                 "predecessor)"),
        '<p class="note">blind: nothing (the paper\'s protocol); trace: its trajectory; notes: its notes; structured: '
        "a note the suite writes from the state. Each view's Residual States against the same Clean Starts; "
        "R/C = median over the Residual items / median over the same tasks' Clean items.</p>",
        html_table(HANDOFF_VIEWS, HANDOFF_VIEWS.rows_of(s)),
        heading(3, "takeover-cost", "Takeover cost by handoff view: steps, tokens and cost"),
        html_table(TAKEOVER, TAKEOVER.rows_of(s)),
        heading(3, "acceptance-by-handoff", "Acceptance bias by handoff view, per track"),
        html_table(HANDOFF_ACCEPTANCE, HANDOFF_ACCEPTANCE.rows_of(s)),
    ]

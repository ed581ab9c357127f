"""The summary's "by handoff view" part: ``summary["by_handoff"]`` and its sections (the tables'
columns are declared in :mod:`swe_residual.summary.tables`).

Present only when more than one view ran, so a run without ``--handoff`` (or with ``blind``
alone) has exactly the summary it always had. The metrics are
:mod:`swe_residual.handoff.metrics`'s; nothing here computes one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from swe_residual.handoff.metrics import by_handoff, views_of
from swe_residual.metrics.headline import Record
from swe_residual.summary import meanings
from swe_residual.summary.model import Summary
from swe_residual.summary.tables import HANDOFF_ACCEPTANCE, HANDOFF_VIEWS, TAKEOVER, Part, Section, Table, text_over

__all__ = ["HANDOFF_SECTIONS", "handoff_summary"]


def handoff_summary(records: Sequence[Record]) -> dict[str, Any] | None:
    """``{AGENT: {VIEW: {...}}}`` for ``summary["by_handoff"]``, or None when one view ran."""
    return by_handoff(records) if len(views_of(records)) > 1 else None


def _parts(text: str, table: Table) -> Callable[[Summary], list[Part]]:
    return text_over(text, table, shown=lambda summary: bool(summary.by_handoff))  # only with several views


VIEWS_SECTION = Section("by-handoff", HANDOFF_VIEWS.title, _parts(
    "What the agent was told of its predecessor (blind: nothing, the paper's protocol). Each view's\n"
    "Residual States against the same Clean Starts, on that view's tasks; success in %, Gap in points;\n"
    f"R/C = {meanings.TAKEOVER_RATIO}.", HANDOFF_VIEWS))
TAKEOVER_SECTION = Section("takeover-cost", TAKEOVER.title, _parts(
    "Steps, tokens (prompt + completion) and cost where known; every outcome counts, infra errors do not.",
    TAKEOVER), level=3)
ACCEPTANCE_SECTION = Section("acceptance-by-handoff", HANDOFF_ACCEPTANCE.title, _parts(
    "Normally submitted runs, per track as in the acceptance-bias table above.", HANDOFF_ACCEPTANCE), level=3)
#: In every output's order; the terminal shows the first (the by-view figures) alone.
HANDOFF_SECTIONS = (VIEWS_SECTION, TAKEOVER_SECTION, ACCEPTANCE_SECTION)

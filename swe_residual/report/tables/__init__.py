"""Every table of the summary, declared once: its columns over typed rows, and where its rows
come from (docs/tables.md).

The model (:mod:`.table`: :class:`Column`, :class:`Table`, :class:`Section`), then one module
per group of tables: the figures per scope and handoff view (:mod:`.figures`), the comparisons
and what qualifies the figures (:mod:`.comparison`), the infrastructure (:mod:`.infra`). The
sections a run adds (the run's status, the skipped items, the oracle's misses, the machine
track's fidelity, the handoff views) are declared beside what they summarize. The renderers
(:mod:`swe_residual.report.render` for the terminal and summary.md,
:mod:`swe_residual.report.html_tables` for report.html) draw any table and any section, so a metric
added as one column appears in every output that draws its table.
"""

from swe_residual.report.tables.table import (
    Align, Column, Format, Layout, Part, Scopes, Section, Table, pct, text_over,
)  # fmt: skip
from swe_residual.report.tables.figures import (
    ACCEPTANCE, ACCEPTANCE_COLUMNS, ACCEPTANCE_NOTE, ACCEPTANCE_TITLES, AGENT, CLEAN, COND_FAIL, DISAGREE, GAP,
    HANDOFF_ACCEPTANCE, HANDOFF_VIEWS, HEADLINE, PASS_AT_K_CLEAN, PASS_AT_K_RESIDUAL, PREDECESSOR, PREDECESSOR_NAME,
    PREDECESSOR_NOTE, RESIDUAL, TAKEOVER, TRACK, VIEW, AcceptanceRow, PredecessorRow,
    ScopeRow, TakeoverRow, ViewRow, key_column, scope_rows,
)  # fmt: skip
from swe_residual.report.tables.comparison import (
    LEFT_OUT, LEFT_OUT_NOTE, LEFT_OUT_SECTION, NOISE_NOTE, NOISE_SECTION, PAIRS, PAIRS_NOTE, POWER, POWER_SECTION, POWER_NOTE, RANKS, ROLLOUT_NOISE, UNSOLVED, LeftOutRow, NoiseRow, PairRow,
    PowerRow, RankRow, left_out_rows, pair_rows, power_rows, rank_rows,
)  # fmt: skip
from swe_residual.report.tables.infra import (
    CONTRADICTED, CONTRADICTED_LINE, DURATIONS, EXCLUDED, FAILED_ITEMS, FAILED_LINE, TERMINATIONS, DurationRow,
    ExcludedGroup, TerminationRow, excluded_groups, state_label,
)  # fmt: skip

__all__ = [
    "ACCEPTANCE", "ACCEPTANCE_COLUMNS", "ACCEPTANCE_NOTE", "ACCEPTANCE_TITLES", "AGENT", "CLEAN", "COND_FAIL",
    "CONTRADICTED", "CONTRADICTED_LINE", "DISAGREE", "DURATIONS", "EXCLUDED", "FAILED_ITEMS", "FAILED_LINE", "GAP",
    "HANDOFF_ACCEPTANCE", "HANDOFF_VIEWS", "HEADLINE", "LEFT_OUT", "LEFT_OUT_NOTE", "LEFT_OUT_SECTION", "NOISE_NOTE",
    "NOISE_SECTION", "PAIRS",
    "PAIRS_NOTE", "PASS_AT_K_CLEAN", "PASS_AT_K_RESIDUAL", "POWER", "POWER_NOTE", "POWER_SECTION", "PREDECESSOR", "PREDECESSOR_NAME",
    "PREDECESSOR_NOTE", "RANKS", "RESIDUAL", "ROLLOUT_NOISE", "TAKEOVER", "TERMINATIONS", "TRACK", "UNSOLVED", "VIEW",
    "AcceptanceRow", "Align", "Column", "DurationRow", "ExcludedGroup", "Format", "Layout", "LeftOutRow", "NoiseRow",
    "PairRow", "Part", "PowerRow", "PredecessorRow", "RankRow", "Scopes", "ScopeRow", "Section", "Table",
    "TakeoverRow", "TerminationRow", "ViewRow", "excluded_groups", "key_column", "left_out_rows", "pair_rows", "pct",
    "power_rows", "rank_rows", "scope_rows", "state_label", "text_over",
]  # fmt: skip

"""``report.html``'s "by handoff view" tables, read from ``summary["by_handoff"]`` alone (present
only when more than one view ran; :mod:`swe_residual.handoff.summary` builds it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swe_residual.report.tables import heading, pct, table
from swe_residual.handoff.summary import BIAS, COST

__all__ = ["handoff_section"]


def handoff_section(summary: Mapping[str, Any]) -> list[str]:
    views: Mapping[str, Any] = summary.get("by_handoff") or {}
    if not views:
        return []
    rows, cost_rows, bias_rows = [], [], []
    for agent, blocks in views.items():
        for view, b in blocks.items():
            takeover = b.get("takeover") or {}
            ratios = [pct((takeover.get(name) or {}).get("ratio"), 2) for name in ("steps", "tokens", "cost")]
            rows.append([agent, view, pct(b.get("residual")), pct(b.get("clean")), pct(b.get("gap")),
                         pct(b.get("cond_fail")), *ratios, str(b.get("n_tasks", 0)), str(b.get("n_states", 0))])
            for name, c in takeover.items():
                cost_rows.append([agent, view, name, _number(c.get("residual_median")), _number(c.get("clean_median")),
                                  pct(c.get("ratio"), 2), str(c.get("n_tasks", 0)), str(c.get("n_residual", 0))])
            for track, ab in (b.get("acceptance_bias") or {}).items():
                ab = ab or {}
                split = ab.get("split_by_kept") or {}
                bias_rows.append([agent, view, track, *(pct(ab.get(k)) for k in (
                    "same_failing", "initially_failing_clean", "initially_failing_residual", "kept", "left_out_clean",
                    "left_out_residual", "left_out_opened")), pct(ab.get("steps_ratio"), 2), pct(ab.get("inspected")),
                    f"{pct(split.get('success_above'))} / {pct(split.get('success_below'))}"])
    header = ["Agent", "View", "Residual", "Ref. Clean", "Gap", "CondFail", "Steps R/C", "Tokens R/C", "Cost R/C",
              "Tasks", "States"]
    return [
        heading(2, "by-handoff", "Success and takeover cost by handoff view (what the agent was told of its "
                                 "predecessor)"),
        '<p class="note">blind: nothing (the paper\'s protocol); trace: its trajectory; notes: its notes; structured: '
        "a note the suite writes from the state. Each view's Residual States against the same Clean Starts; "
        "R/C = median over the Residual items / median over the same tasks' Clean items.</p>",
        table(header, rows, left=2),
        heading(3, "takeover-cost", "Takeover cost by handoff view: steps, tokens and cost"),
        table(COST, cost_rows, left=3),
        heading(3, "acceptance-by-handoff", "Acceptance bias by handoff view, per track"),
        table(BIAS, bias_rows, left=3),
    ]


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.6g}"

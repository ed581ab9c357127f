"""The summary's "by handoff view" part: ``summary["by_handoff"]`` and its Markdown and terminal
tables (the HTML ones are in :mod:`swe_residual.handoff.report`).

Present only when more than one view ran, so a run without ``--handoff`` (or with ``blind``
alone) has exactly the summary it always had. The metrics are
:mod:`swe_residual.handoff.metrics`'s; nothing here computes one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tabulate import tabulate

from swe_residual.handoff.metrics import by_handoff, views_of
from swe_residual.metrics.headline import RecordLike

__all__ = ["handoff_markdown", "handoff_summary", "handoff_terminal"]


def handoff_summary(records: Sequence[RecordLike]) -> dict[str, Any] | None:
    """``{AGENT: {VIEW: {...}}}`` for ``summary["by_handoff"]``, or None when one view ran."""
    return by_handoff(records) if len(views_of(records)) > 1 else None


def _rows(summary: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [(agent, view, block) for agent, views in (summary.get("by_handoff") or {}).items()
            for view, block in views.items()]


def _ratio(block: Mapping[str, Any], name: str) -> Any:
    return ((block.get("takeover") or {}).get(name) or {}).get("ratio")


def _table(header: Sequence[str], rows: list[list[Any]], floatfmt: Sequence[str], fmt: str, left: int) -> list[str]:
    cells = [[c.replace("|", "\\|") if isinstance(c, str) and fmt == "pipe" else c for c in row] for row in rows]
    return tabulate(cells, headers=list(header), tablefmt=fmt, floatfmt=list(floatfmt), missingval="-",
                    colalign=["left"] * left + ["right"] * (len(header) - left),
                    disable_numparse=list(range(left))).splitlines()


HEADLINE = ["Agent", "View", "Residual (%)", "Ref. Clean (%)", "Gap", "CondFail (%)", "Steps R/C", "Tokens R/C",
            "Cost R/C", "n_tasks", "n_states"]
HEADLINE_FMT = [""] * 2 + [".1f"] * 4 + [".2f"] * 3 + ["g"] * 2
COST = ["Agent", "View", "Quantity", "Residual median", "Clean median", "R/C", "n_tasks", "n_residual"]
COST_FMT = ["", "", "", ".6g", ".6g", ".2f", "g", "g"]
BIAS = ["Agent", "View", "Track", "Same failing", "Init. failing Clean", "Init. failing Residual", "Kept",
        "Left-out Clean", "Left-out Residual", "Opened", "Steps", "Inspected", "Success above / below median Kept"]
BIAS_FMT = [""] * 3 + [".1f"] * 7 + [".2f", ".1f", ""]


def _headline_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    return [[agent, view, b.get("residual"), b.get("clean"), b.get("gap"), b.get("cond_fail"), _ratio(b, "steps"),
             _ratio(b, "tokens"), _ratio(b, "cost"), b.get("n_tasks", 0), b.get("n_states", 0)]
            for agent, view, b in _rows(summary)]


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def handoff_markdown(summary: Mapping[str, Any]) -> list[str]:
    """The three by-view tables as Markdown lines (none when one view ran)."""
    if not summary.get("by_handoff"):
        return []
    out = ["## By handoff view", ""]
    out += ["What the agent was told of its predecessor (blind: nothing, the paper's protocol). Each view's"]
    out += ["Residual States against the same Clean Starts, on that view's tasks; success in %, Gap in points;"]
    out += ["R/C = median over the Residual items / median over the same tasks' Clean items.", ""]
    out += _table(HEADLINE, _headline_rows(summary), HEADLINE_FMT, "pipe", 2) + [""]
    out += ["### Takeover cost by handoff view", ""]
    out += ["Steps, tokens (prompt + completion) and cost where known; every outcome counts, infra errors do not.", ""]
    rows = [[agent, view, name, c.get("residual_median"), c.get("clean_median"), c.get("ratio"),
             c.get("n_tasks", 0), c.get("n_residual", 0)]
            for agent, view, b in _rows(summary) for name, c in (b.get("takeover") or {}).items()]
    out += _table(COST, rows, COST_FMT, "pipe", 3) + [""]
    out += ["### Acceptance bias by handoff view", ""]
    out += ["Normally submitted runs, per track as in the acceptance-bias table above.", ""]
    rows = []
    for agent, view, b in _rows(summary):
        for track, ab in (b.get("acceptance_bias") or {}).items():
            split = (ab or {}).get("split_by_kept") or {}
            rows.append([agent, view, track, *((ab or {}).get(k) for k in (
                "same_failing", "initially_failing_clean", "initially_failing_residual", "kept", "left_out_clean",
                "left_out_residual", "left_out_opened", "steps_ratio", "inspected")),
                f"{_pct(split.get('success_above'))} / {_pct(split.get('success_below'))}"])
    return out + _table(BIAS, rows, BIAS_FMT, "pipe", 3) + [""]


def handoff_terminal(summary: Mapping[str, Any], clip: Any = lambda text, width: text) -> list[str]:
    """The by-view headline table for the terminal (none when one view ran), within 100 columns."""
    if not summary.get("by_handoff"):
        return []
    header = ["by handoff view", "view", "residual", "clean", "gap", "condfail", "steps x", "tokens x", "cost x"]
    rows = [header]
    for row in _headline_rows(summary):
        # Formatted here and laid out without tabulate's header padding: nine columns must fit.
        cells = [_pct(v) for v in row[2:6]] + ["-" if v is None else f"{v:.2f}" for v in row[6:9]]
        rows.append([clip(row[0], 26), row[1], *cells])
    return tabulate(rows, tablefmt="plain", colalign=["left", "left"] + ["right"] * 7,
                    disable_numparse=True).splitlines()

"""Table 5 (paper §3.2): per track and in total, the candidates that passed review, each Stage IV
exclusion, and the states included; counted from Stage IV's outcomes or from the candidates
table5.json records (so a build of some tasks can count with what earlier builds recorded)."""

from __future__ import annotations

from typing import Any

from swe_residual.dataset.values import Track

PASSED_REVIEW, REPLAY_FAILED, UNUSABLE, NO_VERDICT, NOT_SOLVABLE, UNSTABLE, INCLUDED = (
    "passed_review", "replay_failed", "environment_unusable", "no_valid_verdict_or_not_failing",
    "not_oracle_solvable", "unstable_verifier", "included")
TABLE5_ROWS = (
    (PASSED_REVIEW, "Passed human review"),
    (REPLAY_FAILED, "Patch application or command replay failed"),
    (UNUSABLE, "Environment unusable for rollouts"),
    (NO_VERDICT, "No valid verifier result, or no longer failing"),
    (NOT_SOLVABLE, "No reference solution can finish it"),
    # Not a row of the paper's Table 5: the verifier's verdict on the state, or the oracle's from
    # it, changed between Stage IV's repeated runs (a timing-dependent test), so it measures nothing.
    (UNSTABLE, "Unstable verifier (repeated runs disagree)"),
    (INCLUDED, "Included"),
)


def _field(outcome: Any, name: str) -> str:
    return str(outcome[name] if isinstance(outcome, dict) else getattr(outcome, name))


def table5(outcomes: list[Any]) -> dict[str, dict[str, int]]:
    """Counts per track and in total: passed review, each exclusion, included."""
    tracks = sorted({_field(o, "track") for o in outcomes}) or [Track.REPO]
    table: dict[str, dict[str, int]] = {}
    for column in [*tracks, "total"]:
        chosen = [o for o in outcomes if column == "total" or _field(o, "track") == column]
        counts = {row: sum(_field(o, "category") == row for o in chosen) for row, _ in TABLE5_ROWS if row != PASSED_REVIEW}
        table[column] = {PASSED_REVIEW: len(chosen), **counts}
    return table


def render_table5(table: dict[str, dict[str, int]]) -> list[str]:
    columns = list(table)
    width = max(len(label) for _, label in TABLE5_ROWS)
    lines = ["Table 5: reconstruction and validation of the candidates that passed review",
             " " * width + "".join(f"  {column:>8}" for column in columns)]
    for row, label in TABLE5_ROWS:
        lines.append(f"{label:<{width}}" + "".join(f"  {table[column][row]:>8}" for column in columns))
    return lines

"""``summary.md``: the paper's tables as Markdown, from the typed summary."""

from __future__ import annotations

from swe_residual.handoff.summary import handoff_markdown
from swe_residual.run.status import skipped_markdown, status_markdown
from swe_residual.summary.fidelity import fidelity_markdown
from swe_residual.summary.model import Summary
from swe_residual.summary.oracle import oracle_markdown
from swe_residual.summary.render import markdown_table, md_cell
from swe_residual.summary.tables import (
    ACCEPTANCE, CONTRADICTED, EXCLUDED, FAILED_ITEMS, HEADLINE, LEFT_OUT, NOISE_NOTE, PAIRS, POWER, POWER_NOTE,
    PREDECESSOR, ROLLOUT_NOISE,
)  # fmt: skip
from swe_residual.summary.words import compared, plain_headlines, rollouts_note, rollouts_of, uncertainty_line

__all__ = ["render_markdown"]


def render_markdown(summary: Summary) -> str:
    """The paper's tables as Markdown: headline (Table 3 + CondFail), predecessor groups
    (Table 8), acceptance bias (Table 4), and the infrastructure figures."""
    s = summary
    out: list[str] = ["# SWE-Residual summary", ""] + status_markdown(s)
    if s.agents:
        out += ["In short (overall):", ""] + [f"- {md_cell(line)}" for line in plain_headlines(s)] + [""]

    out += ["## Residual Start vs. matched Clean Start", ""]
    out += ["Success rates in %, averaged over a task's states, then equally across tasks;"]
    out += ["Gap = Ref. Clean - Residual in points, computed before rounding. Residual: success from"]
    out += ["a Residual State (work a predecessor left and claimed done); Ref. Clean: success from a clean"]
    out += ["start on the same tasks; CondFail: the share of Residual States failed on the tasks the agent"]
    out += ["solves from a clean start."]
    line = uncertainty_line(s)
    out += ([f"{line}; one task gives none."] if line else []) + [""]
    k = rollouts_of(s)
    if k is not None:  # only with rollouts: a one-rollout summary.md is what it always was
        out += [rollouts_note(k), ""]
    out += markdown_table(HEADLINE, HEADLINE.rows_of(s)) + [""]
    left_out = LEFT_OUT.rows_of(s)
    if left_out:
        out += [f"### {LEFT_OUT.title}", ""]
        out += ["What the figures leave out, and why.", ""]
        out += markdown_table(LEFT_OUT, left_out) + [""]
    power = POWER.rows_of(s)
    if power:
        out += [f"### {POWER.title}", ""]
        out += [POWER_NOTE, ""]
        out += markdown_table(POWER, power) + [""]
    noise = ROLLOUT_NOISE.rows_of(s)
    if noise:
        out += [f"### {ROLLOUT_NOISE.title}", ""]
        out += [NOISE_NOTE, ""]
        out += markdown_table(ROLLOUT_NOISE, noise) + [""]

    if compared(s):
        out += ["## Agents compared", ""]
        out += ["Each pair on the tasks both ran: a - b in points, with the t interval over the per-task"]
        out += ["differences (a task's difficulty cancels); a difference whose interval includes 0 is not"]
        out += ["significant at this level. After Holm: the verdicts adjusted for testing every pair of the"]
        out += ["track at once (the family: all pairs of one scope, one figure at a time).", ""]
        out += markdown_table(PAIRS, PAIRS.rows_of(s)) + [""]

    out += ["## By predecessor agent", ""]
    out += ["Each group: tasks with >= 1 state from the predecessor, only its states averaged,"]
    out += ["Clean Start matched on the same tasks.", ""]
    out += markdown_table(PREDECESSOR, PREDECESSOR.rows_of(s)) + [""]

    out += ["## Acceptance bias", ""]
    out += ["Normally submitted runs; task-level averages in % (Gap in points);"]
    out += ["Steps = median over tasks of the mean Residual/Clean step ratio; one row per track, never"]
    out += ["pooled (Table 4 is the repo track's; the machine track is shown apart).", ""]
    out += markdown_table(ACCEPTANCE, ACCEPTANCE.rows_of(s)) + [""]

    out += handoff_markdown(s)
    out += oracle_markdown(s)

    infra = s.infra
    out += ["## Infrastructure", ""]
    out += [
        f"- items: {infra.items}",
        f"- retried (more than one attempt): {infra.retried}",
        f"- unresolved infra errors (excluded, not failures): {infra.unresolved}",
    ]
    if infra.excluded:
        out += [""] + markdown_table(EXCLUDED, EXCLUDED.rows_of(s))
    if infra.verifier_failed:
        out += ["", f"- verifier failed on the agent's final state, works on the clean state (failures, counted): "
                    f"{len(infra.verifier_failed)}", ""]
        out += markdown_table(FAILED_ITEMS, FAILED_ITEMS.rows_of(s))
    if infra.contradicted:
        out += ["", f"- passing reward contradicted by the per-test reports (failures, counted): "
                    f"{len(infra.contradicted)}", ""]
        out += markdown_table(CONTRADICTED, CONTRADICTED.rows_of(s))
    out += fidelity_markdown(s)
    skipped = skipped_markdown(s)
    if skipped:
        out += [""] + skipped[:-1]
    return "\n".join(out) + "\n"

"""What each figure of the summary means, in the words every output uses.

The terminal's legend, summary.md's paragraphs, report.html's notes and the columns' notes
(:mod:`swe_residual.report.tables`) all read these strings, so a figure is explained the same
way everywhere and its wording is changed in this one place (tests/summary/test_meanings.py
fails if a meaning is written out anywhere else in the package).
"""

from __future__ import annotations

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS

__all__ = [
    "ACCEPTANCE", "AFTER_HOLM", "CLEAN", "CLEAN_STARTS", "COND_FAIL", "DISAGREE", "GAP", "HEADLINE_NOTE", "MDE", "PASS_AT_K", "RATES", "RESIDUAL", "TAKEOVER_RATIO",
]  # fmt: skip

#: how every success rate is averaged
RATES = "Success rates in %, averaged over a task's states, then equally across tasks"
RESIDUAL = "success from a Residual State (work a predecessor left and claimed done)"
CLEAN = "success from a clean start on the same tasks"
GAP = "Ref. Clean - Residual in points, computed before rounding"
COND_FAIL = "the share of Residual States failed on the tasks the agent solves from a clean start"
#: where some task ran no Residual State (a dataset without states): not the matched Clean of the Gap
CLEAN_STARTS = ("success from a clean start over every task that ran one, with Residual States or without; "
                "not the Ref. Clean the Gap is matched on")
#: with rollouts; ``{k}`` is the number of rollouts per start ("K" where it is not one number)
PASS_AT_K = "the unbiased pass@{k} of each start, averaged the same way"
DISAGREE = "the share of Residual States whose rollouts disagree (some succeeded, some failed)"
#: the smallest true difference the t test detects with 80% power over n tasks (metrics/power.py)
MDE = "(t(1 - a/2, n - 1) + t(0.8, n - 1)) * sd / sqrt(n)"
#: a pair's verdicts, adjusted for the many pairs of a scope
AFTER_HOLM = ("the verdicts adjusted for testing every pair of the track at once (the family: all pairs of one "
              "scope, one figure at a time)")
#: a takeover-cost ratio (steps, tokens, cost) under a handoff view
TAKEOVER_RATIO = "median over the Residual items / median over the same tasks' Clean items"

#: the headline table's figures, in one paragraph (summary.md, report.html)
HEADLINE_NOTE = f"{RATES}; Gap = {GAP}. Residual: {RESIDUAL}; Ref. Clean: {CLEAN}; CondFail: {COND_FAIL}."

#: Table 4's columns (acceptance bias), by ``ACCEPTANCE_KEYS``: over normally submitted runs,
#: per run, averaged within a task, then across tasks (docs/reports.md has the long form)
ACCEPTANCE = {
    "same_failing": "the failed continuations that end with exactly the tests that failed in the inherited state",
    "initially_failing_clean": "the share of the state's failing tests that pass at the end of the Clean Start run",
    "initially_failing_residual": "the same share at the end of the continuation, over the same states",
    "kept": "the share of the predecessor's added lines still in the final diff, over failed continuations",
    "left_out_clean": "Clean Start runs that change a file the reference solution changes and the predecessor "
                      "did not touch",
    "left_out_residual": "continuations that change such a left-out file",
    "left_out_opened": "continuations whose actions showed a left-out file's contents",
    "steps_ratio": "median over tasks of the mean Residual/Clean step ratio",
    "inspected": "continuations that ran git status / git diff or read a file the predecessor changed",
    "split_by_kept": "the success of the continuations that keep more / less than the agent's median Kept",
}
assert tuple(ACCEPTANCE) == ACCEPTANCE_KEYS, "every acceptance-bias key has one meaning, in order"

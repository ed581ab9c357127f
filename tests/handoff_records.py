"""Hand-made run records for the handoff tests: a default (blind-only) run, and the same run
with more handoff views.

`default_records()` is frozen into tests/data/handoff/default_summary.{json,md}: those files
were written by the summary code as it was before handoff views existed, so comparing a new
summary of these records with them shows the default run's outputs did not move by a byte.
"""

from __future__ import annotations

from typing import Any

from recordfactory import make_record

S, F, X = "success", "failure", "infra_error"

# A predecessor's change to calc.py and two final patches: one keeps it, one rewrites it.
INHERITED = (
    "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n"
    "@@ -1,2 +1,2 @@\n-    return value\n+    return max(low, value)\n context\n"
)
REWRITTEN = (
    "diff --git a/calc.py b/calc.py\nindex 1111111..3333333 100644\n--- a/calc.py\n+++ b/calc.py\n"
    "@@ -1,2 +1,2 @@\n-    return value\n+    return max(low, min(value, high))\n context\n"
)
TESTS_BEFORE = {"t.test_low": "passed", "t.test_high": "failed"}
TESTS_PASS = {"t.test_low": "passed", "t.test_high": "passed"}


def _residual(task: str, state: str, outcome: str, **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "inherited_patch": INHERITED, "initial_tests": TESTS_BEFORE, "reference_files": ["calc.py"],
        "final_patch": INHERITED, "tests": TESTS_BEFORE if outcome == F else TESTS_PASS,
        "opened_files": ["calc.py"], "inspected": True,
    }
    fields.update(extra)
    return make_record(task, state, outcome, **fields)


def default_records() -> list[dict[str, Any]]:
    """Two agents, two tracks, tokens and costs, one unresolved infrastructure error."""
    return [
        make_record("t1", None, S, agent="A", steps=10, tokens={"prompt": 1000, "completion": 100}, cost=0.5,
                    final_patch=REWRITTEN, tests=TESTS_PASS),
        _residual("t1", "P-1", F, agent="A", steps=4, tokens={"prompt": 400, "completion": 40}, cost=0.2),
        _residual("t1", "Q-1", S, agent="A", pred="Q", steps=12, final_patch=REWRITTEN, cost=None,
                  tokens={"prompt": 1300, "completion": 120}),
        make_record("t2", None, S, agent="A", steps=20, tokens=None, cost=1.0, final_patch=REWRITTEN, tests=TESTS_PASS),
        _residual("t2", "P-1", F, agent="A", steps=6, tokens=None, cost=0.3),
        make_record("m1", None, S, agent="A", track="machine", steps=8),
        make_record("m1", "P-1", F, agent="A", track="machine", steps=3),
        make_record("t1", None, F, agent="B", steps=30, final_patch="", tests=TESTS_BEFORE),
        _residual("t1", "P-1", F, agent="B", steps=15),
        _residual("t1", "Q-1", X, agent="B", pred="Q", steps=None, error="lost container"),
        make_record("t2", None, S, agent="B", steps=25, final_patch=REWRITTEN, tests=TESTS_PASS),
        _residual("t2", "P-1", S, agent="B", steps=30, final_patch=REWRITTEN),
    ]


def view_records() -> list[dict[str, Any]]:
    """`default_records()` plus agent A's two repo states under `trace`, where it does better,
    faster and cheaper; B did not run `trace`."""
    return default_records() + [
        _residual("t1", "P-1", S, agent="A", handoff="trace", steps=6, final_patch=REWRITTEN, inspected=True,
                  tokens={"prompt": 500, "completion": 50}, cost=0.25),
        _residual("t1", "Q-1", S, agent="A", pred="Q", handoff="trace", steps=8, final_patch=REWRITTEN,
                  tokens={"prompt": 700, "completion": 80}, cost=None),
        _residual("t2", "P-1", F, agent="A", handoff="trace", steps=30, tokens=None, cost=0.9),
    ]

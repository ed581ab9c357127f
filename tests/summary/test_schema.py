"""docs/schema/summary.schema.json describes what summary.json holds (tests/trial/test_record_schema.py
checks that every checked-in schema is its model's as it is now)."""

from __future__ import annotations

import json

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unit


def test_the_summary_schema_names_every_key_summary_json_has() -> None:
    schema = json.loads((REPO_ROOT / "docs" / "schema" / "summary.schema.json").read_text(encoding="utf-8"))
    assert {"schema", "uncertainty", "agents", "infra", "comparison", "by_handoff", "oracle"} <= set(schema["properties"])
    scope = schema["$defs"]["ScopeMetrics"]["properties"]
    assert {"residual", "clean", "gap", "cond_fail", "intervals", "pass_at_k", "power"} <= set(scope)
    # a figure is a number, never only a float: an int stays an int in the file
    assert {"type": "number"} in scope["residual"]["anyOf"]

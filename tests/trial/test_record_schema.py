"""The checked-in JSON schema of the run record is the one its model gives (scripts/write-schemas)."""

from __future__ import annotations

import json
import runpy

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unit

SCRIPT = REPO_ROOT / "scripts" / "write-schemas"


def test_each_checked_in_schema_is_the_one_its_model_gives() -> None:
    script = runpy.run_path(str(SCRIPT), run_name="write_schemas")
    assert "run-record.schema.json" in script["SCHEMAS"]
    for file_name, (target, mode) in script["SCHEMAS"].items():
        path = script["SCHEMA_DIR"] / file_name
        assert path.is_file() and path.read_text(encoding="utf-8") == script["schema_text"](target, mode), (
            f"{path.relative_to(REPO_ROOT)} differs from the schema of {target}: regenerate it with "
            "scripts/write-schemas and commit it")


def test_the_record_schema_says_what_every_record_holds_and_links_from_the_contract() -> None:
    schema = json.loads((REPO_ROOT / "docs" / "schema" / "run-record.schema.json").read_text(encoding="utf-8"))
    from swe_residual.trial.records import REQUIRED_FIELDS

    assert ["schema", *schema["required"]] == list(REQUIRED_FIELDS)
    assert "absent" not in schema["properties"] and schema["additionalProperties"] is True  # unknown keys are kept
    assert schema["$defs"]["Outcome"]["enum"] == ["success", "failure", "infra_error"]
    assert "schema/run-record.schema.json" in (REPO_ROOT / "docs" / "records.md").read_text(encoding="utf-8")

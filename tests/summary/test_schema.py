"""docs/schema/: each checked-in JSON schema is its model's as it is now (scripts/write-schemas)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
from types import ModuleType

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unit


def _load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("write_schemas", str(REPO_ROOT / "scripts" / "write-schemas"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module
    loader.exec_module(module)
    return module


write_schemas = _load_script()


@pytest.mark.parametrize("file_name, model", write_schemas.SCHEMAS)
def test_the_checked_in_schema_is_the_models(file_name: str, model: str) -> None:
    path = write_schemas.SCHEMA_DIR / file_name
    assert path.is_file(), f"docs/schema/{file_name} is missing: run scripts/write-schemas"
    assert path.read_text(encoding="utf-8") == write_schemas.schema_text(model), (
        f"docs/schema/{file_name} differs from {model}: run scripts/write-schemas")


def test_the_summary_schema_names_every_key_summary_json_has() -> None:
    schema = json.loads((write_schemas.SCHEMA_DIR / "summary.schema.json").read_text(encoding="utf-8"))
    assert {"schema", "uncertainty", "agents", "infra", "comparison", "by_handoff", "oracle"} <= set(schema["properties"])
    scope = schema["$defs"]["ScopeMetrics"]["properties"]
    assert {"residual", "clean", "gap", "cond_fail", "intervals", "pass_at_k", "power"} <= set(scope)
    # a figure is a number, never only a float: an int stays an int in the file
    assert {"type": "number"} in scope["residual"]["anyOf"]

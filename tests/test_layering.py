"""The package's layering holds (tests/layering.py says what it is): at most eight concepts at
the top, no import from a lower layer into a higher one, no import loop, and the layer table of
docs/architecture.md is the one the code draws."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import layering

pytestmark = pytest.mark.unit


def test_the_top_level_holds_at_most_eight_concepts_each_a_layer() -> None:
    entries = layering.top_level()
    assert len(entries) <= layering.MAX_TOP_LEVEL, entries
    assert set(entries) == set(layering.LAYERS), "each top-level package is a layer, and each layer a package"


def test_no_module_imports_from_a_higher_layer() -> None:
    offending = [f"{imp.source} (line {imp.line}) imports {imp.target}" for imp in layering.upward()]
    assert offending == [], "\n".join(offending)


def test_no_import_loop() -> None:
    assert layering.loops() == []


def test_docs_architecture_shows_the_layers_the_code_has() -> None:
    document = (layering.ROOT / "docs" / "architecture.md").read_text()
    assert layering.BEGIN in document and layering.END in document
    assert layering.drawn(document) == document, "redraw it: python tests/layering.py --write"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "swe_residual" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_checks_see_an_upward_import_a_lazy_one_and_a_loop(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "dataset/__init__.py": '"""Tasks."""\n',
        "dataset/task.py": "def load():\n    from swe_residual.report import page\n",
        "report/__init__.py": '"""Pages."""\n',
        "report/page.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from swe_residual.report import other\n",
        "report/other.py": "from swe_residual.report.page import x\n",
    })
    assert [(i.source, i.target) for i in layering.upward(root)] == [("swe_residual.dataset.task", "swe_residual.report.page")]
    assert layering.loops(root) == [["swe_residual.report.other", "swe_residual.report.page"]]
    assert "| 0 | `dataset/` | 2 | Tasks. | `report` |" in layering.table(root)
    shutil.rmtree(root / "swe_residual" / "report")
    assert layering.loops(root) == []

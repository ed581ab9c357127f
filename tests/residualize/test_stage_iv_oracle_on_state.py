"""Stage IV on the repository track also runs the oracle from the state keeping its work, as
Harbor's oracle runs solve.sh on whatever it finds (issue 32), and says why not; the suite's own
oracle (which discards a repo-track state's work first) still decides the exclusion."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from taskfactory import make_task

from swe_residual.environments.local import LocalBackend
from swe_residual.residualize import filter as stage_ii
from swe_residual.residualize import reconstruct, review
from swe_residual.residualize.generate import generate
from swe_residual.residualize.predecessors import parse_predecessor

SCRIPTS = {
    # Edits the very line the reference solution's patch changes: the patch cannot apply on top.
    "overlapping": "#!/bin/bash\nset -e\nsed -i 's/    return value$/    return max(low, value)/' calc.py\n",
    # Leaves the line alone, adds a helper file and a half-done docstring elsewhere.
    "beside": "#!/bin/bash\nset -e\necho 'notes: clamp is wrong' > NOTES.md\n",
}


@pytest.mark.slow
def test_stage_iv_says_whether_the_oracle_solves_the_state_keeping_its_work(tmp_path: Path) -> None:
    dataset = tmp_path / "data"
    make_task(dataset, "calc")
    predecessors = []
    for name, text in SCRIPTS.items():
        (tmp_path / "scripts" / name).mkdir(parents=True)
        (tmp_path / "scripts" / name / "calc.sh").write_text(text)
        predecessors.append(parse_predecessor(f"{name}=script:{tmp_path / 'scripts' / name}"))
    work = tmp_path / "work"
    backend = LocalBackend(cache_dir=tmp_path / "cache")
    try:
        generate(dataset, predecessors, work, backend=backend, timeout_sec=120, progress=lambda _: None)
        stage_ii.filter_runs(work, progress=lambda _: None)
        review.write_packets(work, progress=lambda _: None)
        review.collect(work, accept_all_as="tests", progress=lambda _: None)
        lines: list[str] = []
        built = reconstruct.build(work, tmp_path / "out", backend=backend, progress=lines.append)
    finally:
        backend.close()
    candidates = {c["predecessor"]: c for c in built["candidates"]}
    # Both are kept: the suite's oracle (discarding first) solves both.
    assert {name: c["category"] for name, c in candidates.items()} == {"overlapping": "included", "beside": "included"}
    assert candidates["beside"]["oracle_on_state"] is True and candidates["beside"]["oracle_on_state_detail"] is None
    overlapping = candidates["overlapping"]
    assert overlapping["oracle_on_state"] is False
    assert "does not apply" in overlapping["oracle_on_state_detail"], overlapping["oracle_on_state_detail"]
    assert json.loads((work / "table5.json").read_text())["candidates"] == built["candidates"]
    line = next(text for text in lines if "calc/overlapping" in text)
    assert "oracle keeping the state's work (as Harbor's): no (" in line
    stage_iv = tomllib.loads((tmp_path / "out" / "calc" / "residual" / "overlapping-1" / "state.toml").read_text())
    assert stage_iv["provenance"]["stage_iv"]["oracle_on_state"] is False
    assert "does not apply" in stage_iv["provenance"]["stage_iv"]["oracle_on_state_why_not"]
    beside = tomllib.loads((tmp_path / "out" / "calc" / "residual" / "beside-1" / "state.toml").read_text())
    assert beside["provenance"]["stage_iv"]["oracle_on_state"] is True

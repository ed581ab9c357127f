"""Acceptance: the pipeline regenerates the sample dataset's repo-track states (local backend).

generate -> filter -> review --accept-all-as -> build, from the sample tasks and their scripted
predecessors, must give states equal in content to the shipped ones (changes.patch byte for
byte, the measured per-test statuses, the state ids), and a rerun must change nothing.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.load import load_dataset

pytestmark = pytest.mark.slow

SAMPLE = REPO_ROOT / "datasets" / "sample"
PREDECESSORS = REPO_ROOT / "datasets" / "predecessors"


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _pipeline(work: Path, out: Path, tasks: tuple[str, ...] = ()) -> None:
    predecessors = [f"--predecessor={name}=script:{PREDECESSORS / name}" for name in ("drafter", "patcher", "skimmer")]
    assert cli_main(["residualize", "generate", str(SAMPLE), *predecessors, "--out", str(work), "--backend", "local"]) == 0
    assert cli_main(["residualize", "filter", str(work)]) == 0
    assert cli_main(["residualize", "review", str(work), "--accept-all-as", "pipeline-test"]) == 0
    only = [arg for task in tasks for arg in ("--task", task)]
    assert cli_main(["residualize", "build", str(work), "--out", str(out), "--repeats", "1", *only]) == 0


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("residualize")
    work, out = root / "work", root / "out"
    _pipeline(work, out)
    return work, out


def test_states_equal_the_shipped_ones(regenerated: tuple[Path, Path]) -> None:
    _, out = regenerated
    shipped = load_dataset(SAMPLE)
    rebuilt = load_dataset(out)
    assert not rebuilt.task_errors and all(not e.state_errors for e in rebuilt.entries)
    repo_entries = [e for e in shipped.entries if e.task.track == "repo"]
    assert {e.task.id for e in rebuilt.entries} == {e.task.id for e in repo_entries}
    for entry in repo_entries:
        again = rebuilt.entry(entry.task.id)
        assert [s.id for s in again.states] == [s.id for s in entry.states], entry.task.id
        for old, new in zip(entry.states, again.states):
            assert new.patch_path is not None and old.patch_path is not None
            assert new.patch_path.read_bytes() == old.patch_path.read_bytes(), f"{entry.task.id}/{old.id}"
            assert new.initial_tests == old.initial_tests, f"{entry.task.id}/{old.id}"
            for key in ("valid", "reward", "n_tests", "n_failed", "pass_rate"):
                assert new.raw["validation"][key] == old.raw["validation"][key], (entry.task.id, old.id, key)
            assert new.prior_steps == old.prior_steps
            provenance = new.raw["provenance"]
            assert provenance["stage_iii"]["accept_all"] == "pipeline-test"
            assert new.source_run == f"residualize:runs/{entry.task.id}/{old.predecessor}/1"


def test_table5_and_filter_records(regenerated: tuple[Path, Path]) -> None:
    import json

    work, _ = regenerated
    table = json.loads((work / "table5.json").read_text())["table5"]
    assert table["total"] == {"passed_review": 18, "replay_failed": 0, "environment_unusable": 0,
                              "no_valid_verdict_or_not_failing": 0, "not_oracle_solvable": 0, "unstable_verifier": 0, "included": 18}
    generated = json.loads((work / "generate.json").read_text())
    assert set(generated["skipped"]) == {e.task.id for e in load_dataset(SAMPLE).entries if e.task.track == "machine"}
    record = json.loads((work / "runs" / "lru-cache-ttl" / "drafter" / "1" / "record.json").read_text())
    assert record["submitted"] and record["outcome"] == "failure" and record["tests"]
    assert (work / "runs" / "lru-cache-ttl" / "drafter" / "1" / record["trajectory"]).is_file()


def test_rerun_is_idempotent(regenerated: tuple[Path, Path]) -> None:
    work, out = regenerated
    before_out, before_work = _tree(out), _tree(work)
    # Every stage again; Stage IV for two tasks of each track's kind only (the others keep what the
    # last build recorded, and are written again from it): a build is per candidate, so two stand for
    # the eighteen, and the project's CI is spared sixteen more oracle and verifier runs.
    _pipeline(work, out, tasks=("lru-cache-ttl", "spanfmt-days-weeks"))
    assert _tree(out) == before_out
    # The runs are not repeated, the packets not rewritten: the work directory is unchanged too.
    assert _tree(work) == before_work


def test_state_toml_is_valid_toml_with_provenance(regenerated: tuple[Path, Path]) -> None:
    _, out = regenerated
    data = tomllib.loads((out / "lru-cache-ttl" / "residual" / "drafter-1" / "state.toml").read_text())
    assert data["predecessor"] == "drafter" and data["track"] == "repo"
    assert data["provenance"]["source_run"] == "runs/lru-cache-ttl/drafter/1"
    assert data["provenance"]["stage_iii"]["reviewers"] == ["pipeline-test (accept-all)"] * 2
    assert data["prior_attempt"]["submitted"] is True

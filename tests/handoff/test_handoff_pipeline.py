"""Stage IV keeps what a predecessor said: `trajectory.jsonl` and `notes.md` beside each state,
from its Stage I run; the sample's are exactly what the pipeline writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO_ROOT

from recordfactory import make_run_record

from swe_residual.cli.main import main as cli_main
from swe_residual.trial.handoff.sources import predecessor_files
from swe_residual.trial.record_model import RunRecord

SAMPLE = REPO_ROOT / "datasets" / "sample"
PREDECESSORS = REPO_ROOT / "datasets" / "predecessors"


@pytest.mark.slow
def test_the_pipeline_writes_the_sample_states_trajectories_and_notes(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    predecessors = [f"--predecessor={name}=script:{PREDECESSORS / name}" for name in ("drafter", "skimmer")]
    assert cli_main(["residualize", "generate", str(SAMPLE), *predecessors, "--out", str(work), "--backend", "local",
                     "--task", "lru-cache-ttl"]) == 0
    assert cli_main(["residualize", "filter", str(work)]) == 0
    assert cli_main(["residualize", "review", str(work), "--accept-all-as", "handoff-test"]) == 0
    assert cli_main(["residualize", "build", str(work), "--out", str(out), "--repeats", "1"]) == 0
    for state in ("drafter-1", "skimmer-1"):
        built, shipped = out / "lru-cache-ttl" / "residual" / state, SAMPLE / "lru-cache-ttl" / "residual" / state
        for name in ("trajectory.jsonl", "notes.md"):
            assert (built / name).read_bytes() == (shipped / name).read_bytes(), (state, name)
    assert (out / "lru-cache-ttl" / "residual" / "skimmer-1" / "notes.md").read_text() == "ran lru-cache-ttl.sh\n"


def partial_record(fields: dict[str, str | None]) -> RunRecord:
    """A Stage I record whose trajectory and message are those of `fields`."""
    return make_run_record("t").model_copy(update={"trajectory": None, "message": None, **fields})


@pytest.mark.unit
def test_what_a_run_gives_a_state(tmp_path: Path) -> None:
    trajectory = {"schema": 1, "agent": "p", "final_message": "  All done.\n", "steps": [
        {"index": 0, "action": "command", "command": "pytest", "path": None, "output": "1 failed", "exit_code": 1,
         "duration_sec": 1.234, "prompt_tokens": 10, "completion_tokens": 2},
        {"index": 1, "action": "view", "command": None, "path": "a.py", "output": "x", "exit_code": None,
         "duration_sec": 0.0},
    ]}
    (tmp_path / "t.json").write_text(json.dumps(trajectory))
    files = predecessor_files(tmp_path, partial_record({"trajectory": "t.json", "message": "ignored: the trajectory has one"}))
    assert files["notes.md"] == b"All done.\n"
    assert [json.loads(line) for line in files["trajectory.jsonl"].decode().splitlines()] == [
        {"action": "command", "command": "pytest", "output": "1 failed", "exit_code": 1},
        {"action": "view", "path": "a.py", "output": "x"},
    ]
    # Without a trajectory file: the record's message alone; without either: nothing at all.
    assert predecessor_files(tmp_path, partial_record({"trajectory": "missing.json", "message": "Done"})) == {"notes.md": b"Done\n"}
    assert predecessor_files(tmp_path, partial_record({"trajectory": None, "message": None})) == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert predecessor_files(tmp_path, partial_record({"trajectory": "bad.json"})) == {}

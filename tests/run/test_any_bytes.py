"""Any bytes survive the record path (issue 33): a repository holding a git submodule of test
data that is not UTF-8, changed by the agent, through the real suite in subprocesses.

The final patch and the agent's output hold lone surrogates (undecodable bytes decoded with
`surrogateescape`); each record crosses xdist (`-n 2`: the worker sends it to the controller),
is written to `results.jsonl`, and is read by `swe-residual report` (summary files and
report.html) and written by `residualize generate`, none of which may fail or lose a byte:
the patch read back and encoded with `surrogateescape` is the bytes of `git diff --binary`
made by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bytestask import BYTES_AGENT, expected_patch, make_bytes_task
from dockerneeded import docker_test, engine_needed  # noqa: F401
from suitecheckout import make_checkout

from summaries import record_of

from swe_residual.report.paths import diff_href

AGENT = "cmd:./bytes-agent.sh"


@pytest.fixture
def checkout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    make_bytes_task(pytester.path / "data", "bytes")
    make_bytes_task(pytester.path / "data", "bytes2")
    agent = pytester.path / "bytes-agent.sh"
    agent.write_text(BYTES_AGENT)
    agent.chmod(0o755)
    return pytester


def _records(run_dir: Path) -> list[dict]:
    text = (run_dir / "results.jsonl").read_bytes().decode("ascii")  # every writer escapes what is not ASCII
    return [json.loads(line) for line in text.splitlines()]


def _check_run(checkout: pytest.Pytester, result: pytest.RunResult, tmp_path: Path, *,
               submodule_as_files: bool) -> None:
    output = result.stdout.str()
    assert result.ret == 0, output
    assert "INTERNALERROR" not in output
    run_dir = checkout.path / "out" / "r"
    records = _records(run_dir)
    assert sorted((r["agent"], r["task"]) for r in records) == [
        (AGENT, "bytes"), (AGENT, "bytes2"), ("noop", "bytes"), ("noop", "bytes2")]
    expected = expected_patch(checkout.path / "data" / "bytes", tmp_path, submodule_as_files=submodule_as_files)
    assert "\\351".encode() not in expected and b"\xe9" in expected  # raw bytes in names and contents
    for record in records:
        if record["agent"] == AGENT:
            assert record["outcome"] != "infra_error", record
            assert record["final_patch"].encode("utf-8", "surrogateescape") == expected
            trajectory = json.loads((run_dir / record["trajectory"]).read_text(encoding="ascii"))
            assert any("the agent says \udcff\udcfe caf\udce9" in (step.get("output") or "")
                       for step in trajectory["steps"])
    report = subprocess.run([sys.executable, "-m", "swe_residual.cli.main", "report", "out/r", "--out", "merged"],
                            cwd=checkout.path, capture_output=True, text=True, check=False)
    assert report.returncode == 0, report.stdout + report.stderr
    for name in ("summary.json", "summary.md", "report.html"):
        assert (checkout.path / "merged" / name).is_file(), name
    for page in (checkout.path / "merged").rglob("*.html"):
        page.read_text(encoding="utf-8")  # valid UTF-8: an undecodable byte is shown as \xNN
    for record in records:  # each diff file is its patch's own bytes
        if record["final_patch"]:
            diff = (checkout.path / "merged" / diff_href(record_of(record))).read_bytes()
            assert diff == record["final_patch"].encode("utf-8", "surrogateescape")
            assert record["agent"] != AGENT or diff == expected


@pytest.mark.slow
def test_non_utf8_submodule_data_crosses_xdist_and_every_reader_on_local(checkout: pytest.Pytester,
                                                                         tmp_path: Path) -> None:
    result = checkout.runpytest_subprocess(
        "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out", "--run-id=r",
        "-p", "no:cacheprovider", f"--agent={AGENT}", "--agent=noop", "-n", "2",
    )
    _check_run(checkout, result, tmp_path, submodule_as_files=False)
    generated = subprocess.run(
        [sys.executable, "-m", "swe_residual.cli.main", "residualize", "generate", "data",
         f"--predecessor=bytes={AGENT}", "--out", "work", "--backend", "local", "--task", "bytes"],
        cwd=checkout.path, capture_output=True, text=True, check=False, env={**os.environ},
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    (patch,) = (checkout.path / "work").rglob("changes.patch")
    assert patch.read_bytes() == expected_patch(checkout.path / "data" / "bytes", tmp_path, submodule_as_files=False)


@pytest.mark.slow
@docker_test
def test_non_utf8_submodule_data_crosses_xdist_on_docker(checkout: pytest.Pytester, tmp_path: Path) -> None:
    result = checkout.runpytest_subprocess(
        "residual_tests", "--dataset=data", "--backend=docker", "--results-dir=out", "--run-id=r",
        "-p", "no:cacheprovider", f"--agent={AGENT}", "--agent=noop", "-n", "2",
    )
    _check_run(checkout, result, tmp_path, submodule_as_files=True)

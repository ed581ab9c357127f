"""Nothing lost on a full results disk, and no harness memory for an agent's gigabytes (issue 23).

The full disk is real: a small tmpfs mounted for the test (root only; skipped elsewhere), which
takes part of a write when nearly full (a short `os.write`) and then refuses with ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from taskfactory import make_task

from conftest import REPO_ROOT, TESTS_DIR
from swe_residual.cli.main import main as cli_main
from swe_residual.trial.records import (
    append_record, append_record_or_fallback, fallback_path, infra_error_record, read_records,
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"needs to mount a tmpfs (root): {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(path: Path, leave: int) -> None:
    """Fill `path`'s file system but `leave` bytes."""
    free = os.statvfs(path.parent).f_bavail * os.statvfs(path.parent).f_frsize
    with path.open("wb") as handle:
        handle.write(b"\0" * (free - leave))


def test_a_short_write_is_continued_or_cut_off_never_counted_as_saved(small_disk: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The fallback file's directory ($TMPDIR, which tempfile reads once), on another file system.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    results = small_disk / "run-1" / "results.jsonl"
    append_record(results, infra_error_record("run-1", "noop", "t1", "repo", None, None, "small"))
    before = results.read_text()
    _fill(small_disk / "filler", leave=8192)
    # More than is left: the kernel takes part of it (a short write), then refuses the rest.
    big = infra_error_record("run-1", "noop", "t2", "repo", None, None, "x" * 50_000)
    with pytest.raises(OSError) as refused:
        append_record(results, big)
    assert refused.value.errno == errno.ENOSPC
    assert results.read_text() == before  # the partial line was cut off again
    where, reason = append_record_or_fallback(results, big)
    assert where == fallback_path(results) and where.is_relative_to(tmp_path)
    assert reason is not None and "No space left on device" in reason
    # Readers see both, and say where the second came from.
    loaded = read_records([results.parent])
    assert [r.task for r in loaded.records] == ["t1", "t2"]
    assert any("read from the fallback file" in problem for problem in loaded.problems)


@pytest.mark.slow
def test_a_full_results_disk_loses_no_record(small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = ["a-before", "b-fills-the-disk", "c-after", "d-after", "e-after", "f-after", "g-after"]
    for task_id in tasks:
        task = make_task(tmp_path / "data", task_id, states={})
        fault = "fill-results-disk" if task_id == "b-fills-the-disk" else "none"
        (task / "instruction.md").write_text(f"fault: {fault}\n" + (task / "instruction.md").read_text())
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # as the run's $TMPDIR below
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)]), "TMPDIR": str(tmp_path / "tmp"),
           "SWE_RESIDUAL_CACHE": str(tmp_path / "cache"), "FAULT_DIR": str(tmp_path), "FAULT_FILL": str(small_disk / "filler")}
    args = [sys.executable, "-m", "pytest", "--agent=module:scripted_agents:InjectsFaults", f"--dataset={tmp_path / 'data'}",
            "--backend=local", f"--results-dir={small_disk}", "-p", "no:cacheprovider"]
    done = subprocess.run([*args, "--run-id=full"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERNAL_ERROR, output[-3000:]  # never a clean exit
    run_dir = small_disk / "full"
    fallback = fallback_path(run_dir / "results.jsonl")
    assert fallback.is_relative_to(tmp_path / "tmp")
    assert "No space left on device" in output and str(fallback) in output
    # Every item has exactly one whole record, in results.jsonl or in the fallback file.
    saved = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    unsaved = [json.loads(line) for line in fallback.read_text().splitlines()]
    assert sorted(r["task"] for r in saved + unsaved) == tasks
    # An item whose artifacts could not be copied out still has its record: infra, with the reason.
    lost_files = [r for r in saved + unsaved if r["outcome"] == "infra_error"]
    assert lost_files and all("could not be saved" in r["error"] and "No space left on device" in r["error"]
                              for r in lost_files)
    assert unsaved, "the disk filled before the last items: their records went to the fallback file"
    assert f"{len(tasks)} items" in output  # the run's own summary covers all of them
    # `report` reads the fallback file too.
    assert cli_main(["report", str(run_dir), "--out", str(tmp_path / "report")]) == 0
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["infra"]["items"] == len(tasks)
    # Space again: --resume takes the fallback's records back, reruns only what was unresolved.
    (small_disk / "filler").unlink()
    unresolved = {r["task"] for r in saved + unsaved if r["outcome"] == "infra_error"}
    resumed = subprocess.run([*args, f"--resume={run_dir}"], cwd=REPO_ROOT, env=env, capture_output=True,
                             text=True, timeout=600, check=False)
    assert resumed.returncode in (0, pytest.ExitCode.NO_TESTS_COLLECTED), resumed.stdout[-3000:]
    assert f"{len(unresolved)} selected" in resumed.stdout or not unresolved
    after = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task"] for r in after) == tasks
    assert all(r["outcome"] == "success" for r in after)  # the unresolved ones were measured again
    assert not fallback.exists()

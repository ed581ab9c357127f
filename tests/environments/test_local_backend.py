"""The local backend: real git workspaces on the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from taskfactory import make_task

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.local import LocalBackend
from swe_residual.dataset.errors import DatasetError

SPEC = StartSpec(run_id="test", item_id="item", attempt=1)


@pytest.fixture
def entry(tmp_path: Path):
    make_task(tmp_path / "data", states={
        "drafter-1": {"calc.py": "def clamp(v, lo, hi):\n    return max(lo, v)\n", "notes/todo.txt": "check high side\n",
                      "README.md": None, "logo.bin": bytes(range(256))},
    })
    return load_dataset(tmp_path / "data").entries[0]


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)


def git(env, command: str) -> str:
    result = env.exec(command)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_clean_start_is_the_base_commit(entry, backend) -> None:
    env = backend.start(entry.task, None, SPEC)
    try:
        assert git(env, "git rev-parse HEAD").strip() == env.base_commit
        assert git(env, "git status --porcelain") == ""
        assert git(env, "git log --format=%s") == "Base commit\n"
    finally:
        env.close()
    assert not Path(env.root).exists()


def test_residual_state_is_uncommitted_work(entry, backend) -> None:
    env = backend.start(entry.task, entry.states[0], SPEC)
    try:
        assert git(env, "git rev-parse HEAD").strip() == env.base_commit  # history = clean history
        status = git(env, "git status --porcelain").splitlines()
        assert " M calc.py" in status and " D README.md" in status
        assert "?? logo.bin" in status and "?? notes/" in status
        assert env.read_file("logo.bin") == bytes(range(256))
        assert "max(lo, v)" in git(env, "git diff")
    finally:
        env.close()


def test_rollouts_of_one_state_are_independent(entry, backend) -> None:
    first = backend.start(entry.task, entry.states[0], SPEC)
    second = backend.start(entry.task, entry.states[0], SPEC)
    try:
        first.write_file("calc.py", b"changed by the first rollout\n")
        first.exec("rm -f logo.bin")
        assert b"max(lo, v)" in second.read_file("calc.py")
        assert second.read_file("logo.bin") == bytes(range(256))
    finally:
        first.close()
        second.close()


def test_base_repository_is_cached_by_content(entry, backend, tmp_path: Path) -> None:
    backend.prepare(entry.task)
    built = sorted(p.name for p in backend.cache_dir.iterdir() if p.is_dir())
    LocalBackend(cache_dir=tmp_path / "cache").prepare(entry.task)
    assert sorted(p.name for p in backend.cache_dir.iterdir() if p.is_dir()) == built
    (entry.task.repo_source / "calc.py").write_text("# changed\n")
    LocalBackend(cache_dir=tmp_path / "cache").prepare(entry.task)
    assert len([p for p in backend.cache_dir.iterdir() if p.is_dir()]) == len(built) + 1


def test_declared_base_commit_is_checked(tmp_path: Path, backend) -> None:
    task_dir = make_task(tmp_path / "data")
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("[metadata]\n", '[metadata]\nbase_commit_hash = "0000"\n'))
    task = load_dataset(tmp_path / "data").entries[0].task
    with pytest.raises(DatasetError) as info:
        backend.prepare(task)
    assert info.value.field == "metadata.base_commit_hash"


def test_patch_that_does_not_apply_is_a_dataset_error(entry, backend) -> None:
    state = entry.states[0]
    state.patch_path.write_text(state.patch_path.read_text().replace("return value", "return something_else"))
    with pytest.raises(DatasetError) as info:
        backend.start(entry.task, state, SPEC)
    assert str(state.patch_path) in str(info.value) and "does not apply" in str(info.value)


def test_exec_timeout_kills_the_whole_process_group(entry, backend) -> None:
    env = backend.start(entry.task, None, SPEC)
    try:
        started = time.monotonic()
        result = env.exec("sleep 300 & echo $! > child.pid; wait", timeout_sec=1)
        assert result.timed_out and result.exit_code is None
        assert time.monotonic() - started < 10
        child = int(env.read_file("child.pid"))
        # The group was sent SIGKILL; on a loaded machine the child may take a moment to go.
        deadline = time.monotonic() + 5
        while True:
            alive = subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True, text=True).stdout.strip()
            if alive in ("", "Z") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert alive in ("", "Z"), f"child {child} still running: {alive}"
    finally:
        env.close()


def test_file_access_and_cwd_stay_in_the_workspace(entry, backend) -> None:
    env = backend.start(entry.task, None, SPEC)
    try:
        with pytest.raises(PermissionError):
            env.read_file("../../../etc/hostname")
        with pytest.raises(PermissionError):
            env.write_file("/tmp/escaped.txt", b"x")
        with pytest.raises(PermissionError):
            env.exec("pwd", cwd="/")
    finally:
        env.close()


def test_hidden_tests_arrive_only_for_the_verifier(entry, backend) -> None:
    env = backend.start(entry.task, None, SPEC)
    try:
        found = env.exec("grep -rl 'def test_clamp_low' . \"$TMPDIR\" \"$HOME\" 2>/dev/null; true").stdout
        assert found.strip() == ""
        output = backend.run_verifier(env, entry.task)
        assert output.files["reward.txt"].strip() == b"0"
        assert b"test_clamp_low" in output.files["junit.xml"]
        # The verifier wrote nothing into the repository.
        assert git(env, "git status --porcelain") == ""
    finally:
        env.close()


def test_verifier_timeout_is_reported(tmp_path: Path, backend) -> None:
    make_task(tmp_path / "data", test_sh="#!/bin/bash\nsleep 300\n", verifier_timeout_sec=1)
    task = load_dataset(tmp_path / "data").entries[0].task
    env = backend.start(task, None, SPEC)
    try:
        started = time.monotonic()
        output = backend.run_verifier(env, task)
        assert output.timed_out and time.monotonic() - started < 10
    finally:
        env.close()


def test_environment_is_minimal(entry, backend) -> None:
    env = backend.start(entry.task, None, SPEC)
    try:
        seen = env.exec("env").stdout
        assert "SWE_RESIDUAL_CACHE" not in seen and f"HOME={os.environ.get('HOME')}\n" not in seen
    finally:
        env.close()


# Run in a fresh interpreter, so its peak memory is the harness's alone: an agent printing
# 300 MiB on stdout through the runner, then the peak resident size before and after.
_LOUD_AGENT = """
import json, resource, sys
from pathlib import Path
from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

root = Path(sys.argv[1])
entry = load_dataset(root / "data").entries[0]
backend = LocalBackend(cache_dir=root / "cache", work_dir=root)
options = RunOptions(run_id="loud", run_dir=root / "run", infra_retries=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
loud = "head -c 314572800 /dev/zero | tr '\\\\0' x"
record = record_json(run_item(entry.task, None, resolve_agent("cmd:" + loud), backend, options))
environment = backend.start(entry.task, None, StartSpec("loud", "direct", 1))
try:
    result = environment.exec(loud)
    output = result.stdout
finally:
    environment.close()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kib": before, "after_kib": after, "outcome": record["outcome"],
                  "output_len": len(output), "kept_tail": output.endswith("x" * 1000),
                  "dropped": result.dropped_bytes}))
"""


@pytest.mark.slow
def test_an_agent_printing_hundreds_of_mib_costs_the_harness_a_few(tmp_path: Path) -> None:
    from conftest import REPO_ROOT

    make_task(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-c", _LOUD_AGENT, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    printed_mib = 300
    grown_mib = (measured["after_kib"] - measured["before_kib"]) / 1024
    assert grown_mib < 40, measured  # the output's 2 MiB kept (and a copy or two), not its 300
    assert grown_mib < printed_mib / 5
    # What is kept is the first and the last MiB, with a marker for what lies between.
    assert 2 * 1024 * 1024 <= measured["output_len"] < 2 * 1024 * 1024 + 200 and measured["kept_tail"]
    assert measured["dropped"] == 300 * 1024 * 1024 - 2 * 1024 * 1024
    assert measured["outcome"] == "failure"  # the agent ran to its end and was graded

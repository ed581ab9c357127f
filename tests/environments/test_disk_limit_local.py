"""`[environment] storage_mb` on the local backend: the workspace is watched (issue 33, item 5).

A `cmd:` agent writing past an 8 MiB limit into its repository, its scratch directory
($TMPDIR) or its HOME is stopped at once: the item is the agent's failure, termination
`disk_limit`, with the figures; an agent under its limit is unaffected; the record says what
the local backend cannot bound (writes elsewhere on the host).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from taskfactory import SOLVED_SOURCE, make_task

from swe_residual.agents.builtin import CommandAgent
from swe_residual.dataset.task import load_task
from swe_residual.environments.disk_usage import MIB
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

pytestmark = [pytest.mark.slow]

LIMIT_MB = 8


def _setup(tmp_path: Path, limit: int | None = LIMIT_MB):
    path = make_task(tmp_path / "data", f"disk-{secrets.token_hex(3)}", states={}, environment_mode="shared")
    if limit is not None:
        (path / "task.toml").write_text((path / "task.toml").read_text() + f"storage_mb = {limit}\n")
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    return load_task(path), backend, RunOptions(run_id="disk", run_dir=tmp_path / "run", infra_retries=1)


@pytest.mark.parametrize("where", ["big.bin", "$TMPDIR/big.bin", "$HOME/big.bin"], ids=["repository", "scratch", "home"])
def test_writing_past_storage_mb_in_the_workspace_is_disk_limit(tmp_path: Path, where: str) -> None:
    task, backend, options = _setup(tmp_path)
    # A slow writer (1 MiB every 20 ms) that would write 400 MiB, then sleep.
    command = f"for i in $(seq 400); do head -c 1M /dev/zero >> {where}; sleep 0.02; done; sleep 30"
    record = record_json(run_item(task, None, lambda: CommandAgent(command), backend, options))
    assert (record["outcome"], record["termination"], len(record["attempts"])) == ("failure", "disk_limit", 1)
    assert f"limit {LIMIT_MB} MiB" in record["message"] and "wrote" in record["message"]
    assert record["durations"]["agent_sec"] < 20  # stopped at once, not after its sleep
    account = record["disk_limit"]
    assert account["exceeded"] and account["enforcement"] == "watched"
    assert LIMIT_MB * MIB <= account["peak_bytes"] < 40 * MIB
    assert "not bounded" in account["how"]  # what this backend cannot bound is said per item
    assert list(tmp_path.glob("swe-residual-*")) == []  # the workspace is gone


def test_an_agent_under_its_limit_is_unaffected_and_a_task_without_one_has_no_account(tmp_path: Path) -> None:
    task, backend, options = _setup(tmp_path)
    solve = f"head -c 2M /dev/zero > $HOME/cache.bin && cat > calc.py <<'EOF'\n{SOLVED_SOURCE}EOF\n"
    record = record_json(run_item(task, None, lambda: CommandAgent(solve), backend, options))
    assert (record["outcome"], record["termination"]) == ("success", "submitted")
    assert record["disk_limit"]["exceeded"] is False and record["disk_limit"]["peak_bytes"] >= 2 * MIB
    task, backend, options = _setup(tmp_path / "none", limit=None)
    record = record_json(run_item(task, None, lambda: CommandAgent(solve), backend, options))
    assert record["outcome"] == "success" and "disk_limit" not in record

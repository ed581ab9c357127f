"""The attackers of tests/verifier/test_attribution_docker.py that apply to the local backend (issue 23).

On the local backend an agent runs as the user running the suite: the host's git is also the
harness's, so only the repository is corrupted here; a fork bomb is not run on the host.
Before the attribution work the corrupted repository and the hanging hidden tests were
excluded (unresolved infra errors) and the user-site .pth in the agent's HOME passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from attackers import CORRUPT_GIT, HANG_ON_IMPORT, USER_SITE_PTH, attack_task
from scripted_agents import FIX_CLAMP

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item


def _run(tmp_path: Path, command: str, **task_options: Any) -> dict[str, Any]:
    attack_task(tmp_path / "data", "calc", **task_options)
    entry = load_dataset(tmp_path / "data").entries[0]
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    options = RunOptions(run_id=f"local-{tmp_path.name}", run_dir=tmp_path / "run", infra_retries=1)
    return record_json(run_item(entry.task, None, resolve_agent(f"cmd:{command}"), backend, options))


def test_honest_agent_succeeds(tmp_path: Path) -> None:
    record = _run(tmp_path, FIX_CLAMP)
    assert (record["outcome"], record["reward"]) == ("success", 1.0), record["attempts"]


def test_a_corrupted_repository_is_the_agents_failure(tmp_path: Path) -> None:
    # The patch is made by the harness's git with the cached base repository's objects.
    record = _run(tmp_path, f"{FIX_CLAMP} && {CORRUPT_GIT}")
    assert (record["outcome"], len(record["attempts"])) == ("success", 1), record["attempts"]
    assert "return max(low, min(value, high))" in record["final_patch"] and ".git/" not in record["final_patch"]
    failed = _run(tmp_path / "again", CORRUPT_GIT)
    assert (failed["outcome"], failed["reward"], len(failed["attempts"])) == ("failure", 0.0, 1), failed["attempts"]


@pytest.mark.slow
def test_hidden_tests_hanging_on_the_agents_code_are_its_failure(tmp_path: Path) -> None:
    record = _run(tmp_path, HANG_ON_IMPORT, verifier_timeout_sec=5.0)
    assert (record["outcome"], record["termination"], len(record["attempts"])) == (
        "failure", "verifier_failed_on_final_state", 1), record["attempts"]
    assert record["attempts"][0]["reverified"] is True and record["attempts"][0]["canary"]["valid"] is True


def test_a_user_site_pth_in_the_agents_home_changes_nothing(tmp_path: Path) -> None:
    record = _run(tmp_path, USER_SITE_PTH)
    assert (record["outcome"], record["reward"]) == ("failure", 0.0), record["attempts"]
    assert record["tests"]["test_calc.test_clamp_high"] == "failed"


def test_a_verifier_that_never_writes_a_reward_stays_infrastructure(tmp_path: Path) -> None:
    record = _run(tmp_path, FIX_CLAMP, test_sh="#!/bin/bash\necho no reward\n")
    assert record["outcome"] == "infra_error" and len(record["attempts"]) == 2
    assert all("clean state too" in attempt["error"] for attempt in record["attempts"])

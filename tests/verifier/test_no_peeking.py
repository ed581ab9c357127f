"""No peeking, no faking, on a real engine (issue 8, item 3).

The agent's container never holds the hidden tests, the reference solution or an earlier
verifier's outputs; an agent that writes reward files, hijacks the test runner or leaves a
process that kills the verifier gains nothing. The task verifies in the agent's own container
("shared" mode), the hardest case: what the agent left there is what the verifier meets.
Each test fails when its protection is removed (docs/faults.md says which protection).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from dockerneeded import containers_of, engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from scripted_agents import PEEK_MARKER_HALVES
from taskfactory import make_task

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import TaskEntry, load_dataset
from swe_residual.environments.docker import DockerBackend, remove_cached_images
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item
from swe_residual.environments.verifier.state_check import check_state_verdict

pytestmark = requires_docker

MARKER = "".join(PEEK_MARKER_HALVES)




@pytest.fixture(scope="module")
def peek(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TaskEntry, DockerBackend, RunOptions]]:
    root = tmp_path_factory.mktemp("peek")
    task_id = f"peek-{secrets.token_hex(3)}"  # unique: parallel runs never share its images
    task = make_task(root / "data", task_id, environment_mode="shared")
    # The marker sits in everything the agent must never see.
    hidden = task / "tests" / "test_calc.py"
    hidden.write_text(hidden.read_text() + f"# {MARKER}\n")
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\n# {MARKER}\ngit apply solution.patch\n")
    entry = load_dataset(root / "data").entries[0]
    run_id = f"peek-{secrets.token_hex(4)}"
    # validate_state: the state's snapshot is verified once before use, as in a real run, so
    # an earlier verifier run exists whose outputs must not reach the snapshot.
    backend = DockerBackend(run_id=run_id, cache_dir=root / "cache", validate_state=check_state_verdict,
                            progress=lambda _: None)
    options = RunOptions(run_id=run_id, run_dir=root / "run", infra_retries=1)
    try:
        yield entry, backend, options
    finally:
        backend.close()
        remove_cached_images(task_id)
        assert containers_of(run_id) == []


def _run(peek: tuple[TaskEntry, DockerBackend, RunOptions], agent: str, residual: bool = False) -> dict[str, Any]:
    entry, backend, options = peek
    record = record_json(run_item(entry.task, entry.states[0] if residual else None, resolve_agent(agent), backend, options))
    assert containers_of(options.run_id) == []  # every attempt's container is gone
    return record


@pytest.mark.slow
def test_a_whole_filesystem_search_finds_nothing_hidden(peek) -> None:
    # From the validated residual state (its snapshot was verified before) and after another
    # item's verification: no hidden test, solution, reward or verifier log anywhere.
    for _ in range(2):
        record = _run(peek, "module:scripted_agents:SearchesForHiddenFiles", residual=True)
        assert record["outcome"] == "failure" and record["reward"] == 0.0
        assert record["message"] is None, f"the agent found: {record['message']}"
        assert record["steps"] == 4


def test_reward_files_written_by_the_agent_gain_nothing(peek) -> None:
    record = _run(peek, "module:scripted_agents:WritesRewardFiles")
    assert (record["outcome"], record["reward"], len(record["attempts"])) == ("failure", 0.0, 1)


@pytest.mark.slow
def test_hijacking_the_test_runner_gains_nothing(peek) -> None:
    # conftest.py, pytest.ini, setup.cfg, tox.ini, pyproject.toml, sitecustomize.py,
    # usercustomize.py, a .pth file, pytest.py and _pytest/ in reach: the verdict is still the truth.
    record = _run(peek, "module:scripted_agents:EditsTestRunner")
    assert (record["outcome"], record["reward"], len(record["attempts"])) == ("failure", 0.0, 1)
    assert record["tests"]["test_calc.test_clamp_high"] == "failed"
    assert record["tests"]["test_calc.test_add"] == "passed"  # pytest really ran the tests
    assert "pytest.py" in record["final_patch"] and "_pytest/__init__.py" in record["final_patch"]


def test_a_process_left_to_kill_the_verifier_gains_nothing(peek) -> None:
    # A detached loop of `pkill -9 -f pytest`, left in the container the verifier shares: it is
    # killed before the hidden tests arrive, so one attempt and a true verdict (without that:
    # the verifier dies on every attempt, an unresolved infra error).
    record = _run(peek, "module:scripted_agents:KillsTheVerifier")
    assert (record["outcome"], record["reward"], len(record["attempts"])) == ("failure", 0.0, 1), record["attempts"]
    assert record["tests"]["test_calc.test_clamp_low"] == "failed"

"""Attackers cannot turn their failure into an exclusion or a pass, on the real engine (issue 23).

Each attacker is a `cmd:` agent (tests/attackers.py) run through `run_item` on a real
DockerBackend. Before the attribution work every one of them was excluded (an unresolved infra
error: broken git, processes at the pids limit, hanging hidden tests) or scored a success
(a user-site .pth in shared mode, a loop rewriting the hidden tests on the machine track). Now
each is a failure counted in the success rates, and an honest agent on the same task succeeds.
A verifier broken for every start (no reward ever) stays infrastructure: excluded, its canary
run once per task per run.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from attackers import (
    BREAK_GIT,
    FAKE_GIT,
    FORK_TO_THE_LIMIT,
    HANG_ON_IMPORT,
    MACHINE_FIX,
    REWRITE_SCRIPT,
    USER_SITE_PTH,
    as_service,
    attack_task,
    machine_task,
)
from dockerneeded import World, containers_of, docker_world, engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from scripted_agents import FIX_CLAMP

from summaries import parsed, record_of, records_of, summary_dict

from swe_residual.agents import resolve_agent
from swe_residual.environments.docker import DockerBackend
from swe_residual.metrics.headline import is_excluded, success
from swe_residual.report.terminal import render_terminal
from swe_residual.report.terminations import termination_table

pytestmark = requires_docker

# Low enough that filling it is quick and light on a shared machine; the attacker fills it all.
PIDS_LIMIT = 128




class CountingBackend:
    """The real backend, counting the starts of canaries (clean-state verifications)."""

    def __init__(self, inner: DockerBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.canaries = 0

    def start(self, task: Any, state: Any, spec: Any) -> Any:
        if spec.purpose == "canary":
            self.canaries += 1
        return self.inner.start(task, state, spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("attribution")
    tag = secrets.token_hex(3)  # task ids unique per run: parallel runs never share images
    ids = {name: f"{name}-{tag}" for name in ("shared", "separate", "broken", "machine")}
    attack_task(root / "data", ids["shared"])
    attack_task(root / "data", ids["separate"], environment_mode="separate")
    attack_task(root / "data", ids["broken"], test_sh="#!/bin/bash\necho 'this verifier never writes a reward'\n")
    machine_task(root / "data", ids["machine"])
    with docker_world(root, ids, wrap=CountingBackend, pids_limit=PIDS_LIMIT) as world:
        yield world


def _run(world: World, task: str, command: str) -> dict[str, Any]:
    record = world.records[(task, command)] = world.run(task, resolve_agent(f"cmd:{command}"))
    return record


def _record(world: World, task: str, command: str) -> dict[str, Any]:
    """The record of this attacker in this module's run (made now if no test made it yet)."""
    return world.records.get((task, command)) or _run(world, task, command)


def _attacker_failed(record: dict[str, Any]) -> None:
    """Counted as the agent's failure: not excluded, not a success, never retried."""
    assert record["outcome"] == "failure", (record["outcome"], record["error"], record["attempts"])
    assert len(record["attempts"]) == 1, record["attempts"]


@pytest.mark.slow
def test_an_honest_agent_succeeds_on_the_attacked_tasks(world) -> None:
    for task in ("shared", "separate"):
        record = _run(world, task, FIX_CLAMP)
        assert (record["outcome"], record["reward"], record["termination"]) == ("success", 1.0, "submitted"), record
        assert "return max(low, min(value, high))" in record["final_patch"]
    record = _run(world, "machine", MACHINE_FIX)
    assert (record["outcome"], record["reward"]) == ("success", 1.0), record
    assert record["verifier_notes"] == []


def test_breaking_git_is_the_agents_failure(world) -> None:
    # Before: capture_patch ran the container's (fake) git on the corrupted repository, an infra
    # error on every attempt, the item excluded. Now the harness's git captures the tree.
    record = _run(world, "shared", BREAK_GIT)
    _attacker_failed(record)
    assert (record["reward"], record["termination"]) == (0.0, "submitted")
    assert record["final_patch"] == ""  # calc.py untouched; .git is never part of the patch
    assert record["tests"]["test_calc.test_clamp_high"] == "failed"


def test_broken_git_does_not_stop_the_collect_steps_from_grading_real_work(world) -> None:
    # The agent fixes calc.py, then replaces git and puts a fake one first on the PATH: the
    # collect step (`git diff` in bash, DeepSWE style) runs the clean image's git, first on the
    # PATH the suite sets, so the separate verifier gets the real work.
    fake = f"{FAKE_GIT} > /usr/local/bin/git && chmod +x /usr/local/bin/git && cp /usr/local/bin/git /usr/bin/git"
    record = _run(world, "separate", f"{FIX_CLAMP} && {fake}")
    assert (record["outcome"], record["reward"]) == ("success", 1.0), (record["attempts"], record["collect"])
    assert [step["exit_code"] for step in record["collect"]] == [0]


@pytest.mark.slow
def test_processes_at_the_pids_limit_are_the_agents_failure(world) -> None:
    # The agent fills the pids limit and keeps it full. Before: no command could start in the
    # container (patch capture, verifier): excluded. Now the engine restarts the container
    # before the capture (every process dies at once) and the final state is graded.
    record = _run(world, "shared", FORK_TO_THE_LIMIT)
    _attacker_failed(record)
    assert record["reward"] == 0.0 and record["tests"]["test_calc.test_add"] == "passed"


@pytest.mark.slow
def test_hidden_tests_hanging_on_the_agents_code_are_its_failure(world) -> None:
    # Before: the verifier timed out on every attempt, an unresolved infra error. Now it times
    # out on the final state and again in a fresh instance of it, and works on the clean state.
    record = _run(world, "shared", HANG_ON_IMPORT)
    _attacker_failed(record)
    assert record["termination"] == "verifier_failed_on_final_state"
    assert record["submitted"] is True and record["reward"] is None and record["error"] is None
    (attempt,) = record["attempts"]
    assert attempt["reverified"] is True and attempt["canary"]["valid"] is True
    assert any("the agent's failure" in note and "timed out" in note for note in record["verifier_notes"])


def test_a_user_site_pth_in_home_changes_nothing(world) -> None:
    # Before: the .pth ended `python3 -m pytest` with status 0 before any test ran: reward 1.
    record = _run(world, "shared", USER_SITE_PTH)
    _attacker_failed(record)
    assert record["reward"] == 0.0 and record["tests"]["test_calc.test_clamp_low"] == "failed"


def test_a_user_site_pth_changes_nothing_on_the_machine_track_either(world) -> None:
    # The machine track keeps the container's HOME (it is part of the machine graded); the
    # user site is off for the verifier's Python all the same.
    record = _run(world, "machine", USER_SITE_PTH)
    _attacker_failed(record)
    assert record["reward"] == 0.0


def test_a_loop_rewriting_the_hidden_tests_on_the_machine_track_is_caught(world) -> None:
    # A loop under a listening process is kept running as a service on the machine track (any
    # other leftover is frozen, issue 48), so it runs on while the verifier does; before, it
    # rewrote /tests/test_done.py into a pass: reward 1.
    record = _run(world, "machine", as_service(REWRITE_SCRIPT, 9912))
    _attacker_failed(record)
    assert record["reward"] == 0.0
    assert any(note.startswith("tampering:") and "test_done.py" in note for note in record["verifier_notes"])


@pytest.mark.slow
def test_a_verifier_broken_for_every_start_stays_infrastructure(world) -> None:
    before = world.backend.canaries
    for _ in range(2):
        record = _run(world, "broken", FIX_CLAMP)
        assert record["outcome"] == "infra_error" and record["reward"] is None
        assert len(record["attempts"]) == 2
        for attempt in record["attempts"]:
            assert attempt["outcome"] == "infra_error" and attempt["reverified"] is True
            assert attempt["canary"]["valid"] is False
            assert "clean state too" in attempt["error"] and "no reward file" in attempt["error"]
    # Four attempts, one canary: kept for the run.
    assert world.backend.canaries - before == 1


@pytest.mark.slow
def test_summary_counts_the_attackers_and_lists_them(world) -> None:
    records = [_record(world, "shared", HANG_ON_IMPORT), _record(world, "broken", FIX_CLAMP),
               _record(world, "shared", FIX_CLAMP)]
    summary = summary_dict(records)
    listed = {(entry["task"], entry["state"]) for entry in summary["infra"]["verifier_failed"]}
    assert (world.ids["shared"], None) in listed
    excluded = {entry["task"] for entry in summary["infra"]["excluded"]}
    assert excluded == {world.ids["broken"]}  # only the broken verifier is left out
    # The hanging attacker enters the success rates as a failure: not left out of them.
    assert not is_excluded(record_of(records[0])) and success(record_of(records[0])) == 0
    lines = render_terminal(parsed(summary))
    assert any(line.startswith("verifier failed on the agent's final state") for line in lines)
    header = termination_table(records_of(records))[1]
    assert "verifier failed" in header

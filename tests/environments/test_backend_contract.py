"""The contract every backend row passes (issue 49): a new backend's author adds one row to
environments/backends.py and runs this module.

Parametrized over the rows of the table (`BACKENDS`), each made by its own maker from a
`BackendRequest` as a run makes it, on the real engine for the rows that use one. What a row
declares decides which cases apply: the machine-track cases run for the rows whose
capabilities list the machine track (and restore it by replay). Per row, one backend and one
set of tasks serve every case (module-scoped: images built once per row); the cases:

- each kind of start: clean (the base commit), a repo-track state applied, a machine-track state
  restored by replay with a live process (a ticker the keystrokes left in the terminal's
  foreground), starts independent of each other;
- an agent under a time limit; the oracle and a no-op agent, verified in shared and in separate
  mode (collect steps, artifacts); only committed work graded on the DeepSWE-shaped sample task,
  whose states are measured as submitted (committed) while they start uncommitted;
- faults attributed: the agent's own crash is its failure, a verifier broken for every start is
  infrastructure (excluded, its canary invalid);
- clean-up: after `close`, no container of the run and no temporary file of the backend is left,
  even for an environment its caller never closed.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from dockerneeded import ENGINE_ANSWERS, IN_CI, engine_needed  # noqa: F401 - engine_needed is autouse
from taskfactory import BASE_SOURCE, RESIDUAL_SOURCE, keep_tmux_layer, make_machine_task, make_task

from swe_residual.agents import resolve_agent
from swe_residual.agents.base import SUBMITTED, AgentResult, AgentSession
from swe_residual.dataset.errors import ConfigError, DatasetError
from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.states.state import ResidualState, load_state
from swe_residual.dataset.task import Task, load_task
from swe_residual.dataset.values import Track
from swe_residual.environments.backends import BACKENDS, BackendKind, BackendRequest
from swe_residual.environments.base import Backend, StartSpec
from swe_residual.environments.capabilities import REPLAY
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

REPO_ROOT = Path(__file__).resolve().parents[2]
SPANFMT = REPO_ROOT / "datasets" / "sample" / "spanfmt-days-weeks"
# The environment a prefixed row (`harbor:<env>`) is tested with: the one this machine runs.
PREFIXED_ENVIRONMENT = "docker"
# A ticker in the terminal's foreground: a live process no snapshot of the files keeps.
# Every 0.5 s: each tick starts date, mv and sleep in the container, a CPU cost for as long as it lives.
TICKER = "while true; do date +%s%N > /app/tick.new; mv /app/tick.new /app/tick; sleep 0.5; done\n"
MACHINE_STATE = [
    {"command": "mkdir -p /srv && echo kept > /srv/kept"},
    {"write": "/srv/note.txt", "content": "written by the predecessor's tool\n"},  # a file tool: stdin
    {"keystrokes": "cd /app && echo typed > /app/typed.txt\n", "duration_sec": 0.3},
    {"keystrokes": TICKER, "duration_sec": 0.5},
]


def contract_spec(kind: BackendKind) -> str:
    """The `--backend` value a row is tested with: its form, or for a prefixed form its prefix
    and the environment this machine runs."""
    return kind.form if kind.prefix is None else kind.prefix + PREFIXED_ENVIRONMENT


def _param(kind: BackendKind) -> Any:
    marks: list[Any] = [pytest.mark.slow]
    if kind.capabilities.isolated:  # its starts are containers: the engine's tier
        marks.append(pytest.mark.docker)
        if not IN_CI:
            marks.append(pytest.mark.skipif(not ENGINE_ANSWERS, reason="no Docker engine answers"))
    if kind.prefix is not None or not kind.capabilities.isolated:
        why = kind.answers()
        if why is not None and not (IN_CI and kind.capabilities.isolated):
            marks.append(pytest.mark.skip(reason=f"{contract_spec(kind)} cannot run here: {why}"))
    return pytest.param(kind, id=contract_spec(kind), marks=marks)


ROWS = [_param(kind) for kind in BACKENDS]


@dataclass
class Contract:
    """One row's backend, the tasks it runs and the options its items run with."""

    kind: BackendKind
    backend: Backend
    tasks: dict[str, Task]
    options: RunOptions
    temp_dir: Path  # the backend's temporary directory: empty again after close
    closed: bool = False

    def spec(self, item: str, purpose: str = "agent") -> StartSpec:
        return StartSpec(self.options.run_id, item, 1, purpose=purpose)

    def state(self, task: str) -> ResidualState:
        found = self.tasks[task]
        return load_state(found, next((found.path / "residual").iterdir()))

    def run(self, task: str, agent: Any, state: ResidualState | None = None, **options: Any) -> dict[str, Any]:
        return record_json(run_item(self.tasks[task], state, agent, self.backend, replace(self.options, **options)))


def _write_tasks(root: Path, tag: str) -> dict[str, Task]:
    ids = {name: f"contract-{name}-{tag}" for name in ("shared", "separate", "broken", "machine")}
    make_task(root, ids["shared"], environment_mode="shared")
    make_task(root, ids["separate"], environment_mode="separate")
    make_task(root, ids["broken"], environment_mode="shared", states={},
              test_sh="#!/bin/bash\necho 'this verifier never writes a reward'\n")
    make_machine_task(root, ids["machine"], MACHINE_STATE, tmux=True)
    return {name: load_task(root / task_id) for name, task_id in ids.items()}


@pytest.fixture(scope="module", params=ROWS)
def contract(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Contract]:
    kind: BackendKind = request.param
    spec = contract_spec(kind)
    root = tmp_path_factory.mktemp(spec.replace(":", "-"))
    tag = secrets.token_hex(3)  # task ids unique per session: two sessions never share images
    run_id = f"contract-{spec.replace(':', '-')}-{tag}"
    temp_dir = root / "tmp"
    temp_dir.mkdir()
    if kind.capabilities.isolated:
        from swe_residual.environments.docker.base_image import ensure_base_image

        ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
        keep_tmux_layer()  # the machine task's tmux layer from the engine's cache: nothing installed offline
    tasks = _write_tasks(root / "data", tag)
    with pytest.MonkeyPatch.context() as patch:
        # The backend's temporary files (and its helper processes') land here. Its cache is the
        # run's own (content-addressed, shared as in a run: Harbor's venv is there too).
        patch.setenv("TMPDIR", str(temp_dir))
        patch.setattr(tempfile, "tempdir", str(temp_dir))
        backend = kind.make(BackendRequest(spec=spec, run_id=run_id, progress=lambda _: None))
        options = RunOptions(run_id=run_id, run_dir=root / "run", infra_retries=0)
        made = Contract(kind, backend, tasks, options, temp_dir)
        try:
            yield made
        finally:
            if not made.closed:
                backend.close()
            if kind.capabilities.isolated:
                _remove_images_of(tasks.values())


def _remove_images_of(tasks: Any) -> None:
    """The images built for the tasks of one row: docker's by their repositories, any other
    backend's (Harbor's `swe-residual-harbor:<task>-...`) by a tag naming the task (ids are unique
    per session)."""
    from swe_residual.environments.docker import remove_cached_images
    from swe_residual.environments.docker.engine import default_client, remove_images

    ids = [task.id for task in tasks]
    for task_id in ids:
        remove_cached_images(task_id)
    client = default_client()
    tags = [tag for image in client.api.images() for tag in image.get("RepoTags") or []]
    remove_images(client, [tag for tag in tags if any(task_id in tag for task_id in ids)])


# -- a machine-track start (the clean and repo-state starts: with the clean-up, last) -----------------
class ObservesTheMachine:
    """Reads what the restored machine holds while it runs (the ticker twice), then solves."""

    name = "observes-the-machine"
    seen: dict[str, str] = {}

    def run(self, session: AgentSession) -> AgentResult:
        seen = type(self).seen
        seen["kept"] = session.exec("cat /srv/kept").stdout
        seen["note"] = session.exec("cat /srv/note.txt").stdout
        seen["typed"] = session.exec("cat /app/typed.txt").stdout
        seen["tick"] = session.exec("cat /app/tick").stdout
        # Polled up to 20 s, not read once after a fixed wait: under a loaded CI machine the
        # container's loop can be starved past any short wait; a stopped loop never changes it.
        deadline = time.monotonic() + 20
        seen["tick_later"] = seen["tick"]
        while seen["tick_later"] == seen["tick"] and time.monotonic() < deadline:
            time.sleep(0.3)
            seen["tick_later"] = session.exec("cat /app/tick").stdout
        session.exec("touch /app/solved")
        return AgentResult(SUBMITTED)


def test_a_machine_state_is_replayed_with_its_live_process(contract: Contract) -> None:
    task = contract.tasks["machine"]
    declared = contract.kind.capabilities
    if not declared.runs(Track.MACHINE):
        # Declared: the backend refuses the task before any agent runs, saying why.
        with pytest.raises((DatasetError, ConfigError), match="machine-track"):
            contract.backend.start(task, contract.state("machine"), contract.spec("machine/refused"))
        return
    assert REPLAY in declared.restore, "a backend running the machine track restores live processes by replay"
    clean = contract.backend.start(task, None, contract.spec("machine/clean"))
    try:
        assert clean.exec("test -e /srv/kept || test -e /app/tick").exit_code == 1
    finally:
        clean.close()
    ObservesTheMachine.seen = {}
    record = contract.run("machine", ObservesTheMachine, contract.state("machine"))
    seen = ObservesTheMachine.seen
    # Commands, a file tool and keystrokes replayed; the ticker left in the terminal's
    # foreground still ticks while the agent works: the state was replayed, not snapshotted.
    assert seen["kept"] == "kept\n" and seen["note"] == "written by the predecessor's tool\n", seen
    assert seen["typed"] == "typed\n", seen
    assert seen["tick"].strip() and seen["tick_later"] != seen["tick"], seen
    assert (record["outcome"], record["reward"]) == ("success", 1.0), record["attempts"]
    assert record["fidelity"] == REPLAY


# -- agents, time limits, verification -------------------------------------------------------------
def test_an_agent_is_stopped_at_its_time_limit(contract: Contract) -> None:
    # The task gives the agent 60 s; the multiplier makes it 3 s, and the agent's command sleeps 120 s.
    record = contract.run("shared", resolve_agent("cmd:sleep 120"), timeout_multiplier=0.05)
    assert (record["outcome"], record["termination"]) == ("failure", "time_limit"), record["attempts"]
    # Stopped at its limit (with the backend's grace to stop it), not when its command ended.
    assert 3 <= record["attempts"][0]["durations"]["agent_sec"] < 60, record["attempts"][0]["durations"]


@pytest.mark.parametrize("mode", ["shared", "separate"])
def test_collect_and_verify_in_each_mode(contract: Contract, mode: str) -> None:
    # The oracle from the Residual State (its patch applied first), a no-op agent from the clean start.
    oracle = contract.run(mode, resolve_agent("oracle"), contract.state(mode))
    assert (oracle["outcome"], oracle["reward"]) == ("success", 1.0), oracle["attempts"]
    noop = contract.run(mode, resolve_agent("noop"))
    assert (noop["outcome"], noop["reward"]) == ("failure", 0.0), noop["attempts"]
    assert noop["tests"]["test_calc.test_clamp_high"] == "failed" and noop["tests"]["test_calc.test_add"] == "passed"
    if mode == "separate":
        # The collect step's artifact went to the separate verifier and was kept beside the record.
        assert [path.rsplit("/", 1)[-1] for path in oracle["artifacts"]] == ["workspace.patch"]
        assert b"calc.py" in (contract.options.run_dir / oracle["artifacts"][0]).read_bytes()


class FixesWithoutCommitting:
    """Discards the inherited work and applies the reference change, but never commits."""

    name = "fixes-without-committing"

    def run(self, session: AgentSession) -> AgentResult:
        session.exec("git reset -q --hard HEAD && git clean -fdxq")
        patch = (SPANFMT / "solution" / "solution.patch").read_bytes()
        session.environment.write_file(f"{session.environment.scratch_dir}/fix.patch", patch)
        applied = session.exec(f"git apply {session.environment.scratch_dir}/fix.patch")
        assert applied.exit_code == 0, applied.output
        return AgentResult(SUBMITTED)


class CommitsTheInheritedWork:
    """Takes the predecessor's work as done and commits it as it is."""

    name = "commits-inherited"

    def run(self, session: AgentSession) -> AgentResult:
        done = session.exec("git add -A && git -c user.name=a -c user.email=a@localhost commit -q --allow-empty -m done")
        assert done.exit_code == 0, done.output
        return AgentResult(SUBMITTED)


def test_only_committed_work_is_graded_on_the_deepswe_shaped_task(contract: Contract) -> None:
    """The sample task graded from the collected model.patch (committed work only): each agent
    from one of the three starts, so every start and every agent runs once."""
    entry = load_dataset(SPANFMT).entries[0]
    assert len(entry.states) == 2
    runs = ((resolve_agent("oracle"), entry.states[0], "success"), (FixesWithoutCommitting, None, "failure"),
            (CommitsTheInheritedWork, entry.states[1], "failure"))
    for factory, state, expected in runs:
        agent = factory()
        record = record_json(run_item(entry.task, state, factory, contract.backend, contract.options))
        assert record["outcome"] == expected, (agent.name, record["attempts"])
        # Graded from the collected model.patch, kept beside the record; the reward dict keeps
        # the grader's f2p/p2p counts.
        assert record["artifacts"] == [
            f"artifacts/{agent.name}/{entry.task.id}/{state.id if state else 'clean'}/logs/artifacts/model.patch"]
        assert {"reward", "f2p_total", "f2p_passed", "p2p_total", "p2p_passed"} <= set(record["rewards"])
        if state is not None:
            # The state measured as submitted (its work committed, on an instance of its own), not as
            # the start has it (uncommitted: the base's statuses): what its state.toml records.
            assert record["initial_tests"] == state.initial_tests, (agent.name, record["initial_tests"])
        if agent.name == "fixes-without-committing":
            # The metrics still see the whole working tree: the fix is in final_patch.
            assert (contract.options.run_dir / record["artifacts"][0]).read_bytes() == b""
            assert "spanfmt/" in record["final_patch"]


# -- faults ---------------------------------------------------------------------------------------
class Crashes:
    """An agent with a bug of its own: it raises after one command."""

    name = "crashes"

    def run(self, session: AgentSession) -> AgentResult:
        session.exec("true")
        raise RuntimeError("the agent's own bug")


def test_faults_are_attributed_to_the_agent_or_to_the_infrastructure(contract: Contract) -> None:
    crashed = contract.run("shared", Crashes)
    assert (crashed["outcome"], crashed["termination"]) == ("failure", "agent_error"), crashed["attempts"]
    assert len(crashed["attempts"]) == 1
    broken = contract.run("broken", resolve_agent("oracle"))
    # No reward from any start, the clean one included: the verifier, not the agent, failed.
    assert (broken["outcome"], broken["reward"]) == ("infra_error", None), broken["attempts"]
    attempt = broken["attempts"][0]
    assert attempt["canary"]["valid"] is False and "no reward file" in attempt["error"]


# -- starts and clean-up (last: it closes the row's backend) ------------------------------------------
def test_starts_are_independent_instances_and_close_leaves_no_container_and_no_temporary_file(
        contract: Contract) -> None:
    """A clean and a repo-state start, side by side; then the clean one is left open (an item
    interrupted: its caller never closes it) and the backend's close ends it."""
    task = contract.tasks["shared"]
    clean = contract.backend.start(task, None, contract.spec("starts/clean"))
    residual = contract.backend.start(task, contract.state("shared"), contract.spec("starts/residual"))
    try:
        # The clean start is the base commit, as every backend makes it.
        assert clean.base_commit and clean.exec("git rev-parse HEAD").stdout.strip() == clean.base_commit
        assert clean.read_file("calc.py").decode() == BASE_SOURCE
        assert clean.exec("git status --porcelain").stdout == ""
        # The repo state is applied on the same base commit, uncommitted.
        assert residual.base_commit == clean.base_commit
        assert residual.read_file("calc.py").decode() == RESIDUAL_SOURCE
        assert residual.read_file("debug.log") == b"ran clamp\n"
        assert residual.exec("git rev-parse HEAD").stdout.strip() == clean.base_commit
        # Independent: what one start writes, the other never sees.
        clean.write_file("only-here.txt", b"clean\n")
        assert clean.exec("cat only-here.txt").stdout == "clean\n"
        assert residual.exec("test -e only-here.txt").exit_code == 1
        timed = clean.exec("sleep 5", timeout_sec=1)
        assert timed.timed_out and timed.exit_code is None
    finally:
        residual.close()
    # The clean start, never closed by its caller, still answers; the backend's close ends it.
    assert clean.exec("echo alive").stdout == "alive\n"
    contract.backend.close()
    contract.closed = True
    if contract.kind.capabilities.isolated:
        from dockerneeded import containers_of

        assert containers_of(contract.options.run_id) == []
    assert sorted(os.listdir(contract.temp_dir)) == []

"""Keystroke interactions (`{"keystrokes", "duration_sec"}` in commands.jsonl) replayed through a
tmux session on the real engine, as Terminus-2 typed them; and a state whose replay fails is
replayed once per run, not once per item."""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse

from taskfactory import assert_replayed_as_recorded, keep_tmux_layer, make_machine_task

from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import DockerBackend, remove_cached_images
from swe_residual.dataset.errors import DatasetError
from swe_residual.environments.docker.base_image import ensure_base_image
from swe_residual.dataset.states.state import load_state
from swe_residual.dataset.task import Task, load_task

pytestmark = requires_docker

# Every 0.5 s: each tick starts date, mv and sleep in the container, a CPU cost for as long as it lives.
TICKER = "while true; do date +%s%N > /app/tick.new; mv /app/tick.new /app/tick; sleep 0.5; done\n"
# What a Terminus-2 run typed: an unclosed quote that swallows the next line, a command
# interrupted with Ctrl-C, and a server left running in the foreground.
KEYSTROKES = [
    {"keystrokes": "echo 'one\n", "duration_sec": 0.3},
    {"keystrokes": "touch /app/swallowed\n", "duration_sec": 0.3},
    {"keystrokes": "' > /app/quoted.txt\n", "duration_sec": 0.3},
    {"keystrokes": "sleep 300\n", "duration_sec": 0.5},
    {"keystrokes": "C-c", "duration_sec": 0.3},
    {"keystrokes": "echo $? > /app/interrupted\n", "duration_sec": 0.3},
    {"keystrokes": TICKER, "duration_sec": 0.5},
]


def _add_state(task: Path, name: str, commands: list[dict]) -> None:
    """One more state of `task` (made by make_machine_task with its `terminus-1`): its commands."""
    state = task / "residual" / name
    state.mkdir(parents=True)
    (state / "state.toml").write_text((task / "residual" / "terminus-1" / "state.toml").read_text())
    (state / "commands.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in commands))


@pytest.fixture(scope="module")
def tmux_task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Task]:
    """One task image with tmux for the module's keystroke states (`terminus-1`: KEYSTROKES,
    `waiting`: WAITING); each test starts its own state with a backend of its own."""
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    keep_tmux_layer()
    task_id = f"keys-{secrets.token_hex(3)}"
    root = make_machine_task(tmp_path_factory.mktemp("keys"), task_id, KEYSTROKES, tmux=True)
    _add_state(root, "waiting", WAITING)
    yield load_task(root)
    remove_cached_images(task_id)


@pytest.fixture(scope="module")
def plain_task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Task]:
    """One task image without tmux, one state per failing replay (FAILING_REPLAYS' cases)."""
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    task_id = f"keys-{secrets.token_hex(3)}"
    root = make_machine_task(tmp_path_factory.mktemp("keys-plain"), task_id, [{"command": "true"}], tmux=False)
    for case, (commands, _, _) in FAILING_REPLAYS.items():
        _add_state(root, case, commands)
    yield load_task(root)
    remove_cached_images(task_id)


@pytest.mark.slow
def test_keystrokes_replay_through_tmux_with_a_foreground_server_left_running(tmp_path: Path, tmux_task: Task) -> None:
    task, task_id = tmux_task, tmux_task.id
    state = load_state(task, task.path / "residual" / "terminus-1")
    with DockerBackend(cache_dir=tmp_path / "cache", progress=lambda _: None, run_id="keys") as backend:
        environment = backend.start(task, state, StartSpec("keys", f"{task_id}/terminus-1", 1))
        try:
            # The tmux session and the ticker in its foreground are live: instances are replayed.
            assert environment.fidelity == "replay"
            assert_replayed_as_recorded(environment)  # in the agent's instance
            # ... in the pane of the replayed session, which the agent's instance keeps.
            assert environment.exec("tmux has-session -t swe-residual").exit_code == 0
        finally:
            environment.close()


def test_keystrokes_were_refused_before(tmp_path: Path) -> None:
    """The keystroke form is new: a `command` entry still loads, a line with neither does not."""
    task = load_task(make_machine_task(tmp_path, "keys-format", [{"command": "true"}], tmux=False))
    load_state(task, task.path / "residual" / "terminus-1")
    (task.path / "residual" / "terminus-1" / "commands.jsonl").write_text('{"keystrokes": "ls\\n", "command": "ls"}\n')
    with pytest.raises(DatasetError, match="exactly one of"):
        load_state(task, task.path / "residual" / "terminus-1")
    commands = task.path / "residual" / "terminus-1" / "commands.jsonl"
    commands.write_text('{"keystrokes": "ls\\n", "duration_sec": -1}\n')
    with pytest.raises(DatasetError, match="duration_sec"):
        load_state(task, task.path / "residual" / "terminus-1")


FAILING_REPLAYS = {
    # keystrokes on an image without tmux, and no network to install it: one clear error
    "no-tmux": ([KEYSTROKES[0]], "needs tmux in the container", "add tmux to the task's image"),
    # a command past its deadline (not recorded as timed out)
    "deadline": ([{"command": "sleep 30", "timeout_sec": 0.5}], "did not finish within 0.5s", "while replaying"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(FAILING_REPLAYS))
def test_a_failed_replay_is_attempted_once_per_run(tmp_path: Path, plain_task: Task, case: str) -> None:
    """A state whose replay fails is replayed once for the run, however many items (and
    workers of the run) start it; the error is the same for each."""
    _, expected, also = FAILING_REPLAYS[case]
    task, task_id = plain_task, f"{plain_task.id}/{case}"
    state = load_state(task, task.path / "residual" / case)
    lines: list[str] = []
    cache = tmp_path / "cache"
    with DockerBackend(cache_dir=cache, progress=lines.append, run_id="once") as backend:
        errors = []
        for attempt in (1, 2, 3):
            with pytest.raises(DatasetError) as caught:
                backend.start(task, state, StartSpec("once", task_id, attempt))
            errors.append(str(caught.value))
    assert expected in errors[0] and also in errors[0]
    assert errors == [errors[0]] * 3
    assert sum(line.startswith("snapshotting state") for line in lines) == 1
    # Another backend of the same run (an xdist worker of it) reads the failure, never replays.
    again: list[str] = []
    with DockerBackend(cache_dir=cache, progress=again.append, run_id="once", sweep_at_start=False) as other:
        with pytest.raises(DatasetError, match=expected):
            other.start(task, state, StartSpec("once", task_id, 4))
    assert not any(line.startswith("snapshotting state") for line in again)
    # A different run tries again.
    fresh: list[str] = []
    with DockerBackend(cache_dir=cache, progress=fresh.append, run_id="twice", sweep_at_start=False) as third:
        with pytest.raises(DatasetError, match=expected):
            third.start(task, state, StartSpec("twice", task_id, 1))
    assert sum(line.startswith("snapshotting state") for line in fresh) == 1


# A Terminal-Bench transcript records no waits. Its first command reads the terminal for 3 s, as
# an `apt install`'s debconf does: keys sent while it runs would be its input, not the shell's.
# Then a foreground loop that never returns (recorded: interrupted after 2 s) and a program
# reading the terminal that never returns (recorded: the next line was typed into it).
WAITING = [
    {"keystrokes": "timeout 3 cat > /app/swallowed; echo done > /app/first\n"},
    {"keystrokes": "touch /app/second\n"},
    {"keystrokes": "while true; do date +%s%N; sleep 0.2; done\n", "duration_sec": 2.0},
    {"keystrokes": "C-c", "duration_sec": 0.3},
    {"keystrokes": "echo $? > /app/interrupted\n"},
    {"keystrokes": "cat > /app/typed\n", "duration_sec": 1.0},
    {"keystrokes": "into the running cat\n", "duration_sec": 0.5},
]


@pytest.mark.slow
def test_replay_waits_for_each_command_and_is_bounded_for_one_that_never_returns(tmp_path: Path,
                                                                                   tmux_task: Task) -> None:
    task = tmux_task
    state = load_state(task, task.path / "residual" / "waiting")
    with DockerBackend(cache_dir=tmp_path / "cache", progress=lambda _: None, run_id="keys") as backend:
        began = time.monotonic()
        environment = backend.start(task, state, StartSpec("keys", f"{task.id}/waiting", 1))
        started_in = time.monotonic() - began
        try:
            # The second command reached the shell after the first finished, not the blocked `cat`.
            assert environment.read_file("first").strip() == b"done"
            assert environment.exec("test -e /app/second").exit_code == 0
            assert environment.read_file("swallowed") == b""
            # The loop never returned: after its recorded 2 s, C-c went into it, as recorded.
            assert environment.read_file("interrupted").strip() == b"130"
            # The last line went where the recording sent it: into the `cat` still running.
            assert environment.read_file("typed") == b"into the running cat\n"
            assert environment.exec("pgrep -x cat").exit_code == 0
        finally:
            environment.close()
    # Bounded: nothing waited for the 180 s default or the 15 s quiescence.
    assert started_in < 120, started_in

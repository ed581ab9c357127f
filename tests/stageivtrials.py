"""One Stage IV run on the real engine shared by the tests that read it: imported keystrokes of
Terminal-Bench 1 (tests/residualize/test_stage_iv_fidelity.py), of a Terminus-2 trial
(tests/harbor/test_terminus_import.py) and an OpenClaw agent's tool calls
(tests/harbor/test_tool_call_import.py), all of one tmux machine task, so that its image is built
once and the three imports are validated in one session of the engine instead of three.

The Terminal-Bench trials are imported into one work directory, the Harbor trials (Terminus-2 and
OpenClaw: one `import harbor-jobs`) into another; each is filtered, reviewed and built with
`--repeats 1` (stability has its own tests). The Terminus-2 state is then started as the suite
starts it and what its replay left is checked (its result kept for the test that asks).

Under xdist the first worker to need it makes it under a file lock in the directory the workers
share and the others read what it wrote (its failure too), as tests/samplerun.py does; in one
process the three modules' fixtures read it from the session's base directory the same way.
Nothing here imports the engine's client at module level: the modules' `unit` tests import the
trials' data from here.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest
from harborjobs import terminus_atif, tool_call_atif, write_episodes, write_trial

# --------------------------------------------------------------------------- Terminal-Bench 1 keys

TB_KEYS = ["sleep 2; echo slept > /app/slept\n", "echo 'open\n", "touch /app/never\n", "' > /app/quoted.txt\n",
           "python3 -m http.server 8000\n"]
TB_REPRODUCED = ("root@0123456789ab:/app# sleep 2; echo slept > /app/slept; tmux wait -S done\n"
                 "root@0123456789ab:/app# echo 'open\n"
                 "> touch /app/never\n"
                 "> ' > /app/quoted.txt\n"
                 "root@0123456789ab:/app# python3 -m http.server 8000\n"
                 "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n\n\n")
# Another trial (a shorter sleep: not a duplicate final state) whose recorded pane says the
# server never started.
TB_DRIFTED_KEYS = [TB_KEYS[0].replace("sleep 2", "sleep 1"), *TB_KEYS[1:]]
TB_DRIFTED = TB_REPRODUCED.replace("sleep 2", "sleep 1").replace(
    "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n", "root@0123456789ab:/app#\n")


def tb_trial(runs: Path, task_id: str, name: str, keys: list[str], pane: str) -> None:
    """A trial as Terminal-Bench wrote it: `commands.txt` in the harness's repr form, the
    `post-agent` pane, no cast."""
    trial = runs / "collected" / name
    (trial / "panes").mkdir(parents=True)
    (trial / "results.json").write_text(json.dumps({"task_id": task_id, "trial_name": name,
                                                    "is_resolved": False, "failure_mode": "unset"}))
    lines = ["['asciinema rec --stdin /logs/agent.cast', 'Enter']", "['clear', 'Enter']", *map(repr, keys),
             "['asciinema rec --stdin /logs/tests.cast', 'Enter']", "['bash ', '/tests/run-tests.sh', 'Enter']"]
    (trial / "commands.txt").write_text("\n".join(lines) + "\n")
    (trial / "panes" / "post-agent.txt").write_text(pane)


# --------------------------------------------------------------------------- Terminus-2 keys

# The ticker writes its file in place: a temporary file renamed over it (`> tick.new; mv`) exists
# while `date` starts, and whether the engine's diff after a replay catches it is chance (two
# replays of a CI run once differed on /app/tick.new alone; Stage IV's rule for such paths is left).
# Every 0.5 s: each tick starts date, mv and sleep in the container, a CPU cost for as long as it lives.
TICKER = "while true; do date +%s%N > /app/tick; sleep 0.5; done\n"
# Three model turns of a Terminus-2 run: an unclosed quote that swallows the next line, a
# command interrupted by Ctrl-C, and a server left in the foreground.
EPISODES = [
    [{"keystrokes": "echo 'one\n", "duration": 0.3}, {"keystrokes": "touch /app/swallowed\n", "duration": 0.3}],
    [{"keystrokes": "' > /app/quoted.txt\n", "duration": 0.3}, {"keystrokes": "sleep 300\n", "duration": 0.5},
     {"keystrokes": "C-c", "duration": 0.3}, {"keystrokes": "echo $? > /app/interrupted\n", "duration": 0.3}],
    [{"keystrokes": TICKER, "duration": 0.5}],
]
SENT = [{"keystrokes": c["keystrokes"], "duration_sec": c["duration"]} for episode in EPISODES for c in episode]
TERMINUS = {"agent": "terminus-2", "provider": "openai", "model": "gpt-5"}
TERMINUS_PRED = "terminus_2__openai_gpt_5"


def terminus_trial(job: Path, name: str, task: Path, **extra: object) -> Path:
    trial = write_trial(job, name, task, task_name=task.name, minute=0, rewards={"reward": 0.0},
                        trajectory=terminus_atif(EPISODES), **TERMINUS, **extra)  # type: ignore[arg-type]
    write_episodes(trial, EPISODES)
    # Terminal-Bench's verifier writes CTRF beside the reward (tests/test.sh runs pytest --ctrf).
    (trial / "verifier" / "ctrf.json").write_text(json.dumps({"results": {
        "tool": {"name": "pytest"}, "summary": {"tests": 2, "passed": 1, "failed": 1},
        "tests": [{"name": "test_outputs.py::test_quoted", "status": "passed"},
                  {"name": "test_outputs.py::test_ticker_stopped", "status": "failed"}]}}))
    (trial / "verifier" / "test-stdout.txt").write_text("1 failed, 1 passed\n")
    return trial


# --------------------------------------------------------------------------- OpenClaw tool calls

OPENCLAW = {"agent": "openclaw", "provider": "openai", "model": "z-ai/glm-5"}
PRED = "openclaw__openai_z_ai_glm_5"


def exec_call(command: str, answer: str, exit_code: int = 0, **arguments: Any) -> dict[str, Any]:
    return {"name": "exec", "arguments": {"command": command, **arguments}, "answer": answer,
            "status": "completed", "exit_code": exit_code}


# Three turns: a command and a file written; the file edited, read, searched about, a command the
# tool refused (never ran), a command moved to the background and polled to its end; a check.
TURNS: list[list[dict[str, Any]]] = [
    [exec_call("mkdir -p /app/out && echo made", "made"),
     {"name": "write", "arguments": {"path": "/app/out/config.ini", "content": "mode = draft\nlevel = 1\n"},
      "answer": "Successfully wrote 24 bytes to /app/out/config.ini"}],
    [{"name": "edit", "arguments": {"path": "/app/out/config.ini",
                                    "edits": [{"oldText": "mode = draft", "newText": "mode = final"}]},
      "answer": "Successfully replaced 1 block(s) in /app/out/config.ini."},
     {"name": "read", "arguments": {"path": "/app/out/config.ini"}, "answer": "mode = final\nlevel = 1"},
     {"name": "web_search", "arguments": {"query": "ini format"}, "answer": "{\"results\": []}"},
     {"name": "exec", "arguments": {"command": "python -c 'import os; os.remove(\"/app\")'"}, "status": "error",
      "answer": "{\n  \"status\": \"error\",\n  \"tool\": \"exec\",\n  \"error\": \"exec preflight: refused\"\n}"},
     {"name": "exec", "arguments": {"command": "sleep 1; echo slow > /app/out/slow.txt", "timeout": 60},
      "status": "running", "answer": "Command still running (session calm-bay, pid 88). Use process for follow-up."},
     {"name": "process", "arguments": {"action": "poll", "sessionId": "calm-bay", "timeout": 30000},
      "status": "completed", "exit_code": 0, "answer": "(no new output)\n\nProcess exited with code 0."}],
    [exec_call("cat /app/out/config.ini; ls /app/nothing", "mode = final\nlevel = 1\n"
               "ls: cannot access '/app/nothing': No such file or directory\n\n(Command exited with code 2)", 2)],
]


def tool_call_trial(job: Path, name: str, task: Path, turns: list[list[dict[str, Any]]], final: str | None = "Done.",
                    **extra: Any) -> Path:
    return write_trial(job, name, task, task_name=task.name, minute=0, rewards={"reward": 0.0},
                       trajectory=tool_call_atif(turns, final), **OPENCLAW, **extra)


# The three OpenClaw trials Stage IV replays: (1) what the recording says pip installed is pinned
# while the replay runs (PIP_CONSTRAINT); (2) the recording's edit found its text, on this machine
# the file never holds it; (3) the recording's command printed something else than it prints here.
TOOL_CALL_TRIALS: list[list[list[dict[str, Any]]]] = [
    [*TURNS, [exec_call('cat "$PIP_CONSTRAINT"; echo Successfully installed demo-pkg-1.2.3',
                        "demo-pkg==1.2.3\nSuccessfully installed demo-pkg-1.2.3")]],
    [TURNS[0], [{**TURNS[1][0], "arguments": {"path": "/app/out/config.ini",
                                              "edits": [{"oldText": "mode = sketch", "newText": "x"}]}}]],
    [TURNS[0], [exec_call("echo 2 passed", "3 passed")]],
]


# --------------------------------------------------------------------------- the shared build


def _build(root: Path) -> dict[str, Any]:
    """Every engine step, the task's images removed at the end whatever happened."""
    from swe_residual.cli.main import main as cli_main
    from swe_residual.dataset.states.state import load_state
    from swe_residual.dataset.task import load_task
    from swe_residual.environments.base import StartSpec
    from swe_residual.environments.docker import DockerBackend, remove_cached_images
    from swe_residual.environments.docker.base_image import ensure_base_image
    from dockerneeded import _check_engine
    from taskfactory import assert_replayed_as_recorded, keep_tmux_layer, make_machine_task

    _check_engine()
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    task_id = f"machine-{secrets.token_hex(3)}"  # fresh: its cached images are removed at the end
    dataset = root / "dataset"
    keep_tmux_layer()
    task_dir = make_machine_task(dataset, task_id, None, tmux=True)
    tb_trial(root / "tb-runs", task_id, f"{task_id}.1-of-2", TB_KEYS, TB_REPRODUCED)
    tb_trial(root / "tb-runs", task_id, f"{task_id}.2-of-2", TB_DRIFTED_KEYS, TB_DRIFTED)
    job = root / "jobs" / "job"
    terminus_trial(job, f"{task_id}__1", task_dir)
    for n, turns in enumerate(TOOL_CALL_TRIALS, 1):
        tool_call_trial(job, f"{task_id}__tools{n}", task_dir, turns)
    found: dict[str, Any] = {"root": str(root), "task_id": task_id, "dataset": str(dataset),
                             "tb_work": str(root / "tb-work"), "tb_out": str(root / "tb-out"),
                             "work": str(root / "work"), "out": str(root / "out")}
    tb_work, tb_out, work, out = (root / "tb-work", root / "tb-out", root / "work", root / "out")
    try:
        assert cli_main(["import", "terminal-bench", str(root / "tb-runs"), "--dataset", str(dataset),
                         "--out", str(tb_work), "--agent", "terminus", "--model", "test/model"]) == 0
        assert cli_main(["residualize", "filter", str(tb_work)]) == 0
        cli_main(["residualize", "review", str(tb_work)])
        assert cli_main(["residualize", "review", str(tb_work), "--accept-all-as", "test"]) == 0
        assert cli_main(["residualize", "build", str(tb_work), "--out", str(tb_out), "--backend", "docker",
                         "--repeats", "1"]) == 0
        found["harbor_import"] = cli_main(["import", "harbor-jobs", str(root / "jobs"), "--dataset", str(dataset),
                                           "--out", str(work)])
        assert found["harbor_import"] == 0
        assert cli_main(["residualize", "filter", str(work)]) == 0
        assert cli_main(["residualize", "review", str(work), "--accept-all-as", "test"]) == 0
        assert cli_main(["residualize", "build", str(work), "--out", str(out), "--backend", "docker",
                         "--repeats", "1"]) == 0
        # The Terminus-2 state started as the suite starts it: what its replay left.
        task = load_task(out / task_id)
        state = load_state(task, out / task_id / "residual" / f"{TERMINUS_PRED}-1")
        with DockerBackend(cache_dir=root / "cache", progress=lambda _: None, run_id="terminus") as backend:
            environment = backend.start(task, state, StartSpec("terminus", f"{task_id}/state", 1))
            try:
                found["started_fidelity"] = environment.fidelity
                try:
                    assert_replayed_as_recorded(environment)
                    found["replayed_as_recorded"] = None
                except AssertionError:
                    found["replayed_as_recorded"] = traceback.format_exc()
            finally:
                environment.close()
    finally:
        remove_cached_images(task_id)
    return found


def shared_stage_iv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`_build`, made once for the session (all xdist workers): the first to need it makes it, the
    others read it (or its failure) from the directory they share."""
    from filelock import FileLock

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    base = tmp_path_factory.getbasetemp()
    shared = base if worker is None else base.parent  # the session's directory, above each worker's
    kept = shared / "stage-iv-trials.json"
    with FileLock(str(shared / "stage-iv-trials.lock")):
        if not kept.is_file():
            try:
                found = _build(tmp_path_factory.mktemp("stage-iv-trials"))
            except BaseException as exc:
                kept.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}", "worker": worker,
                                            "traceback": traceback.format_exc()}))
                raise
            kept.write_text(json.dumps(found))
            return found
    found = json.loads(kept.read_text())
    if "error" in found:
        pytest.fail(f"the shared Stage IV build failed on {found['worker']}: {found['error']}\n{found['traceback']}",
                    pytrace=False)
    return found

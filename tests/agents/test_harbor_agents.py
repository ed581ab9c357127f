"""`--agent=harbor:terminus-2`: Harbor's Terminus-2, unmodified, in Harbor's own Python, on the
suite's container, its model the scripted OpenAI-compatible test server (no model network).

Terminus-2 drives a tmux session, which the sample's images lack: the bridge installs it with
the session's own install routine in the agent's set-up layer (built once per task image with
network, then cached); the measured runs keep the task's no-network mode and install nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from model_server import ModelServer, Reply

from swe_residual.agents import resolve_agent
from swe_residual.environments.agent_environment import AgentEnvironment
from swe_residual.agents.harbor_bridge import harbor_python
from swe_residual.dataset.load import TaskEntry, load_dataset
from swe_residual.dataset.errors import ConfigError
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

pytestmark = [pytest.mark.slow, *requires_docker]

SAMPLE_TASK = REPO_ROOT / "datasets" / "sample" / "backup-retention-config"
STATE = "patcher-1"
CONF = "/etc/backupctl/backupctl.conf"
PROGRESS: list[str] = []  # the shared backend's progress lines: its set-up layers are counted


def turn(keystrokes: str | None, done: bool = False) -> Reply:
    """One Terminus-2 reply in its JSON protocol: one command (or none), maybe the task declared complete."""
    commands = [{"keystrokes": keystrokes + "\n", "duration": 0.5}] if keystrokes else []
    return Reply(content=json.dumps({"analysis": "looking", "plan": "next", "commands": commands, "task_complete": done}))


def finished(*commands: str) -> list[Reply]:
    # Terminus-2 asks for a confirmation after the first `task_complete`: the second one ends it.
    return [turn(command) for command in commands] + [turn(None, done=True), turn(None, done=True)]


SOLVE = finished(
    f"sed -i -E -e 's|^target *=.*|target = /srv/backups/data|' -e 's|^retention_days *=.*|retention_days = 14|' "
    f"-e 's|^exclude *=.*|exclude = *.swp *.tmp|' {CONF}",
    "install -d -o root -g root -m 0700 /srv/backups/data",
    "backupctl check",
)
REPAIR = finished(f"cat {CONF}", "chmod 0700 /srv/backups/data && backupctl check")
ACCEPT = finished(f"cat {CONF}", "backupctl check")


@pytest.fixture(autouse=True)
def model_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys for the models named here (checked before a run: tests/run/test_credentials.py); the
    model servers of these tests take any, and nothing here reaches a vendor."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


@pytest.fixture(scope="module")
def harbor_ready() -> None:
    if not os.access(harbor_python(), os.X_OK):
        pytest.fail(f"Harbor is not installed at {harbor_python()}: run scripts/setup-tests")


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory) -> TaskEntry:
    data = tmp_path_factory.mktemp("data")
    shutil.copytree(SAMPLE_TASK, data / SAMPLE_TASK.name)
    return load_dataset(data).entry(SAMPLE_TASK.name)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from swe_residual.environments.docker import LABEL, DockerBackend
    from swe_residual.environments.verifier.state_check import check_state_verdict
    from swe_residual.environments.docker.base_image import ensure_base_image

    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    # the state check measures each state's initial statuses, which the records carry
    with DockerBackend(cache_dir=tmp_path_factory.mktemp("docker-cache"), validate_state=check_state_verdict,
                       progress=PROGRESS.append) as created:
        yield created
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}.pid={os.getpid()}"],
                          capture_output=True, text=True, check=False).stdout.split()
    assert left == [], f"containers left behind: {left}"


@pytest.fixture(autouse=True)
def model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # litellm's OpenAI client wants a key even for a server that asks none; keys reach the helper
    # from the host environment, as a real one would.
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def run(entry: TaskEntry, state_id: str | None, script: list[Reply], backend: object, tmp_path: Path,
        records: bool = False, timeout_multiplier: float = 1.0) -> dict:
    options = RunOptions(run_id="harbor", run_dir=tmp_path / "run", timeout_multiplier=timeout_multiplier)
    state = next(s for s in entry.states if s.id == state_id) if state_id else None
    with ModelServer(script) as server:
        agent = resolve_agent("harbor:terminus-2", {"api_base": server.url,
                                                    "record_terminal_session": json.dumps(records)},
                              "openai/served-model")
        record = record_json(run_item(entry.task, state, agent, backend, options))
        # every scripted reply was asked for, no more
        assert server.requests == len(script), (record["termination"], record.get("message"), record.get("error"))
    record["_trajectory"] = json.loads((options.run_dir / record["trajectory"]).read_text())
    record["_run_dir"] = options.run_dir
    return record


# 600 s of the task's agent time x 0.025: run() gets 15 s (as Harbor's trial gives it: setup()
# apart); three answered calls, then the model never answers.
TIME_LIMITED = [turn("true"), turn("ls /etc/backupctl"), turn("true"), Reply(hang_sec=120)]


def helpers_left() -> set[str]:
    """This process's Harbor helpers, but the one kept warm for the next item."""
    from swe_residual.agents import harbor_bridge

    helpers = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "harbor_helper.py"], capture_output=True,
                             text=True, check=False).stdout.split()
    waiting = {str(helper.process.pid) for helper in harbor_bridge._WARM.values()}  # the next item's
    return set(helpers) - waiting


@pytest.fixture(scope="module")
def terminus_runs(harbor_ready, entry: TaskEntry, backend, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The runs of Terminus-2 (not recording) that several tests read, made once on the module's
    backend: the Residual State repaired, then accepted, then a Clean Start stopped at its time
    limit. Its tmux layer is removed first, so these runs build it (whatever ran before): the
    progress lines they printed are kept, to count its builds."""
    from swe_residual.environments.docker.agent_setup import install_tag

    with pytest.MonkeyPatch.context() as keys:  # model_keys' keys: a module's fixture comes before it
        keys.setenv("OPENAI_API_KEY", "test-key")
        keys.setenv("ANTHROPIC_API_KEY", "test-key")
        step = resolve_agent("harbor:terminus-2", {"record_terminal_session": "false"},
                             "openai/served-model")().install_step
        assert step is not None
        layer = install_tag(entry.task, backend.task_image(entry.task), step)
        subprocess.run(["docker", "rmi", layer], capture_output=True, check=False)
        first = len(PROGRESS)
        root = tmp_path_factory.mktemp("terminus-runs")
        runs: dict = {"layer": layer}
        runs["repair"] = run(entry, STATE, REPAIR, backend, root / "repair")
        runs["accept"] = run(entry, STATE, ACCEPT, backend, root / "accept")
        runs["time_limit"] = run(entry, None, TIME_LIMITED, backend, root / "time-limit", timeout_multiplier=0.025)
        runs["helpers_left"] = helpers_left()  # right after the time-limited item
        runs["progress"] = PROGRESS[first:]
    return runs


# Harbor 0.25's docker environment, as its source gives it (harbor/environments/...):
# - base.py:249-262: a trial's bind mounts, /logs/agent, /logs/verifier and /logs/artifacts;
#   docker.py:1095 with base.py:716-738: made once the container is up, `mkdir -p` then
#   `chmod 777` (their parent /logs as the engine makes a mount point: 755).
HARBOR_TRIAL_DIRS = {"/logs": "755", "/logs/agent": "777", "/logs/verifier": "777", "/logs/artifacts": "777"}
# - docker.py:570-575 and base.py:394-401: the container's environment is the image's, with the
#   task's [environment] env (and the trial's, empty by default) added; docker.py:1354-1370 and
#   base.py:584-600: an exec adds only the agent's extra env. The engine's exec adds HOSTNAME
#   and HOME; Terminus-2's tmux session (tmux_session.py:398-411) adds TERM and SHELL, tmux its
#   TMUX, TMUX_PANE and TERM_PROGRAM(_VERSION), asciinema's recording ASCIINEMA_REC, the login
#   shell PWD, OLDPWD, SHLVL and `_`.
EXEC_ADDS = {"HOSTNAME", "HOME"}
SESSION_ADDS = {"TERM", "SHELL", "TMUX", "TMUX_PANE", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "ASCIINEMA_REC",
                "PWD", "OLDPWD", "SHLVL", "_"}
LOOK = "stat -c '%n %a' /logs /logs/agent /logs/verifier /logs/artifacts; echo ENV; env | cut -d= -f1 | sort; echo END"


def image_env_names(image: str) -> set[str]:
    found = subprocess.run(["docker", "image", "inspect", "-f", "{{json .Config.Env}}", image],
                           capture_output=True, text=True, check=True).stdout
    return {entry.split("=", 1)[0] for entry in json.loads(found) or []}


def test_terminus_2_solves_the_clean_start_in_harbor_s_world(harbor_ready, entry, backend, tmp_path: Path) -> None:
    # It records its session (Terminus-2's default): asciinema is in its set-up layer.
    record = run(entry, None, [turn(LOOK), *SOLVE], backend, tmp_path, records=True)
    assert (record["outcome"], record["termination"], record["submitted"]) == ("success", "submitted", True), record
    assert record["agent"] == "harbor:terminus-2[openai/served-model]"
    assert record["agent_config"]["harness"] == "harbor:terminus-2"
    steps = record["_trajectory"]["steps"]
    assert [s["command"] for s in steps if s["action"] == "command"][-1] == "backupctl check"
    assert "OK" in steps[3]["output"] or "ok" in steps[3]["output"].lower()
    # five model calls of 100 prompt and 20 completion tokens each (the server's usage)
    assert record["tokens"] == {"prompt": 600, "completion": 120}
    assert record["steps"] == len(steps) >= 4
    assert not any("Traceback" in step["output"] for step in steps)  # no tool failed in front of the model
    # The world it saw is Harbor's: the trial's directories, and the environment Harbor gives.
    screen = steps[0]["output"]
    for path, mode in HARBOR_TRIAL_DIRS.items():
        assert f"{path} {mode}" in screen, screen
    lines = [line.strip() for line in screen.splitlines()]
    shown = set(lines[lines.index("ENV") + 1:lines.index("END")])
    from swe_residual.environments.docker.agent_setup import install_tag

    image = install_tag(entry.task, backend.task_image(entry.task), resolve_agent(
        "harbor:terminus-2", {"record_terminal_session": "true"}, "openai/served-model")().install_step)
    harbor = image_env_names(image) | set(entry.task.config.environment_env) | EXEC_ADDS
    assert shown - SESSION_ADDS == harbor, screen
    # What it recorded itself is kept: the ATIF beside the suite's trajectory, /logs/agent's files.
    run_dir = record["_run_dir"]
    assert record["atif_trajectory"] == record["trajectory"].removesuffix(".json") + ".atif.json"
    atif = json.loads((run_dir / record["atif_trajectory"]).read_text())
    assert atif["final_metrics"]["total_prompt_tokens"] == 600
    kept = {path.name: path for path in (run_dir / record["agent_logs"]).iterdir()}
    assert {"recording.cast", "terminus_2.pane"} <= set(kept), kept
    assert "backupctl check" in kept["terminus_2.pane"].read_text(errors="replace")
    # setup() and run() timed apart, within the agent's time
    durations = record["durations"]
    assert 0 < durations["agent_setup_sec"] and 0 < durations["agent_run_sec"]
    assert durations["agent_setup_sec"] + durations["agent_run_sec"] <= durations["agent_sec"]


def test_terminus_2_repairs_a_residual_state(terminus_runs) -> None:
    record = terminus_runs["repair"]
    assert (record["outcome"], record["termination"]) == ("success", "submitted"), record
    assert "target = /srv/backups/data" in record["_trajectory"]["steps"][0]["output"]
    # computed from its trajectory against what the predecessor changed on the machine (the
    # state's machine.json): it read the configuration the predecessor edited
    assert record["opened_files"] == [CONF] and record["inspected"] is True
    assert record["machine_kept"] == 1.0  # the predecessor's edit of the configuration still there


def test_terminus_2_accepting_a_residual_state_fails_it(terminus_runs) -> None:
    record = terminus_runs["accept"]
    assert (record["outcome"], record["termination"]) == ("failure", "submitted"), record
    assert failing(record["tests"]) == failing(record["initial_tests"]) != set()
    assert record["tokens"] == {"prompt": 400, "completion": 80}


def failing(tests: dict[str, str] | None) -> set[str]:
    return {name for name, status in (tests or {}).items() if status != "passed"}


def test_terminus_2_s_tmux_is_installed_once_per_task_image_in_its_set_up_layer(entry, backend,
                                                                                  terminus_runs) -> None:
    # The shared runs (two Residual starts and a Clean Start, one backend) after its layer was removed.
    built = [line for line in terminus_runs["progress"] if line.startswith("agent set-up: the tmux install of terminus-2")]
    assert len(built) == 1, "\n".join(terminus_runs["progress"])  # once for the task image, not per item
    assert entry.task.config.agent_network_mode == "none"  # the measured runs: no network, nothing installed

    def has_tmux(image: str) -> bool:
        return subprocess.run(["docker", "run", "--rm", "--network=none", "--entrypoint", "sh", image, "-c",
                               "command -v tmux"], capture_output=True, check=False).returncode == 0

    layer = terminus_runs["layer"]
    # the task's image (and its verifier) has none
    assert has_tmux(layer) and not has_tmux(backend.task_image(entry.task).image_id)


def test_an_installed_harbor_agent_without_network_is_one_clear_error_naming_its_install_step(
        harbor_ready, entry, tmp_path: Path) -> None:
    from swe_residual.environments.docker import DockerBackend

    progress: list[str] = []
    agent = resolve_agent("harbor:claude-code", None, "anthropic/claude-x")
    step = agent().install_step  # a layer under its starts
    assert step is not None and step.step == "Harbor's install() of claude-code"
    options = RunOptions(run_id="harbor", run_dir=tmp_path / "run")
    state = next(s for s in entry.states if s.id == STATE)
    # An engine network of "none" for the set-up container: a machine without network, for real.
    offline_setup = AgentEnvironment(setup_network="none")
    with DockerBackend(cache_dir=tmp_path / "cache", progress=progress.append, agent_environment=offline_setup) as offline:
        records = [record_json(run_item(entry.task, start, agent, offline, options)) for start in (None, state)]
    for record in records:
        assert record["outcome"] == "infra_error", record  # a set-up failure: excluded, never a failure
        assert record["error"].startswith(
            "agent-setup: harbor:claude-code: its install step (Harbor's install() of claude-code, run once per task "
            "image in the agent set-up layer) needs the network, and the set-up container has none (network 'none'): "
            "NonZeroAgentExitCodeError: Command failed"), record["error"]
    assert records[0]["error"] == records[1]["error"]  # one error, the same for every item of the agent
    assert sum(line.startswith("agent set-up: Harbor's install() of claude-code") for line in progress) == 1
    with pytest.raises(ConfigError, match=r"Harbor has no agent 'no-such-agent' \(known: .*terminus-2"):
        resolve_agent("harbor:no-such-agent", None, None)


REPO_TASK = REPO_ROOT / "datasets" / "sample" / "lru-cache-ttl"


def test_opened_and_inspected_come_from_its_keystrokes_on_a_repo_track_state(harbor_ready, backend,
                                                                             tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(REPO_TASK, data / REPO_TASK.name)
    repo_entry = load_dataset(data).entry(REPO_TASK.name)
    # one turn of two keystroke batches, one terminal screen after both
    batch = Reply(content=json.dumps({"analysis": "a", "plan": "p", "task_complete": False, "commands": [
        {"keystrokes": "git status --short\n", "duration": 0.3},
        {"keystrokes": "cat ttlcache/cache.py | head -40\n", "duration": 0.3}]}))
    record = run(repo_entry, "drafter-1", [batch, turn(None, done=True), turn(None, done=True)], backend, tmp_path)
    assert (record["outcome"], record["termination"]) == ("failure", "submitted"), record
    assert record["inspected"] is True
    assert "ttlcache/cache.py" in record["opened_files"]
    commands = [s for s in record["_trajectory"]["steps"] if s["action"] == "command"]
    assert [s["command"] for s in commands] == ["git status --short", "cat ttlcache/cache.py | head -40"]
    assert "self._clock() > expires_at" in commands[1]["output"]  # the screen after the batch
    assert record["tokens"] == {"prompt": 300, "completion": 60}


def test_harbor_nop_declares_done_with_an_empty_trajectory(harbor_ready, entry, backend, tmp_path: Path) -> None:
    options = RunOptions(run_id="harbor", run_dir=tmp_path / "run")
    record = record_json(run_item(entry.task, None, resolve_agent("harbor:nop"), backend, options))
    assert (record["outcome"], record["termination"], record["agent"]) == ("failure", "submitted", "harbor:nop")
    assert record["steps"] == 0 and record["tokens"] is None
    # The runner resolves the agent for every item: Harbor's check (its import, seconds) runs once.
    started = time.monotonic()
    resolve_agent("harbor:nop")
    assert time.monotonic() - started < 0.5


def test_the_local_backend_is_one_clear_error_per_item(harbor_ready, tmp_path: Path) -> None:
    from swe_residual.environments.local import LocalBackend

    shutil.copytree(REPO_TASK, tmp_path / "data" / REPO_TASK.name)
    entry = load_dataset(tmp_path / "data").entry(REPO_TASK.name)
    (tmp_path / "work").mkdir()
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path / "work")
    options = RunOptions(run_id="harbor", run_dir=tmp_path / "run")
    record = record_json(run_item(entry.task, None, resolve_agent("harbor:terminus-2", None, "openai/m"), backend, options))
    assert record["termination"] == "agent_error"
    assert record["message"].startswith("ConfigError: --agent=harbor:terminus-2 needs the docker backend")


def test_run_is_stopped_at_the_time_limit_with_its_tokens(terminus_runs) -> None:
    # TIME_LIMITED: run() gets 15 s; three answered calls, then the model never answers.
    record = terminus_runs["time_limit"]
    assert (record["termination"], record["outcome"]) == ("time_limit", "failure"), record.get("message")
    # Stopped at its limit, not when the model answers (never): a bound well under that, with room
    # for a loaded CI machine's late stop (15 + 3 was tight there).
    assert 15 <= record["durations"]["agent_run_sec"] < 15 + 10
    assert record["durations"]["agent_sec"] < 15 + 15
    # the three answered calls, as the server counted them (100/20 each): nothing lost at the limit
    assert record["tokens"] == {"prompt": 300, "completion": 60}
    assert record["atif_trajectory"] is not None
    assert terminus_runs["helpers_left"] == set()  # the item's helper ended, nothing of it left


# The predecessor typed a ticker into its own tmux session and left it running in the foreground.
# Every 0.5 s: each tick starts date, mv and sleep in the container, a CPU cost for as long as it lives.
TICKER = "while true; do date +%s%N > /app/tick.new; mv /app/tick.new /app/tick; sleep 0.5; done\n"
# Solved only with the ticker still running when the verifier looks (shared mode: the same machine).
TICKING_TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
# up to 5 s for the next tick: on a busy machine the 0.5 s loop can be slow, and still be running
a=$(cat /app/tick 2>/dev/null); b=$a
for i in $(seq 50); do sleep 0.1; b=$(cat /app/tick 2>/dev/null); [ "$a" != "$b" ] && break; done
if [ -e /app/solved ] && [ -n "$a" ] && [ "$a" != "$b" ]; then reward=1; failure=; else reward=0; failure='<failure/>'; fi
echo $reward > /logs/verifier/reward.txt
echo "<testsuites><testsuite name='t'><testcase classname='t' name='test_solved_with_ticker'>$failure\\
</testcase></testsuite></testsuites>" > /logs/verifier/junit.xml
"""


def test_terminus_2_starts_its_own_session_beside_the_predecessor_s_live_one(harbor_ready, backend,
                                                                            tmp_path: Path) -> None:
    from taskfactory import keep_tmux_layer, make_machine_task

    from swe_residual.environments.docker import remove_cached_images

    task_id = f"ticker-{os.getpid()}"
    keep_tmux_layer()
    path = make_machine_task(tmp_path / "data", task_id, [{"keystrokes": TICKER, "duration_sec": 0.5}], tmux=True)
    (path / "tests" / "test.sh").write_text(TICKING_TEST_SH)
    try:
        ticker_entry = load_dataset(tmp_path / "data").entry(task_id)
        script = finished("tmux ls", "touch /app/solved")
        record = run(ticker_entry, "terminus-1", script, backend, tmp_path)
    finally:
        remove_cached_images(task_id)
    assert (record["outcome"], record["termination"]) == ("success", "submitted"), record
    assert record["fidelity"] == "replay"  # the predecessor's processes were live in the instance
    listing = next(s for s in record["_trajectory"]["steps"] if s.get("command") == "tmux ls")["output"]
    # Its own session, as in Harbor, beside the predecessor's (replayed as Terminus-2 typed it).
    assert "terminus-2:" in listing and "swe-residual:" in listing, listing

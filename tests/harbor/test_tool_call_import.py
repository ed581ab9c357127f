"""Harbor trials of an agent that acted through tools (OpenClaw: exec, write, edit, read,
process), written here as Harbor writes them: read into the tool-call form of commands.jsonl,
imported as machine-track runs (declared done when the last turn calls no tool), and, on the
real engine, replayed by Stage IV with each command's output compared with what the agent saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dockerneeded import _check_engine, requires_docker
from harborjobs import tool_call_atif
from stageivtrials import PRED, TURNS, exec_call, shared_stage_iv, tool_call_trial
from taskfactory import make_machine_task

from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.errors import DatasetError
from swe_residual.residualize.harbor.jobs import import_harbor_jobs
from swe_residual.residualize.harbor.tool_calls import read_tool_calls
from swe_residual.dataset.states.state import load_commands
from swe_residual.dataset.states.tool_calls import apply_edit, constraints_text, output_divergence, recorded_installs

_exec, _trial = exec_call, tool_call_trial
REPLAYED = [
    {"command": "mkdir -p /app/out && echo made", "shell": "sh", "timeout_sec": 1800.0,
     "observed": {"exit_code": 0, "output": "made"}},
    {"write": "/app/out/config.ini", "content": "mode = draft\nlevel = 1\n"},
    {"edit": "/app/out/config.ini", "replace": [{"old": "mode = draft", "new": "mode = final"}]},
    # Recorded with a 60 s deadline and seen ending: a busier machine gets at least 600 s.
    {"command": "sleep 1; echo slow > /app/out/slow.txt", "shell": "sh", "timeout_sec": 600.0,
     "observed": {"exit_code": 0}},
    {"command": "cat /app/out/config.ini; ls /app/nothing", "shell": "sh", "timeout_sec": 1800.0,
     "observed": {"exit_code": 2, "output": TURNS[2][0]["answer"]}},
]


@pytest.mark.unit
def test_tool_calls_become_commands_writes_and_edits(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "tools", None, tmux=False)
    read = read_tool_calls(_trial(tmp_path / "jobs", "tools__1", task, TURNS))
    assert read is not None and read.refused is None and read.declared_done
    assert read.interactions == REPLAYED
    assert read.counts == {
        "replayed: edit": 1, "replayed: exec": 3, "replayed: write": 1,
        "skipped: exec answered with an error (never ran)": 1,
        "skipped: process poll (a wait: the replay runs each command to its end)": 1,
        "skipped: read (changes nothing on the machine)": 1,
        "skipped: web_search (changes nothing on the machine)": 1}
    # A listing that names the set-up's workspace files says so, for the comparison to set them aside.
    listing = [[_exec("ls /app", "AGENTS.md\nSOUL.md\ndata.csv")]]
    read_ls = read_tool_calls(_trial(tmp_path / "jobs", "tools__ls", task, listing))
    assert read_ls is not None and read_ls.interactions[0]["observed"]["harness_files"] == ["AGENTS.md", "SOUL.md"]
    # The session's recorded working directory is where each command runs.
    (tmp_path / "jobs" / "tools__1" / "agent" / "openclaw-session.jsonl").write_text(
        json.dumps({"type": "session", "cwd": "/app/out"}) + "\n")
    read = read_tool_calls(tmp_path / "jobs" / "tools__1")
    assert read is not None and {entry.get("cwd") for entry in read.interactions if "command" in entry} == {"/app/out"}


@pytest.mark.unit
@pytest.mark.parametrize(("call", "reason"), [
    ({"name": "browser", "arguments": {"action": "open", "url": "http://localhost"}, "answer": "opened"},
     "step 2: browser: a tool whose effect on the machine cannot be replayed"),
    ({"name": "process", "arguments": {"action": "kill", "sessionId": "calm-bay"}, "answer": "killed"},
     "step 2: process kill: acts on a running command"),
    ({"name": "exec", "arguments": {"command": "python3 -m http.server", "background": True},
      "status": "running", "answer": "Command still running (session calm-bay, pid 9)."},
     "step 2: exec: run with `background`"),
    ({"name": "exec", "arguments": {"command": "make"}, "status": "failed", "exit_code": None,
      "answer": "Command aborted by signal SIGTERM"}, "step 2: exec: ended without an exit status"),
])
def test_a_tool_call_that_cannot_be_replayed_is_refused_naming_its_step(
        tmp_path: Path, call: dict[str, Any], reason: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "tools", None, tmux=False)
    read = read_tool_calls(_trial(tmp_path / "jobs", "tools__1", task, [[call], TURNS[0]]))
    assert read is not None and read.refused is not None and read.refused.startswith(reason), read.refused


@pytest.mark.unit
def test_a_command_left_running_in_the_background_is_refused(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "tools", None, tmux=False)
    left = [dict(TURNS[1][4])]  # moved to the background, never polled to its end
    read = read_tool_calls(_trial(tmp_path / "jobs", "tools__1", task, [left]))
    assert read is not None and read.refused is not None
    assert "session calm-bay" in read.refused and "never seen to end" in read.refused


@pytest.mark.unit
def test_declared_done_is_a_last_turn_without_a_tool_call(tmp_path: Path) -> None:
    dataset, jobs = tmp_path / "dataset", tmp_path / "jobs"
    task = make_machine_task(dataset, "tools", None, tmux=False)
    _trial(jobs, "tools__1", task, TURNS)
    _trial(jobs, "tools__2", task, TURNS, final=None)  # stopped right after a tool call
    assert read_tool_calls(jobs / "tools__2") is not None and not read_tool_calls(jobs / "tools__2").declared_done
    work = tmp_path / "work"
    import_harbor_jobs(jobs, dataset, work, progress=lambda _: None, warn=lambda _: None)
    records = {n: json.loads((work / "runs" / "tools" / PRED / str(n) / "record.json").read_text()) for n in (1, 2)}
    assert (records[1]["submitted"], records[1]["termination"]) == (True, "submitted")
    assert (records[2]["submitted"], records[2]["termination"]) == (False, "agent_error")
    assert "without declaring the task done" in records[2]["error"]
    assert records[1]["residualize"]["import"]["tool_calls"]["replayed: exec"] == 3
    commands = load_commands(work / "runs" / "tools" / PRED / "1" / "commands.jsonl")
    assert commands == REPLAYED
    assert cli_main(["residualize", "filter", str(work)]) == 0
    filtered = json.loads((work / "filter.json").read_text())
    assert [c["attempt"] for c in filtered["candidates"]] == [1]
    assert [(e["attempt"], e["rule"]) for e in filtered["excluded"]] == [(2, "not_submitted")]


@pytest.mark.unit
def test_a_reward_from_a_verifier_whose_tests_never_ran_is_no_verdict(tmp_path: Path) -> None:
    # A Terminal-Bench test.sh installs curl and uv, then runs pytest with a CTRF report, and
    # writes reward 0 whatever happened: when apt fails, no test ran and the 0 is no verdict.
    dataset, jobs = tmp_path / "dataset", tmp_path / "jobs"
    task = make_machine_task(dataset, "tools", None, tmux=False)
    test_sh = task / "tests" / "test.sh"
    test_sh.write_text(test_sh.read_text() + "\n# uvx -w pytest-json-ctrf pytest --ctrf /logs/verifier/ctrf.json\n")
    crashed = _trial(jobs, "tools__1", task, TURNS)
    (crashed / "verifier" / "test-stdout.txt").write_text(
        "E: Unable to fetch some archives\n/tests/test.sh: line 20: uvx: command not found\n")
    tested = _trial(jobs, "tools__2", task, TURNS)
    (tested / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
        {"name": "test_outputs.py::test_config", "status": "failed"}]}}))
    work = tmp_path / "work"
    import_harbor_jobs(jobs, dataset, work, progress=lambda _: None, warn=lambda _: None)
    records = {n: json.loads((work / "runs" / "tools" / PRED / str(n) / "record.json").read_text()) for n in (1, 2)}
    assert (records[1]["outcome"], records[1]["reward"]) == ("infra_error", None)
    assert "tests did not run" in records[1]["error"] and "uvx: command not found" in records[1]["error"]
    assert (records[2]["outcome"], records[2]["reward"]) == ("failure", 0.0)
    assert cli_main(["residualize", "filter", str(work)]) == 0
    filtered = json.loads((work / "filter.json").read_text())
    assert [c["attempt"] for c in filtered["candidates"]] == [2]
    assert [(e["attempt"], e["rule"]) for e in filtered["excluded"]] == [(1, "infra_failure")]


@pytest.mark.unit
def test_another_version_of_the_task_is_imported_only_when_asked_and_said(tmp_path: Path) -> None:
    dataset, jobs = tmp_path / "dataset", tmp_path / "jobs"
    task = make_machine_task(dataset, "tools", None, tmux=False)
    _trial(jobs, "tools__1", task, TURNS, checksum="ab" * 32)
    # Recorded elsewhere: the trial's task path is not on this machine.
    result = json.loads((jobs / "tools__1" / "result.json").read_text())
    result["task_id"] = {"path": "tools"}
    result["config"]["task"] = {"path": "tools"}
    (jobs / "tools__1" / "result.json").write_text(json.dumps(result))
    (jobs / "tools__1" / "config.json").write_text(json.dumps(result["config"]))
    with pytest.raises(Exception, match="none of the 1 readable trial"):
        import_harbor_jobs(jobs, dataset, tmp_path / "refused", progress=lambda _: None, warn=lambda _: None)
    warned: list[str] = []
    import_harbor_jobs(jobs, dataset, tmp_path / "work", other_versions=True, progress=lambda _: None,
                       warn=warned.append)
    record = json.loads((tmp_path / "work" / "runs" / "tools" / PRED / "1" / "record.json").read_text())
    version = record["residualize"]["import"]["task_version"]
    assert version.startswith("another version of the task (task_checksum abababababababab)")
    assert "validated on the dataset's version" in version and any("another version" in w for w in warned)


@pytest.mark.unit
def test_an_edit_applies_its_text_exactly_once() -> None:
    assert apply_edit("a = 1\nb = 2\n", [{"old": "b = 2", "new": "b = 3"}], "x") == "a = 1\nb = 3\n"
    with pytest.raises(DatasetError, match="occurs 0 times"):
        apply_edit("a = 1\n", [{"old": "b = 2", "new": "b = 3"}], "x")
    with pytest.raises(DatasetError, match="occurs 2 times"):
        apply_edit("b = 2\nb = 2\n", [{"old": "b = 2", "new": "b = 3"}], "x")


@pytest.mark.unit
def test_an_output_is_compared_after_the_tolerance_rule() -> None:
    seen = {"exit_code": 0, "output": "key made\n....+..+++++*\nat 2026-04-15 15:21:56 in 0.53s, pid 3150"}
    assert output_divergence(seen, 0, "key made\n..+.....+++*\nat 2026-12-02 06:01:02 in 1.7s, pid 12\n") is None
    assert output_divergence({"exit_code": 0, "output": "(no output)"}, 0, "") is None
    assert output_divergence({"exit_code": 2, "output": "gone\n\n(Command exited with code 2)"}, 2, "gone\n") is None
    assert output_divergence({"exit_code": 0}, 0, "anything") is None  # seen only in pieces
    # Trimmed as the tool showed it; the traceback markers of one Python version and not another.
    traceback = "Traceback (most recent call last):\n  File \"/app/c.py\", line 2, in <module>\n    exit(main())\n"
    assert output_divergence({"exit_code": 1, "output": traceback.strip() + "\n         ~~~~^^\nValueError: x"}, 1,
                             traceback + "ValueError: x\n") is None
    # The files the agent's set-up wrote before its first turn are not the replay's to make.
    seen = {"exit_code": 0, "output": "AGENTS.md\ndata.csv\n-rw-r--r-- 1 root root 1673 Apr 15 13:23 SOUL.md",
            "harness_files": ["AGENTS.md", "SOUL.md"]}
    assert output_divergence(seen, 0, "data.csv\n") is None
    assert output_divergence({**seen, "harness_files": []}, 0, "data.csv\n") is not None
    # A path under the recording harness's own mount (pre.dev's runtime, a find / that listed its
    # node_modules) is not the task's: the replay has no such mount. Only those lines go.
    found = ("/home/user/predev-agent/node_modules/zod/src/v3/tests/pipeline.test.ts\n"
             "/usr/lib/python3/dist-packages/pipeline_test.py\n")
    seen = {"exit_code": 0, "output": found, "harness_mounts": ["/home/user/predev-agent"]}
    assert output_divergence(seen, 0, "/usr/lib/python3/dist-packages/pipeline_test.py\n") is None
    assert output_divergence(seen, 0, "") is not None
    assert output_divergence({**seen, "harness_mounts": []}, 0, "/usr/lib/python3/dist-packages/pipeline_test.py\n") \
        is not None
    assert output_divergence({**seen, "output": "/home/user/predev-agent-old/x\n"}, 0, "") is not None
    # `ls -l`: a directory's links and size, and the block total, are the storage driver's.
    listing = "total {}\ndrwxr-xr-x {} root root {} Apr 15 13:23 ssl\n-rw------- 1 root root 1704 Apr 15 13:23 key"
    assert output_divergence({"exit_code": 0, "output": listing.format(20, 1, 4096)}, 0,
                             listing.format(24, 3, 12288)) is None
    assert output_divergence({"exit_code": 0, "output": listing.format(20, 1, 4096)}, 0,
                             listing.format(20, 1, 4096).replace("1704", "1708")) is not None
    assert output_divergence(seen, 1, "key made") == "exit status 1, recorded 0"
    # A long float's last digits are the machine's (raman-fitting's fit on another CPU); six
    # significant digits are the state's.
    fit = '"amplitude": {}, "x0": 19256.14422909866'
    assert output_divergence({"exit_code": 0, "output": fit.format("82702.92832832198")}, 0,
                             fit.format("82702.92829936616")) is None
    assert output_divergence({"exit_code": 0, "output": fit.format("82702.92832832198")}, 0,
                             fit.format("82712.92832832198")) is not None
    # A float near zero is rounding noise (a fitted offset at its bound), read before the hex
    # rule could take its mantissa for a digest; one above 1e-6 is compared as any other.
    offset = '"amplitude": 82702.92832832198, "offset": {}'
    assert output_divergence({"exit_code": 0, "output": offset.format("1.892285846310897e-08")}, 0,
                             offset.format("2.3061402914407158e-08")) is None
    assert output_divergence({"exit_code": 0, "output": offset.format("1.892285846310897e-05")}, 0,
                             offset.format("2.3061402914407158e-05")) is not None
    assert output_divergence({"exit_code": 0, "output": offset.format("1.892285846310897e-08")}, 0,
                             offset.format("0.5")) is not None
    assert output_divergence({"exit_code": 0, "output": "pytest 8.4.1"}, 0, "pytest 8.4.2") is not None
    found = output_divergence({"exit_code": 0, "output": "3 passed"}, 0, "2 passed")
    assert found == "output differs at line 1 of its last 10: recorded '3 passed', replayed '2 passed'"


@pytest.mark.unit
def test_dpkgs_count_of_its_files_is_the_base_images_not_the_states() -> None:
    # apt-get install's last lines as recorded on ubuntu:24.04 of 2025-10-31, then on a rebuild of
    # that tag with later package versions: the count differs, what was unpacked must not.
    install = ("Selecting previously unselected package primer3.\r\n(Reading database ... \r(Reading database ... 5%"
               "\r(Reading database ... {} files and directories currently installed.)\r\nPreparing to unpack "
               ".../primer3_{}_amd64.deb ...\r\nUnpacking primer3 ({}) ...\r\nSetting up primer3 ({}) ...")
    recorded = {"exit_code": 0, "output": install.format(4381, *["2.6.1-4"] * 3)}
    assert output_divergence(recorded, 0, install.format(4375, *["2.6.1-4"] * 3)) is None
    found = output_divergence(recorded, 0, install.format(4375, *["2.6.1-5"] * 3))
    assert found == "dpkg did not set up primer3 2.6.1-4 as recorded"
    assert output_divergence({"exit_code": 0, "output": "4381 files"}, 0, "4375 files") is not None


@pytest.mark.unit
def test_apts_account_of_its_work_is_compared_by_what_it_set_up() -> None:
    # `apt-get install -y python3 | tail -3` recorded in 2026-04 ended on ca-certificates' trigger
    # (its version then re-triggered itself); today's ca-certificates does not, and dpkg's last
    # lines are python3's hooks. The packages set up are the state; the order is the day's.
    recorded = {"exit_code": 0, "output": "0 added, 0 removed; done.\r\nRunning hooks in /etc/ca-certificates/update.d..."
                                          "\r\ndone."}
    today = "running python rtupdate hooks for python3.12...\nrunning python post-rtupdate hooks for python3.12...\n" \
            "Processing triggers for libc-bin (2.39-0ubuntu8.12) ..."
    assert output_divergence(recorded, 0, today) is None
    assert output_divergence(recorded, 0, today + "\nE: Unable to locate package python4") is not None
    assert output_divergence(recorded, 100, today) == "exit status 100, recorded 0"
    # A package the recording shows set up must be set up again, at its version.
    shown = {"exit_code": 0, "output": "Unpacking primer3 (2.6.1-4) ...\nSetting up primer3 (2.6.1-4) ..."}
    assert output_divergence(shown, 0, "Setting up primer3 (2.6.1-4) ...\nProcessing triggers for man-db (2.12) ...") is None
    assert output_divergence(shown, 0, "Setting up primer3 (2.6.1-5) ...") == "dpkg did not set up primer3 2.6.1-4 as recorded"
    # `apt-get update` before it, unpiped: the indexes and sizes the mirror served that day.
    update = "Get:{} http://archive.ubuntu.com/ubuntu noble/universe amd64 Packages [{} kB]\nFetched {} MB in 6s (6018 kB/s)\n" \
             "Reading package lists...\n"
    assert output_divergence({"exit_code": 0, "output": update.format(12, 15044, "37.4") + shown["output"]}, 0,
                             update.format(14, 15101, "40.1") + shown["output"]) is None
    # Where apt is not at work, a bare `done.` is the command's own output, compared as it is.
    assert output_divergence({"exit_code": 0, "output": "done."}, 0, "") is not None


@pytest.mark.unit
@pytest.mark.parametrize(("line", "message"), [
    ({"write": "/app/x"}, "a write needs a string `content`"),
    ({"edit": "/app/x", "replace": [{"old": "", "new": "y"}]}, "an edit needs `replace`"),
    ({"write": "/app/x", "content": "", "command": "true"}, "needs exactly one of"),
    ({"command": "true", "shell": "zsh"}, "`shell` must be one of bash, sh"),
    ({"write": "/var/run/docker.sock", "content": "x"}, "reaches for the container engine's socket"),
])
def test_tool_call_lines_are_checked_at_load(tmp_path: Path, line: dict[str, Any], message: str) -> None:
    from swe_residual.dataset.states.state import check_replayable

    path = tmp_path / "commands.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(DatasetError, match=message.replace("`", "`").replace("(", r"\(")):
        check_replayable(path)


# --------------------------------------------------------------------------- end to end, real engine


@pytest.fixture(scope="session")
def stage_iv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The session's one Stage IV build of imported trials (tests/stageivtrials.py): the three
    OpenClaw trials of TOOL_CALL_TRIALS (what the recording says pip installed, pinned; an edit
    whose text the file never holds here; a command printing something else here) with a
    Terminus-2 trial in one `import harbor-jobs`, of one tmux machine task."""
    return shared_stage_iv(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("_", [pytest.param(None, marks=requires_docker)])
def test_tool_call_trials_become_states_when_their_replay_reproduces_them(stage_iv: dict[str, Any], _: None) -> None:
    _check_engine()
    machine_task_id = stage_iv["task_id"]
    work, out = Path(stage_iv["work"]), Path(stage_iv["out"])
    assert stage_iv["harbor_import"] == 0
    candidates = json.loads((work / "table5.json").read_text())["candidates"]
    assert sorted(c["attempt"] for c in candidates if c["predecessor"] == PRED) == [1, 2, 3]
    outcomes = {c["attempt"]: c for c in candidates if c["predecessor"] == PRED}
    assert outcomes[1]["category"] == "included", outcomes[1]["detail"]
    assert outcomes[1]["replay"]["outputs_compared"] == 4 and outcomes[1]["replay"]["outputs"] == "match"
    assert outcomes[1]["replay"]["replays_agree"] and outcomes[1]["fidelity"] == "snapshot"
    assert outcomes[2]["category"] == "replay_failed"
    assert "occurs 0 times in the replayed file" in outcomes[2]["detail"] and "line 3" in outcomes[2]["detail"]
    assert outcomes[3]["category"] == "replay_failed"
    assert ("line 3 of commands.jsonl: output differs at line 1 of its last 10: recorded '3 passed', "
            "replayed '2 passed'") in outcomes[3]["detail"]
    state_dir = out / machine_task_id / "residual" / f"{PRED}-1"
    machine = json.loads((state_dir / "machine.json").read_text())
    assert "/app/out/config.ini" in machine["files"]["added"] and "/app/out/slow.txt" in machine["files"]["added"]


@pytest.mark.unit
def test_pip_progress_bars_and_self_checks_are_masked_and_recorded_installs_pinned() -> None:
    recorded = ("Downloading numpy-2.4.4-cp313-cp313-manylinux_2_28_x86_64.whl (16.6 MB)\n"
                "   ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 16.6/16.6 MB 11.8 MB/s  0:00:01\n"
                "Successfully installed numpy-2.4.4 typing_extensions-4.12.2\n\n"
                "[notice] A new release of pip is available: 25.2 -> 26.0.1\n"
                "[notice] To update, run: pip install --upgrade pip")
    replayed = recorded.replace("  0:00:01", " eta 0:00:00").replace("25.2 -> 26.0.1", "25.1.1 -> 26.3")
    assert output_divergence({"exit_code": 0, "output": recorded}, 0, replayed) is None
    assert output_divergence({"exit_code": 0, "output": recorded}, 0, replayed.replace("numpy-2.4.4 ", "numpy-2.4.6 ")) \
        is not None
    # Another pip (a venv's 25.1 where the recording's system pip 25.2 ran as root): its lines
    # differ, what it installed does not; a line the command printed after pip still counts.
    venv_pip = ("Collecting numpy\n  Downloading numpy-2.4.4-cp313-cp313-manylinux_2_28_x86_64.whl (16.6 MB)\n"
                "     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 16.6/16.6 MB 73.2 MB/s eta 0:00:00\n"
                "Installing collected packages: numpy, typing_extensions\n\n"
                "Successfully installed numpy-2.4.4 typing_extensions-4.12.2\n")
    assert output_divergence({"exit_code": 0, "output": recorded + "\nfit: 1.5"}, 0, venv_pip + "fit: 1.5") is None
    assert output_divergence({"exit_code": 0, "output": recorded + "\nfit: 1.5"}, 0, venv_pip + "fit: 2.0") is not None
    assert output_divergence({"exit_code": 0, "output": recorded}, 0, venv_pip.replace("2.4.4", "2.4.6")) == (
        "pip installed numpy-2.4.6 typing_extensions-4.12.2, recorded numpy-2.4.4 typing_extensions-4.12.2")
    entries = [{"command": "pip install numpy", "observed": {"exit_code": 0, "output": recorded}},
               {"command": "pip install -U numpy", "observed": {"exit_code": 0, "output": "Successfully installed numpy-2.4.6"}},
               {"write": "/app/x", "content": "Successfully installed fake-1.0"}]
    assert recorded_installs(entries) == {"numpy": "2.4.6", "typing_extensions": "4.12.2"}
    assert constraints_text(recorded_installs(entries)) == "numpy==2.4.6\ntyping_extensions==4.12.2\n"


@pytest.mark.unit
def test_the_trajectory_links_each_answer_to_its_call() -> None:
    """OpenClaw answers a call in a later step naming it: that answer is the call's output."""
    from swe_residual.agents.atif import atif_to_trajectory

    trajectory = atif_to_trajectory(tool_call_atif(TURNS), "openclaw")
    assert [step.action for step in trajectory.steps] == [
        "command", "edit", "edit", "view", "message", "command", "command", "message", "command", "message"]
    assert trajectory.steps[0].output == "made" and trajectory.steps[3].output == "mode = final\nlevel = 1"
    assert trajectory.final_message == "Done."

"""Harbor trials of pre.dev's agent (predotdev/predev-terminal-bench-2.0's layout), written here:
the ATIF-v1.4 trajectory under artifacts/, the set-up in trial.log, the model named only by the
trajectory. Read into set-up commands, bash commands with the outputs the agent saw, writes and
edits, the trajectory the agent left in the task's directory last; return_result read as the claim;
unreplayable calls refused with the step that made them; imported by `swe-residual import
harbor-jobs` and rebuilt by `dataset build` from a clone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harborjobs import commit_folder, write_trial
from taskfactory import make_machine_task

from swe_residual.cli.main import main
from swe_residual.dataset.states.state import check_replayable
from swe_residual.residualize.harbor.episode_tools import read_any_tool_calls
from swe_residual.residualize.harbor.predev_tools import read_predev_tool_calls
from swe_residual.residualize.published.materialise import HARBOR_JOBS, trial_commands

MODEL = "claude-haiku-4-5-20251001"
JOB = "2026-05-10__01-23-57"
PROXY = "echo 'Acquire::http::Proxy \"http://172.17.0.1:3142\";' > /etc/apt/apt.conf.d/01proxy 2>/dev/null || true; "
APT = ("echo 'Acquire::Check-Valid-Until \"false\";' > /etc/apt/apt.conf.d/02noexpire 2>/dev/null || true; "
       "apt-get -o Acquire::Check-Valid-Until=false update && apt-get install -y unzip curl git gcc g++ make python3")
PIP = "timeout 60 pip install numpy scipy 2>/dev/null || timeout 60 pip3 install numpy scipy 2>/dev/null || true"
# The same, its time limits lifted: the replay runs it to its end, whatever the machine's speed.
PIP_UNLIMITED = "pip install numpy scipy 2>/dev/null || pip3 install numpy scipy 2>/dev/null || true"
SETUP = [PROXY + APT, "git config --global advice.detachedHead false", PIP, "curl -fsSL https://bun.sh/install | bash",
         "cd /home/user/predev-agent && bun install", "echo 932c060b > /tmp/predev-hash"]
LAUNCH = ("TASK_DIR=$(readlink -f /proc/1/cwd 2>/dev/null || echo /app) && cat > /tmp/i.txt << 'EOF'\n"
          "Fix the server.\nEOF\nbun run src/cli.ts")


def call(name: str, arguments: dict[str, Any], answer: str | None) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "answer": answer}


def ran(command: str, stdout: str = "", stderr: str = "", code: int = 0, **more: Any) -> dict[str, Any]:
    answer = json.dumps({"stdout": stdout, "stderr": stderr, "exitCode": code, "command": command,
                         "status": "completed" if code == 0 else "failed"}, separators=(",", ":"))
    return call("bash", {"command": command, **more}, answer)


def done(summary: str = "Task complete.", answer: str = "Chain complete. Final summary: Task complete.",
         **more: Any) -> dict[str, Any]:
    return call("return_result", {"summary": summary, "done": True, **more}, answer)


def trajectory(calls: list[dict[str, Any]], words_after: str | None = None) -> dict[str, Any]:
    """The agent's ATIF-v1.4 trajectory: a step of words, then one step per call (its answer in
    the same step), as pre.dev writes it."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "agent", "message": "I'll fix the server."}]
    for number, made in enumerate(calls):
        step: dict[str, Any] = {
            "step_id": len(steps) + 1, "source": "agent", "message": f"Using tool: {made['name']}",
            "tool_calls": [{"tool_call_id": f"toolu_{number}", "function_name": made["name"],
                            "arguments": json.dumps(made["arguments"])}]}
        if made["answer"] is not None:
            step["observation"] = {"results": [{"source_call_id": f"toolu_{number}", "content": made["answer"]}]}
        steps.append(step)
    if words_after is not None:
        steps.append({"step_id": len(steps) + 1, "source": "agent", "message": words_after})
    return {"schema_version": "ATIF-v1.4", "session_id": "69ffe681",
            "agent": {"name": "predev", "version": "0.1.0", "model_name": MODEL, "api": "claude"},
            "steps": steps, "final_metrics": {"total_prompt_tokens": 0, "total_steps": len(steps)}}


def predev_trial(job: Path, name: str, task: Path, calls: list[dict[str, Any]], *, words_after: str | None = None,
                 setup: list[str] | None = None, collected: bool = True, reward: float = 0.0) -> Path:
    trial = write_trial(job, name, task, task_name=task.name, agent="predev-auto", provider="anthropic",
                        model=MODEL, minute=0, rewards={"reward": reward})
    # The result names no model (model_info null) and the config none: only the trajectory does.
    result = json.loads((trial / "result.json").read_text())
    result["agent_info"]["model_info"] = None
    result["config"]["agent"] = {"name": None, "import_path": "predev_agent_auto:PredevAgentAuto",
                                 "model_name": None}
    (trial / "result.json").write_text(json.dumps(result, indent=4))
    (trial / "config.json").write_text(json.dumps(result["config"], indent=4))
    text = json.dumps(trajectory(calls, words_after), indent=2)
    (trial / "artifacts" / "trajectory.json").write_text(text)
    (trial / "artifacts" / "manifest.json").write_text(json.dumps([
        {"source": "/home/user/predev-agent/bench-logs/", "destination": "artifacts/bench-logs",
         "type": "directory", "status": "ok"},
        {"source": "/app/trajectory.json", "destination": "artifacts/trajectory.json", "type": "file",
         "status": "ok" if collected else "failed"}], indent=2))
    log = [line for command in (SETUP if setup is None else setup)
           for line in (f"Running command: {command}", "Command outputs captured")]
    (trial / "trial.log").write_text("\n".join([*log, f"Running command: {LAUNCH}", "Command outputs captured"]) + "\n")
    return trial


SERVER = "import http.server\nhttp.server.test(port=8000)\n"
CALLS = [
    call("exa_search_urls", {"query": "python http server"}, '{"results": []}'),
    ran("cd /app && ls", "server.py\n"),
    call("write_file", {"file_path": "/app/server.py", "content": SERVER}, "# Write Successful\n\n**File:** `server.py`"),
    call("edit_file", {"file_path": "/app/server.py", "mode": "string", "old_string": "8000", "new_string": "8080"},
         "# String Edit Successful\n\nReplaced 1 occurrence(s)"),
    call("edit_file", {"file_path": "/app/server.py", "mode": "string", "old_string": "9999", "new_string": "1"},
         "Error: # String Not Found"),
    call("read_code", {"filePath": "/app/server.py", "readFullFile": True}, "// File: /app/server.py"),
    # Both streams printed: the exit status alone.
    ran("python3 -m py_compile server.py && echo ok >&2 && echo fine", "fine\n", "ok\n", timeout_ms=900000),
    ran("python3 missing.py", "", "python3: can't open file\n", 2),
    call("bash", {"command": "cat > x << EOF\nEOF"}, "⚠️ Do not use bash heredocs (cat << EOF > file) to write files"),
    # Answers the trajectory keeps only a prefix of: cut after, and before, the exit status.
    call("bash", {"command": "seq 3"}, '{"stdout":"1\\n2\\n3\\n","stderr":"","exitCode":0,"command":"seq 3","sta'),
    call("bash", {"command": "seq 100000"}, '{"stdout":"1\\n2\\n3\\n4\\n5\\n6'),
    call("execute_program", {"code": "await tools.read_code({filePath: 'a'})", "description": "look"},
         json.dumps({"text": "[execute_program: look]", "_programMetadata": {"toolCalls": [
             {"name": "read_code", "index": 1, "durationMs": 3, "success": True}]}})),
    call("sequential_recurse", {"task": "Verify", "maxTurns": 10},
         "# Sub-Agent Result (FULL POWER)\n\n**Turns:** 2\n**Tools Called:** bash, return_result\n\n**Status:** "
         "Frame completed via return_result"),
    ran("curl -s localhost:8080 | head -1", "<!DOCTYPE HTML>\n"),
    done(answer="Frame checkpointed. Summary: verified"),
    done(),
]
REPLAYED = [
    {"command": APT, "shell": "bash", "timeout_sec": 1800.0},
    {"command": "git config --global advice.detachedHead false", "shell": "bash", "timeout_sec": 1800.0},
    {"command": PIP_UNLIMITED, "shell": "bash", "timeout_sec": 1800.0},
    {"command": "echo 932c060b > /tmp/predev-hash", "shell": "bash", "timeout_sec": 1800.0},
    {"command": "cd /app && ls", "shell": "bash", "timeout_sec": 600.0,
     "observed": {"exit_code": 0, "output": "server.py\n"}},
    {"write": "/app/server.py", "content": SERVER},
    {"edit": "/app/server.py", "replace": [{"old": "8000", "new": "8080"}]},
    {"command": "python3 -m py_compile server.py && echo ok >&2 && echo fine", "shell": "bash", "timeout_sec": 900.0,
     "observed": {"exit_code": 0}},
    {"command": "python3 missing.py", "shell": "bash", "timeout_sec": 600.0,
     "observed": {"exit_code": 2, "output": "python3: can't open file\n"}},
    {"command": "seq 3", "shell": "bash", "timeout_sec": 600.0, "observed": {"exit_code": 0}},
    {"command": "seq 100000", "shell": "bash", "timeout_sec": 600.0},
    {"command": "curl -s localhost:8080 | head -1", "shell": "bash", "timeout_sec": 600.0,
     "observed": {"exit_code": 0, "output": "<!DOCTYPE HTML>\n"}},
]


@pytest.mark.unit
def test_the_calls_are_read_after_the_setup_with_the_trajectory_left_last(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    trial = predev_trial(tmp_path / "jobs", "server__1", task, CALLS, words_after="Confirmed: all criteria pass.")
    read = read_any_tool_calls(trial)
    assert read is not None and read.refused is None and read.source == "artifacts/trajectory.json"
    assert read.interactions[:-1] == REPLAYED
    assert read.interactions[-1] == {"write": "/app/trajectory.json",
                                     "content": (trial / "artifacts" / "trajectory.json").read_text()}
    assert read.declared_done and read.declared_how.startswith("step 17: return_result declares the work done")
    assert read.counts["skipped: set-up of the agent's own runtime (bun, its packages)"] == 2
    assert read.counts["skipped: bash the tool declined (never ran)"] == 1
    assert read.counts["skipped: edit_file answered with an error (the file was not changed)"] == 1
    assert read.counts["skipped: execute_program calling only tools that change nothing"] == 1
    assert read.counts["skipped: sequential_recurse (its sub-agent's calls follow it in the trajectory)"] == 1
    assert read.counts["replayed: bash (its answer cut before its exit status: not compared)"] == 1
    # write_trial's set-up took 60 s: as long as the limit, so the recording cannot show it unreached.
    assert read.counts["replayed: set-up time limit lifted (timeout 60 s; trial.log cannot show it unreached: "
                       "the whole set-up took 60 s)"] == 2
    # Harbor did not find the trajectory in the task's directory: nothing is written for it.
    uncollected = predev_trial(tmp_path / "jobs", "server__2", task, CALLS, collected=False)
    assert read_predev_tool_calls(uncollected).interactions == REPLAYED  # type: ignore[union-attr]


@pytest.mark.unit
def test_outputs_naming_the_harness_mounts_say_so(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    found = "/home/user/predev-agent/node_modules/zod/src/v3/tests/pipeline.test.ts\n"
    calls = [ran("find / -name '*pipeline*test*'", found), ran("ls /home/user", "predev-agent-notes\n"), done()]
    trial = predev_trial(tmp_path / "jobs", "server__1", task, calls)
    (trial / "docker-compose-mounts.json").write_text(json.dumps({"services": {"main": {"volumes": [
        "/home/ubuntu/predev-agent:/home/user/predev-agent", "/home/ubuntu/.env.doppler:/home/user/.env.doppler:ro"]}}}))
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused is None
    observed = [line["observed"] for line in read.interactions if "observed" in line]
    assert observed == [{"exit_code": 0, "output": found, "harness_mounts": ["/home/user/predev-agent"]},
                        {"exit_code": 0, "output": "predev-agent-notes\n"}]
    # Without the mounts file, nothing is known of them: the outputs are compared whole.
    (trial / "docker-compose-mounts.json").unlink()
    assert "harness_mounts" not in read_predev_tool_calls(trial).interactions[4]["observed"]  # type: ignore[union-attr]


@pytest.mark.unit
def test_a_trial_of_another_agent_is_not_read(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    trial = predev_trial(tmp_path / "jobs", "server__1", task, CALLS)
    data = json.loads((trial / "artifacts" / "trajectory.json").read_text())
    data["agent"]["name"] = "other"
    (trial / "artifacts" / "trajectory.json").write_text(json.dumps(data))
    assert read_predev_tool_calls(trial) is None


PROGRAM = json.dumps({"text": "[execute_program: build]", "_programMetadata": {"toolCalls": [
    {"name": "read_code", "index": 1}, {"name": "bash", "index": 2}]}})


@pytest.mark.unit
@pytest.mark.parametrize(("made", "why"), [
    (call("execute_program", {"code": "await tools.bash({command: 'make'})"}, PROGRAM),
     "step 3: execute_program ran bash from JavaScript: only the nested calls' names are recorded"),
    (call("execute_program", {"code": "await tools.bash({command: 'make'})"}, '{"text":"[execute_program: b'),
     "step 3: execute_program (JavaScript calling the agent's tools): its answer was cut"),
    (call("bash", {"command": "apt-get install -y r-base"}, "⏳ **Command sent to background** (still running "
          "after 15.2s)\n\n**Task ID:** `task-d07aa4cb916f`"),
     "step 3: bash 'apt-get install -y r-base' went on in the background and was never seen to end"),
    (call("bash", {"command": "python3 server.py", "run_in_background": True},
          "✅ Task started in background\n**Task ID:** task-ab0fbbd5bec9"),
     "step 3: bash 'python3 server.py' went on in the background"),
    (call("write_file", {"file_path": "/app/a.py", "content": "x"}, None),
     "step 3: write_file has no answer: the run ended while it ran"),
    (call("edit_file", {"file_path": "/app/a.py", "mode": "lines", "start_line": 1, "end_line": 1,
                        "new_content": "x"}, "# Line Edit Successful"),
     "step 3: edit_file by lines or of every occurrence"),
    (call("sequential_recurse", {"task": "Finish"}, "# Sub-Agent Result\n\n**Turns:** 3\n**Tools Called:** "
          "write_file, return_result\n"),
     "step 3: sequential_recurse's sub-agent called write_file, which no later step of the trajectory calls"),
    (call("parallel_analyze", {"wave": 1, "tasks": []}, ""),
     "step 3: parallel_analyze: a tool whose effect on the machine is not recorded"),
])
def test_an_unreplayable_call_is_refused_naming_its_step(tmp_path: Path, made: dict[str, Any], why: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    trial = predev_trial(tmp_path / "jobs", "server__1", task, [ran("ls"), made, done()])
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused is not None and read.refused.startswith(why), read.refused


def set_up_took(trial: Path, seconds: float | None) -> None:
    """result.json's agent_setup lasting `seconds` (none at all for None)."""
    result = json.loads((trial / "result.json").read_text())
    if seconds is None:
        del result["agent_setup"]
    else:
        result["agent_setup"] = {"started_at": "2026-05-10T03:13:22.038060Z",
                                 "finished_at": f"2026-05-10T03:{13 + int(22.038060 + seconds) // 60:02d}:"
                                                f"{(22.038060 + seconds) % 60:09.6f}Z"}
    (trial / "result.json").write_text(json.dumps(result))


@pytest.mark.unit
@pytest.mark.parametrize(("took", "shown", "shown_2m"), [
    (45.5, "never reached: the whole set-up took 46 s", "never reached: the whole set-up took 46 s"),
    # The recorded trial's (model-extraction-relu-logits__HjbT9gs): 97 s, over the pip line's 60.
    (96.96, "trial.log cannot show it unreached: the whole set-up took 97 s",
     "never reached: the whole set-up took 97 s"),
    (None, "trial.log cannot show it unreached: result.json gives no set-up time",
     "trial.log cannot show it unreached: result.json gives no set-up time"),
])
def test_a_setup_time_limit_is_lifted_and_what_the_recording_shows_of_it_counted(
        tmp_path: Path, took: float | None, shown: str, shown_2m: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    setup = [PIP, "cd /opt && timeout -k 5 --signal=KILL 2m make && echo timeout 60 done", "mytimeout 60 x",
             "echo 932c060b > /tmp/predev-hash"]
    trial = predev_trial(tmp_path / "jobs", "server__1", task, [ran("ls"), done()], setup=setup)
    set_up_took(trial, took)
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused is None, read.refused
    # Only a `timeout` where a command starts is a limit: echo's argument and another program stay.
    assert [line["command"] for line in read.interactions[:4]] == [
        PIP_UNLIMITED, "cd /opt && make && echo timeout 60 done", "mytimeout 60 x", "echo 932c060b > /tmp/predev-hash"]
    assert {line["timeout_sec"] for line in read.interactions[:4]} == {1800.0}
    lifted = {key: n for key, n in read.counts.items() if key.startswith("replayed: set-up time limit lifted")}
    assert lifted == {f"replayed: set-up time limit lifted (timeout 60 s; {shown})": 2,
                      f"replayed: set-up time limit lifted (timeout 120 s; {shown_2m})": 1}


@pytest.mark.unit
def test_a_setup_command_with_a_time_limit_that_failed_is_refused(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    trial = predev_trial(tmp_path / "jobs", "server__1", task, [ran("ls"), done()])
    log = (trial / "trial.log").read_text().splitlines()
    at = log.index(f"Running command: {PIP}")
    log[at] = "Running command: timeout 60 pip install numpy scipy"  # no `|| true`: its failure shows
    log[at + 1] = "Command failed"
    (trial / "trial.log").write_text("\n".join(log) + "\n")
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused == (
        f"trial.log line {at + 1}: a set-up command with a time limit (timeout 60 s) ended in 'Command failed': "
        "its limit may have stopped it, and what a stopped command leaves depends on the recording machine's speed")
    # Without a limit, a failed set-up command is refused as before.
    log[at] = "Running command: pip install numpy scipy"
    (trial / "trial.log").write_text("\n".join(log) + "\n")
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused == f"trial.log line {at + 1}: a set-up command not followed by " \
        "'Command outputs captured'"


@pytest.mark.unit
def test_a_setup_not_recorded_as_expected_is_refused(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    trial = predev_trial(tmp_path / "jobs", "server__1", task, [ran("ls"), done()])
    (trial / "trial.log").write_text("Running command: echo hi\nCommand outputs captured\n")
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused is not None and "records no launch of the agent" in read.refused
    (trial / "trial.log").unlink()
    read = read_predev_tool_calls(trial)
    assert read is not None and read.refused is not None and read.refused.startswith("trial.log cannot be read")


@pytest.mark.unit
@pytest.mark.parametrize(("calls", "declared", "how"), [
    ([ran("ls")], False, "it never called return_result"),
    ([ran("ls"), done(), call("return_result", {"summary": "More to do", "done": False}, "Frame checkpointed.")],
     False, "its last return_result (step 4) says the work is not done"),
    ([ran("ls"), done(needsContinuation=True)], False, "says the work is not done"),
    ([ran("ls"), done(answer="Frame checkpointed. Summary: part one")], False, "closed a sub-agent's frame"),
    ([done(), ran("touch /app/late")], False, "it went on acting after its last return_result (step 2): bash"),
    ([done(), call("exa_search_urls", {"query": "x"}, "{}")], True, "step 2: return_result declares the work done"),
    ([ran("ls"), done(answer="[bench] double-confirm checklist returned")], True, "declares the work done"),
])
def test_return_result_is_the_claim(tmp_path: Path, calls: list[dict[str, Any]], declared: bool, how: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "server", None, tmux=False)
    read = read_predev_tool_calls(predev_trial(tmp_path / "jobs", "server__1", task, calls))
    assert read is not None and read.declared_done is declared and how in read.declared_how, read.declared_how


def _import(tmp_path: Path) -> Path:
    """Two trials imported by the CLI: one replayable and declared done, one refused."""
    dataset, jobs = tmp_path / "dataset", tmp_path / "source" / "jobs" / JOB
    task = make_machine_task(dataset, "server", None, tmux=False)
    predev_trial(jobs, "server__1", task, CALLS)
    predev_trial(jobs, "server__2", task, [call("execute_program", {"code": "x"}, PROGRAM), done()])
    assert main(["import", "harbor-jobs", str(jobs), "--dataset", str(dataset), "--out", str(tmp_path / "work")]) == 0
    [runs] = (tmp_path / "work" / "runs" / "server").iterdir()
    return runs


@pytest.mark.unit
def test_import_harbor_jobs_reads_the_collected_trajectory_and_its_model(tmp_path: Path) -> None:
    runs = _import(tmp_path)
    records = {n: json.loads((runs / str(n) / "record.json").read_text()) for n in (1, 2)}
    assert runs.name == "predev_auto__claude_haiku_4_5_20251001" and records[1]["agent_config"]["model"] == MODEL
    assert check_replayable(runs / "1" / "commands.jsonl")[:-1] == REPLAYED
    imported = records[1]["residualize"]["import"]
    assert (imported["commands"], imported["declared_done"]) == ("artifacts/trajectory.json", True)
    assert (records[1]["submitted"], records[1]["outcome"]) == (True, "failure")
    assert records[1]["residualize"]["final_state"] == {"recoverable": True, "detail": "artifacts/trajectory.json"}
    assert not (runs / "2" / "commands.jsonl").exists()
    final = records[2]["residualize"]["final_state"]
    assert not final["recoverable"] and "step 2: execute_program ran bash from JavaScript" in final["detail"]


def test_dataset_build_rebuilds_the_imported_commands_from_a_clone(tmp_path: Path) -> None:
    # Not `unit`: it makes a git repository. `dataset build` copies the trajectory, the manifest
    # and trial.log (HARBOR_TRIAL_FILES) and reads the same bytes as the import wrote.
    runs = _import(tmp_path)
    source = tmp_path / "source"
    commit = commit_folder(source)
    commands, pane = trial_commands(source, commit, f"jobs/{JOB}/server__1", HARBOR_JOBS)
    assert commands == (runs / "1" / "commands.jsonl").read_bytes() and pane is None

"""Harbor trials of a harness that logs its own events (ryanbbrown/ThinHarness-terminal-bench's
runner: ThinHarness's `agent/thinharness-events.jsonl` of OpenAI Responses requests and
responses, Pi's `agent/pi-events.jsonl` of session events), written here in those forms: read
into commands, writes and edits with the outputs the agent saw, the last response read as a claim
or a stop, unreplayable calls refused with where they were made, and imported by
`swe-residual import harbor-jobs` as machine-track runs whose commands.jsonl `dataset build`
rebuilds from the trial's files."""

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
from swe_residual.residualize.harbor.responses_tools import read_responses_tool_calls
from swe_residual.residualize.harbor.tool_calls import interactions_jsonl
from swe_residual.residualize.published.materialise import HARBOR_JOBS, trial_commands

AGENT = {"agent": "direct-openai-pairwise", "provider": "openai", "model": "gpt-5.6-sol"}
REPORT = "Nginx installed and configured.\n\n- Config test: passed\n- Access log: `/var/log/nginx/a.log`"
JOB = "2026-08-25__07-50-00"


# ThinHarness: one line per request; a response's calls are answered in the next request's input.

def bash(command: str, stdout: str = "", stderr: str = "", code: int | None = 0, *, timeout: float = 20,
         cwd: str = "/app", timed_out: bool = False, cut: bool = False, ok: bool | None = None) -> dict[str, Any]:
    content = f"stdout:\n{stdout or '(no output)'}\nstderr:\n{stderr or '(no output)'}"
    metadata = {"exit_code": code, "timed_out": timed_out, "duration_seconds": 0.04, "cwd": cwd,
                "timeout_seconds": float(timeout), "stdout_bytes": len(stdout.encode()),
                "stderr_bytes": len(stderr.encode()), "stdout_truncated": cut, "stderr_truncated": False}
    result = {"ok": code == 0 if ok is None else ok, "content": content, "metadata": metadata}
    return {"name": "bash", "arguments": {"command": command, "cwd": cwd, "timeout": timeout}, "result": result}


def tool(name: str, arguments: dict[str, Any], ok: bool = True, content: str = "done") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "result": {"ok": ok, "content": content, "metadata": {}}}


def write_thin(trial: Path, responses: list[dict[str, Any]]) -> None:
    """Each response `{"calls": [...], "text"?, "status"?}`; its calls' results go into the next
    request (the last response's nowhere: the run ended)."""
    lines = []
    pending: list[dict[str, Any]] = []
    for number, spec in enumerate(responses, start=1):
        given: Any = "Set up nginx." if number == 1 else [
            {"call_id": item["call_id"], "output": json.dumps(item["result"]), "type": "function_call_output"}
            for item in pending if item["result"] is not None]
        output: list[dict[str, Any]] = [{"type": "reasoning", "id": f"rs_{number}", "summary": [], "content": []}]
        pending = []
        for index, call in enumerate(spec["calls"]):
            item = {"arguments": json.dumps(call["arguments"]), "call_id": f"call_{number}_{index}",
                    "id": f"fc_{number}_{index}", "name": call["name"], "status": "completed", "type": "function_call"}
            output.append(item)
            pending.append({"call_id": item["call_id"], "result": call["result"]})
        if spec.get("text") is not None:
            output.append({"type": "message", "role": "assistant", "status": "completed", "phase": "final_answer",
                           "content": [{"type": "output_text", "text": spec["text"], "annotations": []}]})
        response = {"id": f"resp_{number}", "object": "response", "status": spec.get("status", "completed"),
                    "output": output, "model": "gpt-5.6-sol"}
        lines.append({"payload": {"input": given, "model": "gpt-5.6-sol", "tools": []}, "response": response,
                      "sequence": number, "usage": {"input_tokens": 10, "output_tokens": 5}})
    (trial / "agent" / "thinharness-events.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


SCRIPT = "print('hi')\nprint('old')\n"
THIN: list[dict[str, Any]] = [
    {"calls": [bash("id && . /etc/os-release && echo $ID", "uid=0(root)\ndebian\n"),
               tool("read", {"path": "/etc/nginx/nginx.conf", "offset": 1, "limit": 20, "max_chars": 4000})]},
    {"calls": [tool("write", {"path": "/app/run.py", "content": SCRIPT, "append": False}),
               tool("edit", {"edits": [
                   {"path": "/app/run.py", "old_string": "'hi'", "new_string": "'hello'", "all": False,
                    "expected_replacements": 1},
                   {"path": "/app/run.py", "old_string": "'old'", "new_string": "'new'", "all": True,
                    "expected_replacements": 1},
                   {"path": "notes.txt", "old_string": "a", "new_string": "b", "all": False,
                    "expected_replacements": 1}]}),
               tool("write", {"path": "/etc/forbidden", "content": "x", "append": False}, ok=False,
                    content="path is outside the workspace"),
               bash("python3 run.py && python3 missing.py", "hello\nnew\n",
                    "python3: can't open file '/app/missing.py'\n", 2, timeout=600),
               bash("apt-get install -y nginx", "Setting up nginx\n", "debconf: unable to initialize\n",
                    timeout=180),
               bash("seq 100000", "99999\n100000\n", cut=True, cwd="/app/sub"),
               bash("cd /nowhere", "", "", None, ok=False)]},
    {"calls": [], "text": REPORT},
]
THIN_REPLAYED = [
    {"command": "id && . /etc/os-release && echo $ID", "shell": "bash", "timeout_sec": 600.0, "cwd": "/app",
     "observed": {"exit_code": 0, "output": "uid=0(root)\ndebian\n"}},
    {"write": "/app/run.py", "content": SCRIPT},
    {"edit": "/app/run.py", "replace": [{"old": "'hi'", "new": "'hello'"}, {"old": "'old'", "new": "'new'"}]},
    {"edit": "notes.txt", "replace": [{"old": "a", "new": "b"}]},
    # Both streams printed: their interleaving is lost, the exit status is compared.
    {"command": "python3 run.py && python3 missing.py", "shell": "bash", "timeout_sec": 600.0, "cwd": "/app",
     "observed": {"exit_code": 2}},
    {"command": "apt-get install -y nginx", "shell": "bash", "timeout_sec": 600.0, "cwd": "/app",
     "observed": {"exit_code": 0}},
    # A cut output: the exit status alone.
    {"command": "seq 100000", "shell": "bash", "timeout_sec": 600.0, "cwd": "/app/sub", "observed": {"exit_code": 0}},
]


def thin_trial(job: Path, name: str, task: Path, responses: list[dict[str, Any]]) -> Path:
    trial = write_trial(job, name, task, task_name=task.name, minute=0, rewards={"reward": 0.0}, **AGENT)
    write_thin(trial, responses)
    return trial


@pytest.mark.unit
def test_thinharness_calls_are_read_in_order_with_their_outputs_and_the_claim(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "nginx", None, tmux=False)
    trial = thin_trial(tmp_path / "jobs", "nginx__1", task, THIN)
    read = read_any_tool_calls(trial)
    assert read is not None and read.refused is None, read and read.refused
    assert read.source == "agent/thinharness-events.jsonl"
    assert read.interactions == THIN_REPLAYED
    assert read.counts == {
        "observed: exit status only (output cut, or two streams whose order is lost)": 3,
        "replayed: bash": 4, "replayed: edit": 2, "replayed: write": 1,
        "skipped: bash answered with an error (never ran)": 1,
        "skipped: read (changes nothing on the machine)": 1,
        "skipped: write answered with an error (never wrote)": 1}
    assert read.declared_done and read.declared_how.startswith("sequence 3: its final message reports the work")
    (tmp_path / "commands.jsonl").write_bytes(interactions_jsonl(read.interactions))
    assert check_replayable(tmp_path / "commands.jsonl") == THIN_REPLAYED
    # A trial with no events file is not this layout.
    assert read_responses_tool_calls(write_trial(tmp_path / "jobs", "nginx__2", task, task_name="nginx", minute=0,
                                                 rewards={"reward": 0.0}, **AGENT)) is None


# Pi: its session's events; a call's result is its tool_execution_end.

def pi_call(name: str, arguments: dict[str, Any], text: str = "", error: bool = False,
            details: dict[str, Any] | None = None, answered: bool = True) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "text": text, "error": error, "details": details,
            "answered": answered}


def write_pi(trial: Path, turns: list[dict[str, Any]]) -> None:
    events: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "s1", "cwd": "/app"},
                                    {"type": "agent_start"}]
    for number, turn in enumerate(turns):
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": f"turn {number}"}]
        if turn.get("text") is not None:
            content.append({"type": "text", "text": turn["text"]})
        ends = []
        for index, call in enumerate(turn["calls"]):
            ident = f"call_{number}_{index}|fc_{number}_{index}"
            content.append({"type": "toolCall", "id": ident, "name": call["name"], "arguments": call["arguments"]})
            result: dict[str, Any] = {"content": [{"type": "text", "text": call["text"]}]}
            if call["details"] is not None:
                result["details"] = call["details"]
            if call["answered"]:
                ends.append({"type": "tool_execution_end", "toolCallId": ident, "toolName": call["name"],
                             "result": result, "isError": call["error"]})
        stop = turn.get("stop") or ("toolUse" if turn["calls"] else "stop")
        message = {"role": "assistant", "content": content, "api": "openai-responses", "stopReason": stop}
        events += [{"type": "turn_start"}, {"type": "message_start", "message": {**message, "content": []}},
                   {"type": "message_end", "message": message}, *reversed(ends)]
    (trial / "agent" / "pi-events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events))


PI: list[dict[str, Any]] = [
    {"calls": [pi_call("bash", {"command": "id && command -v apt-get"}, "uid=0(root)\n/usr/bin/apt-get\n"),
               pi_call("read", {"path": "/etc/nginx/nginx.conf"}, "1\tuser www-data;")]},
    {"calls": [pi_call("write", {"path": "/app/run.py", "content": SCRIPT}, "Successfully wrote 26 bytes"),
               pi_call("edit", {"path": "/app/run.py", "edits": [{"oldText": "'hi'", "newText": "'hello'"},
                                                                 {"oldText": "'old'", "newText": "'new'"}]},
                       "Successfully replaced 2 block(s)"),
               pi_call("edit", {"path": "/app/run.py", "edits": [{"oldText": "absent", "newText": "x"}]},
                       "Could not find the exact text", error=True),
               pi_call("bash", {"command": "grep zzz run.py", "timeout": 30},
                       "(no output)\n\nCommand exited with code 1", error=True),
               pi_call("bash", {"command": "seq 100000"}, "99999\n100000\n\n[Showing lines 98001-100000 of 100000. "
                       "Full output: /tmp/pi-bash-1.log]", details={"truncation": {"truncated": True}})]},
    {"calls": [], "text": REPORT},
]
PI_REPLAYED = [
    {"command": "id && command -v apt-get", "shell": "bash", "timeout_sec": 1800.0, "cwd": "/app",
     "observed": {"exit_code": 0, "output": "uid=0(root)\n/usr/bin/apt-get\n"}},
    {"write": "/app/run.py", "content": SCRIPT},
    {"edit": "/app/run.py", "replace": [{"old": "'hi'", "new": "'hello'"}, {"old": "'old'", "new": "'new'"}]},
    {"command": "grep zzz run.py", "shell": "bash", "timeout_sec": 600.0, "cwd": "/app",
     "observed": {"exit_code": 1, "output": ""}},
    {"command": "seq 100000", "shell": "bash", "timeout_sec": 1800.0, "cwd": "/app", "observed": {"exit_code": 0}},
]


def pi_trial(job: Path, name: str, task: Path, turns: list[dict[str, Any]]) -> Path:
    trial = write_trial(job, name, task, task_name=task.name, minute=0, rewards={"reward": 0.0}, **AGENT)
    write_pi(trial, turns)
    return trial


@pytest.mark.unit
def test_pi_calls_are_read_from_its_session_events(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "nginx", None, tmux=False)
    read = read_any_tool_calls(pi_trial(tmp_path / "jobs", "nginx__1", task, PI))
    assert read is not None and read.refused is None, read and read.refused
    assert read.source == "agent/pi-events.jsonl"
    assert read.interactions == PI_REPLAYED
    assert read.counts == {
        "observed: exit status only (output cut, or two streams whose order is lost)": 1,
        "replayed: bash": 3, "replayed: edit": 1, "replayed: write": 1,
        "skipped: edit answered with an error (never changed the file)": 1,
        "skipped: read (changes nothing on the machine)": 1}
    assert read.declared_done and read.declared_how.startswith("turn 3: its final message reports the work")
    (tmp_path / "commands.jsonl").write_bytes(interactions_jsonl(read.interactions))
    assert check_replayable(tmp_path / "commands.jsonl") == PI_REPLAYED


@pytest.mark.unit
@pytest.mark.parametrize(("form", "last", "how"), [
    ("thin", {"calls": [bash("make test", "1 failed\n", "", 2)]}, "its last response (sequence 2) called bash"),
    ("thin", {"calls": [], "text": "The tests still fail. Let me check the build output again."},
     "sequence 2: its final message ends with a next action"),
    ("thin", {"calls": [], "text": "Nginx is installed and", "status": "incomplete"},
     "its last response (sequence 2) ended with status 'incomplete', not completed"),
    ("pi", {"calls": [pi_call("bash", {"command": "make test"}, "1 failed")]}, "its last turn (2) called bash"),
    ("pi", {"calls": [], "text": "Here is what remains to do:"}, "turn 2: its final message ends announcing more"),
    ("pi", {"calls": [], "text": "Nginx is installed and", "stop": "length"},
     "its last turn (2) ended with stopReason 'length', not stop"),
])
def test_a_run_that_stopped_is_not_declared_done(tmp_path: Path, form: str, last: dict[str, Any], how: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "nginx", None, tmux=False)
    trial = (thin_trial(tmp_path / "jobs", "nginx__1", task, [THIN[0], last]) if form == "thin"
             else pi_trial(tmp_path / "jobs", "nginx__1", task, [PI[0], last]))
    read = read_responses_tool_calls(trial)
    assert read is not None
    # ThinHarness's last call has no result (no request followed it): refused as well; Pi logs a
    # call's result before the next turn.
    assert (read.refused is None) == (form == "pi" or not last["calls"]), read.refused
    assert not read.declared_done and read.declared_how.startswith(how), read.declared_how


def _gap(trial: Path) -> None:
    path = trial / "agent" / "thinharness-events.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")


@pytest.mark.unit
@pytest.mark.parametrize(("responses", "damage", "reason"), [
    ([THIN[0], {"calls": [bash("sleep 999", "", "", None, timeout=5, timed_out=True, ok=False)]}, THIN[2]], None,
     "sequence 2: bash 'sleep 999' timed out"),
    ([THIN[0], {"calls": [tool("write", {"path": "log.txt", "content": "x\n", "append": True})]}, THIN[2]], None,
     "sequence 2: write log.txt with append: the interactions have no append"),
    ([THIN[0], {"calls": [tool("edit", {"edits": [{"path": "a.py", "old_string": "x", "new_string": "y",
                                                   "all": True, "expected_replacements": 3}]})]}, THIN[2]], None,
     "sequence 2: edit of a.py replaces every occurrence"),
    ([THIN[0], {"calls": [tool("edit", {"edits": [{"path": "a.py", "old_string": "x", "new_string": "y"},
                                                  {"path": "a.py", "old_string": "q", "new_string": "r"}]},
                               ok=False)]}, THIN[2]], None,
     "sequence 2: a batch of 2 edits answered with an error"),
    ([THIN[0], {"calls": [tool("apply_patch", {"patch": "..."})]}, THIN[2]], None,
     "sequence 2: apply_patch: a tool whose effect on the machine cannot be replayed"),
    (THIN, _gap, "the requests' sequence is not 1 to 2"),
])
def test_an_unreplayable_thinharness_call_is_refused_naming_its_request(
        tmp_path: Path, responses: list[dict[str, Any]], damage: Any, reason: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "nginx", None, tmux=False)
    trial = thin_trial(tmp_path / "jobs", "nginx__1", task, responses)
    if damage is not None:
        damage(trial)
    read = read_responses_tool_calls(trial)
    assert read is not None and read.refused is not None and read.refused.startswith(reason), read and read.refused
    assert read.declared_done  # the claim is read from the last response whatever happened before it


@pytest.mark.unit
def test_a_call_the_run_never_answered_is_refused(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "nginx", None, tmux=False)
    # The run ended while `make` ran: no request carried its result.
    read = read_responses_tool_calls(thin_trial(tmp_path / "jobs", "nginx__1", task,
                                                [THIN[0], {"calls": [bash("make")]}]))
    assert read is not None and not read.declared_done
    assert read.refused == ("sequence 2: bash has no result: the run ended while it ran, and a call cut short "
                            "cannot be replayed")
    read = read_responses_tool_calls(pi_trial(tmp_path / "jobs", "nginx__2", task, [
        PI[0], {"calls": [pi_call("bash", {"command": "make"}, answered=False)]}]))
    assert read is not None and not read.declared_done
    assert read.refused is not None and read.refused.startswith("turn 2: bash has no result")
    read = read_responses_tool_calls(pi_trial(tmp_path / "jobs", "nginx__3", task, [
        {"calls": [pi_call("bash", {"command": "sleep 99", "timeout": 5}, "\n\nCommand timed out after 5 seconds",
                           error=True)]}, PI[2]]))
    assert read is not None and read.declared_done
    assert read.refused == "turn 1: bash 'sleep 99' timed out or was aborted: a command cut short cannot be replayed"


def _import(tmp_path: Path) -> Path:
    """Three trials imported by the CLI: ThinHarness declared done, Pi declared done, ThinHarness
    cut short; the predecessor's runs directory."""
    dataset, jobs = tmp_path / "dataset", tmp_path / "source" / "jobs" / JOB
    task = make_machine_task(dataset, "nginx", None, tmux=False)
    thin_trial(jobs, "nginx__1", task, THIN)
    pi_trial(jobs, "nginx__2", task, PI)
    thin_trial(jobs, "nginx__3", task, [THIN[0], {"calls": [bash("make")]}])
    assert main(["import", "harbor-jobs", str(jobs), "--dataset", str(dataset), "--out", str(tmp_path / "work")]) == 0
    [runs] = (tmp_path / "work" / "runs" / "nginx").iterdir()
    return runs


@pytest.mark.unit
def test_import_harbor_jobs_reads_the_events_files_into_commands(tmp_path: Path) -> None:
    runs = _import(tmp_path)
    records = {n: json.loads((runs / str(n) / "record.json").read_text()) for n in (1, 2, 3)}
    assert check_replayable(runs / "1" / "commands.jsonl") == THIN_REPLAYED
    assert check_replayable(runs / "2" / "commands.jsonl") == PI_REPLAYED
    for number, source in ((1, "agent/thinharness-events.jsonl"), (2, "agent/pi-events.jsonl")):
        assert (records[number]["submitted"], records[number]["outcome"]) == (True, "failure")
        imported = records[number]["residualize"]["import"]
        assert (imported["commands"], imported["declared_done"]) == (source, True)
        assert records[number]["residualize"]["final_state"] == {"recoverable": True, "detail": source}
    assert not (runs / "3" / "commands.jsonl").exists()
    final = records[3]["residualize"]["final_state"]
    assert not final["recoverable"] and "sequence 2: bash has no result" in final["detail"]


def test_dataset_build_rebuilds_the_imported_commands_from_a_clone(tmp_path: Path) -> None:
    # Not `unit`: it makes a git repository. `dataset build` copies the events files
    # (HARBOR_TRIAL_FILES) and reads the same bytes as the import wrote.
    runs = _import(tmp_path)
    source = tmp_path / "source"
    commit = commit_folder(source)
    for number in (1, 2):
        commands, pane = trial_commands(source, commit, f"jobs/{JOB}/nginx__{number}", HARBOR_JOBS)
        assert commands == (runs / str(number) / "commands.jsonl").read_bytes() and pane is None

"""Harbor trials of an agent that logs each model turn as an episode of Anthropic Messages
(ktb-openrouter: `agent/episodes/episode-N/{response.json,tool-results.json}`, long results in
`agent/persisted-tool-results/`), written here in that layout: read into one bash command per
call with the output it showed, the last episode's words read as a claim or a stop, malformed
episodes refused with the episode named, and imported by `import harbor-jobs` as machine-track
runs whose commands.jsonl `dataset build` rebuilds byte for byte from the trial's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harborjobs import commit_folder, write_trial
from taskfactory import make_machine_task

from swe_residual.dataset.errors import ConfigError
from swe_residual.dataset.states.state import check_replayable
from swe_residual.residualize.harbor.episode_tools import read_episode_tool_calls
from swe_residual.residualize.harbor.jobs import import_harbor_jobs
from swe_residual.residualize.harbor.tool_calls import interactions_jsonl
from swe_residual.residualize.published.materialise import HARBOR_JOBS, trial_commands

KTB = {"agent": "ktb-openrouter", "provider": "anthropic", "model": "claude-opus-4.6"}
PRED = "ktb_openrouter__anthropic_claude_opus_4.6"
REPORT = "The build is complete.\n\n1. **Extracted** the source to `/app/src`\n2. Installed `/usr/local/bin/tool`."
LONG = "\n".join(f"line {n}: {'x' * 60}" for n in range(400))  # over the harness's 12,000 characters


def call(command: str, output: str = "", code: int = 0, *, note: str | None = None, persist: bool = False,
         timeout: Any = None, answered: bool = True) -> dict[str, Any]:
    """One bash call and the result the harness gave (`[exit_code=N]`, a blank line, the output)."""
    return {"command": command, "output": output, "code": code, "note": note, "persist": persist,
            "timeout": timeout, "answered": answered}


def _formatted(spec: dict[str, Any]) -> str:
    header = f"[exit_code={spec['code']}" + (f"; note={spec['note']}" if spec["note"] else "") + "]"
    return f"{header}\n\n{spec['output']}" if spec["output"] else f"{header}\n\n(no output)"


def write_episodes(trial: Path, episodes: list[dict[str, Any]]) -> None:
    """Each episode `{"calls": [...], "text"?, "stop"?, "other_tool"?}` as the agent logs it."""
    for number, episode in enumerate(episodes):
        directory = trial / "agent" / "episodes" / f"episode-{number}"
        directory.mkdir(parents=True)
        (directory / "request.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Task:"}]}))
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": f"episode {number}", "signature": "c2ln"}]
        if episode.get("text") is not None:
            blocks.append({"type": "text", "text": episode["text"], "citations": None})
        results = []
        for index, spec in enumerate(episode["calls"]):
            ident = f"toolu_{number}_{index}"
            arguments: dict[str, Any] = {"command": spec["command"]}
            if spec["timeout"] is not None:
                arguments["timeout_sec"] = spec["timeout"]
            blocks.append({"type": "tool_use", "id": ident, "name": "bash", "input": arguments,
                           "caller": {"type": "direct"}})
            text = _formatted(spec)
            if spec["persist"]:
                remote = f"/tmp/ktb-agent-artifacts/episode-{number:03d}-tool-{index:02d}.txt"
                local = trial / "agent" / "persisted-tool-results" / f"episode-{number}" / f"tool-{index:02d}.txt"
                local.parent.mkdir(parents=True, exist_ok=True)
                local.write_text(text)
                text = (f"[persisted_output]\nFull output saved to {remote}\nUse `cat {remote}` to inspect the full "
                        f"result.\n\n[preview]\n{text[:1000]}\n\n... [{len(text) - 2000} chars omitted] ...\n\n"
                        f"{text[-1000:]}")
            if spec["answered"]:
                results.append({"type": "tool_result", "tool_use_id": ident, "content": text})
        if episode.get("other_tool"):
            blocks.append({"type": "tool_use", "id": f"toolu_{number}_x", "name": episode["other_tool"],
                           "input": {"path": "/app/notes.txt"}})
        stop = episode.get("stop") or ("tool_use" if episode["calls"] else "end_turn")
        response = {"id": f"gen-{number}", "content": blocks, "model": "anthropic/claude-4.6-opus-20260205",
                    "role": "assistant", "stop_reason": stop, "stop_sequence": None, "type": "message",
                    "usage": {"input_tokens": 1000, "output_tokens": 100}}
        (directory / "response.json").write_text(json.dumps(response, indent=2))
        if results:
            (directory / "tool-results.json").write_text(json.dumps(results, indent=2))


def ktb_trial(job: Path, name: str, task: Path, episodes: list[dict[str, Any]], *,
              command_timeout: int | None = 900) -> Path:
    """A trial as Harbor writes it for ktb-openrouter (no trajectory.json), with its episodes."""
    trial = write_trial(job, name, task, task_name=task.name, minute=0, rewards={"reward": 0.0}, **KTB)
    if command_timeout is not None:
        for file in ("config.json", "result.json"):
            data = json.loads((trial / file).read_text())
            config = data if file == "config.json" else data["config"]
            config["agent"]["kwargs"] = {"max_episodes": 75, "temperature": 1.0, "command_timeout": command_timeout}
            (trial / file).write_text(json.dumps(data, indent=4))
    write_episodes(trial, episodes)
    return trial


EPISODES: list[dict[str, Any]] = [
    {"calls": [call("ls -la /app", "total 0"),
               call("grep -r missing /etc/hostname", "", 1, note="no matches found")]},
    {"text": "Building now.", "other_tool": "str_replace_editor",
     "calls": [call("make -C /app/src 2>&1", LONG, persist=True),
               call("", "[stderr]\n[Harness] Empty command. Provide a real command to execute.", 1),
               call("sleep 1 && touch /app/built", timeout=60),
               call("cp /app/src/tool /usr/local/bin/tool && tool --version", "tool 1.0\n\n[stderr]\nwarning: old", 0,
                    timeout=5000)]},
    {"text": REPORT, "calls": [], "stop": "end_turn"},
]
SETUP = {"command": "mkdir -p /tmp/ktb-agent-artifacts", "shell": "bash", "timeout_sec": 30.0}
REPLAYED = [
    SETUP,
    {"command": "ls -la /app", "shell": "bash", "timeout_sec": 900.0, "observed": {"exit_code": 0, "output": "total 0"}},
    {"command": "grep -r missing /etc/hostname", "shell": "bash", "timeout_sec": 900.0,
     "observed": {"exit_code": 1, "output": ""}},
    {"command": "make -C /app/src 2>&1", "shell": "bash", "timeout_sec": 900.0,
     "observed": {"exit_code": 0, "output": LONG}},
    # Its own 60 s deadline was enough when recorded: a busier machine gets at least 600 s.
    {"command": "sleep 1 && touch /app/built", "shell": "bash", "timeout_sec": 600.0,
     "observed": {"exit_code": 0, "output": ""}},
    # Asked for 5000 s, held to the agent's command_timeout; a separate stderr joined after stdout.
    {"command": "cp /app/src/tool /usr/local/bin/tool && tool --version", "shell": "bash", "timeout_sec": 900.0,
     "observed": {"exit_code": 0, "output": "tool 1.0\nwarning: old"}},
    # The harness uploaded the long result after the episode's calls ran.
    {"write": "/tmp/ktb-agent-artifacts/episode-001-tool-00.txt", "content": f"[exit_code=0]\n\n{LONG}"},
]


@pytest.mark.unit
def test_bash_calls_are_read_in_order_with_their_outputs_and_the_claim(tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "pmars", None, tmux=False)
    trial = ktb_trial(tmp_path / "jobs", "pmars__1", task, EPISODES)
    read = read_episode_tool_calls(trial)
    assert read is not None and read.refused is None, read and read.refused
    assert read.interactions == REPLAYED
    assert read.source == "agent/episodes"
    assert read.counts == {
        "replayed: bash": 5,
        "replayed: harness set-up (mkdir -p /tmp/ktb-agent-artifacts)": 1,
        "replayed: persisted output (the harness's upload of a long result)": 1,
        "skipped: bash with an empty command (the harness ran nothing)": 1,
        "skipped: str_replace_editor (the agent runs only bash: never ran)": 1}
    assert read.declared_done and read.declared_how.startswith("episode 2: its final message reports the work")
    # The lines are what a state's commands.jsonl accepts.
    (tmp_path / "commands.jsonl").write_bytes(interactions_jsonl(read.interactions))
    assert check_replayable(tmp_path / "commands.jsonl") == REPLAYED
    # Without a command_timeout in config.json: the agent's default deadline.
    default = ktb_trial(tmp_path / "jobs", "pmars__2", task, EPISODES[:1], command_timeout=None)
    read_default = read_episode_tool_calls(default)
    assert read_default is not None and read_default.interactions[1]["timeout_sec"] == 700.0
    # A trial with no episodes is not this layout.
    assert read_episode_tool_calls(write_trial(tmp_path / "jobs", "pmars__3", task, task_name="pmars", minute=0,
                                               rewards={"reward": 0.0}, **KTB)) is None


@pytest.mark.unit
@pytest.mark.parametrize(("last", "how"), [
    # The episode budget ran out while it still called bash.
    ({"calls": [call("make test", "1 failed", 2)]}, "its last episode (1) called bash: the run stopped"),
    ({"text": "The tests still fail. Let me check the build output again.", "calls": [], "stop": "end_turn"},
     "episode 1: its final message ends with a next action ('Let me check the build output again.')"),
    ({"text": "Here is what remains to do:", "calls": [], "stop": "end_turn"},
     "episode 1: its final message ends announcing more"),
    ({"text": "The build is complete and", "calls": [], "stop": "max_tokens"},
     "its last episode (1) ended with stop_reason 'max_tokens', not end_turn"),
    ({"text": "", "calls": [], "other_tool": "str_replace_editor", "stop": "tool_use"},
     "its last episode (1) called str_replace_editor"),
])
def test_a_run_that_stopped_is_not_declared_done(tmp_path: Path, last: dict[str, Any], how: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "pmars", None, tmux=False)
    trial = ktb_trial(tmp_path / "jobs", "pmars__1", task, [EPISODES[0], last])
    read = read_episode_tool_calls(trial)
    assert read is not None and read.refused is None
    assert not read.declared_done and read.declared_how.startswith(how), read.declared_how


def _break_response(trial: Path) -> None:
    (trial / "agent" / "episodes" / "episode-1" / "response.json").write_text('{"content": [')


def _drop_episode(trial: Path) -> None:
    episode = trial / "agent" / "episodes" / "episode-1"
    for file in episode.iterdir():
        file.unlink()
    episode.rmdir()


def _drop_persisted(trial: Path) -> None:
    (trial / "agent" / "persisted-tool-results" / "episode-1" / "tool-00.txt").unlink()


def _results_not_a_list(trial: Path) -> None:
    (trial / "agent" / "episodes" / "episode-0" / "tool-results.json").write_text('{"content": "x"}')


def _no_exit_status(trial: Path) -> None:
    path = trial / "agent" / "episodes" / "episode-0" / "tool-results.json"
    results = json.loads(path.read_text())
    results[0]["content"] = "total 0"
    path.write_text(json.dumps(results))


@pytest.mark.unit
@pytest.mark.parametrize(("damage", "reason"), [
    (_break_response, "episode 1: response.json is not valid JSON"),
    (_drop_episode, "episode 1 is missing (episodes on disk: 0 to 2)"),
    (_drop_persisted, "episode 1: its persisted result agent/persisted-tool-results/episode-1/tool-00.txt cannot be read"),
    (_results_not_a_list, "episode 0: tool-results.json is not a list of tool results"),
    (_no_exit_status, "episode 0: a result without its exit status ('total 0')"),
])
def test_a_malformed_episode_is_refused_naming_it(tmp_path: Path, damage: Any, reason: str) -> None:
    task = make_machine_task(tmp_path / "dataset", "pmars", None, tmux=False)
    trial = ktb_trial(tmp_path / "jobs", "pmars__1", task, EPISODES)
    damage(trial)
    read = read_episode_tool_calls(trial)
    assert read is not None and read.refused is not None and read.refused.startswith(reason), read.refused
    # The claim is read from the last episode whatever happened before it.
    assert read.declared_done


@pytest.mark.unit
def test_a_call_the_run_never_answered_is_refused_and_an_unreadable_last_episode_claims_nothing(
        tmp_path: Path) -> None:
    task = make_machine_task(tmp_path / "dataset", "pmars", None, tmux=False)
    # Harbor's deadline ended the trial while `make` ran: no tool-results.json for that episode.
    cut = ktb_trial(tmp_path / "jobs", "pmars__1", task, [EPISODES[0], {"calls": [call("make", answered=False)]}])
    read = read_episode_tool_calls(cut)
    assert read is not None and not read.declared_done
    assert read.refused == ("episode 1: bash 'make' has no result: the run ended while it ran, and a command cut "
                            "short cannot be replayed")
    _break_response(ktb_trial(tmp_path / "jobs", "pmars__2", task, [EPISODES[0], EPISODES[2]]))
    read = read_episode_tool_calls(tmp_path / "jobs" / "pmars__2")
    assert read is not None and not read.declared_done and read.refused is not None
    assert read.declared_how == "its last episode (1) cannot be read: the claim is unknown"


def _import(tmp_path: Path) -> Path:
    """Three trials of one task imported: declared done, stopped, and cut short; the runs' directory."""
    dataset, jobs = tmp_path / "dataset", tmp_path / "source" / "jobs" / JOB
    task = make_machine_task(dataset, "pmars", None, tmux=False)
    ktb_trial(jobs, "pmars__1", task, EPISODES)
    ktb_trial(jobs, "pmars__2", task, [EPISODES[0], {"calls": [call("make test", "1 failed", 2)]}])
    ktb_trial(jobs, "pmars__3", task, [EPISODES[0], {"calls": [call("make", answered=False)]}])
    import_harbor_jobs(jobs, dataset, tmp_path / "work", progress=lambda _: None, warn=lambda _: None)
    return tmp_path / "work" / "runs" / "pmars" / PRED


JOB = "2026-04-02__03-57-51"


@pytest.mark.unit
def test_import_harbor_jobs_makes_machine_track_runs_of_the_bash_calls(tmp_path: Path) -> None:
    runs = _import(tmp_path)
    records = {n: json.loads((runs / str(n) / "record.json").read_text()) for n in (1, 2, 3)}
    assert (records[1]["submitted"], records[1]["termination"], records[1]["outcome"]) == (True, "submitted", "failure")
    assert records[1]["agent"] == "ktb-openrouter"
    imported = records[1]["residualize"]["import"]
    assert (imported["commands"], imported["declared_done"]) == ("agent/episodes", True)
    assert imported["tool_calls"]["replayed: bash"] == 5
    assert records[1]["residualize"]["final_state"] == {"recoverable": True, "detail": "agent/episodes"}
    assert check_replayable(runs / "1" / "commands.jsonl") == REPLAYED
    # The stopped run did not submit; the one cut short has no final state, and says why.
    assert (records[2]["submitted"], records[2]["termination"]) == (False, "agent_error")
    assert "without declaring the task done" in records[2]["error"]
    assert not (runs / "3" / "commands.jsonl").exists()
    final = records[3]["residualize"]["final_state"]
    assert not final["recoverable"] and "episode 1: bash 'make' has no result" in final["detail"]


def test_dataset_build_rebuilds_the_imported_commands_from_a_clone(tmp_path: Path) -> None:
    # Not `unit`: it makes a git repository. `dataset build` reads the trial from a clone at a
    # commit, only the files it needs (no request.json): the same bytes as the import wrote.
    runs = _import(tmp_path)
    source = tmp_path / "source"
    commit = commit_folder(source)
    commands, pane = trial_commands(source, commit, f"jobs/{JOB}/pmars__1", HARBOR_JOBS)
    assert commands == (runs / "1" / "commands.jsonl").read_bytes() and pane is None
    with pytest.raises(ConfigError, match="episode 1: bash 'make' has no result"):
        trial_commands(source, commit, f"jobs/{JOB}/pmars__3", HARBOR_JOBS)

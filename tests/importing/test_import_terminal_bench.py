"""`swe-residual import terminal-bench`: Terminal-Bench trial directories as Stage I runs.

The trial directories are written here as Terminal-Bench wrote the ones published in
`letta-ai/recovery-bench` and `laude-institute/terminal-bench-leaderboard`: `results.json`
(TrialResults: `task_id`, `is_resolved`, `failure_mode`, `parser_results`, times),
`commands.txt` (one Python repr of tmux keys a line, the harness's own lists around the agent's
strings), `sessions/agent.cast` (asciinema v2, `[time, "i"|"o", data]`), `panes/*.txt`,
Terminus's `agent-logs/episode-N/response.json`, and the run's `run_metadata.json`; one trial
in recovery-bench's layout, with no run metadata. The trials: a resolved one, an unresolved one
that said it was done, one whose agent timed out (and typed on while the tests ran), one with a
cast, one of a task the dataset does not have, one of an agent that ran inside one command, and
a trial that never finished.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from taskfactory import make_machine_task

from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.importing.tb_keys import read_commands_txt, read_trial_keys
from swe_residual.residualize.importing.terminal_bench import import_terminal_bench
from swe_residual.residualize.stats import render_funnel
from swe_residual.dataset.states.state import check_replayable

pytestmark = pytest.mark.unit

OPENING = ["['asciinema rec --stdin /logs/agent.cast', 'Enter']", "['clear', 'Enter']"]
TESTS = ["['asciinema rec --stdin /logs/tests.cast', 'Enter']", "['clear', 'Enter']",
         "['bash ', '/tests/run-tests.sh', 'Enter']", "['C-d']", "['C-d']"]


def _commands(*agent: Any, after_tests: tuple[Any, ...] = ()) -> str:
    """commands.txt as Terminal-Bench writes it: `repr(keys)` a line."""
    lines = OPENING + [repr(keys) for keys in agent]
    lines = lines[:2 + len(agent)] + TESTS[:3] + [repr(keys) for keys in after_tests] + TESTS[3:]
    return "\n".join(lines) + "\n"


def _stamp(minute: int, second: int = 0) -> str:
    return f"2025-07-15T00:{minute:02d}:{second:02d}.000000+00:00"


def write_trial(run: Path, task_id: str, trial_name: str, *, minute: int, resolved: bool | None,
                failure_mode: str = "unset", commands: str | None = None, cast: list[Any] | None = None,
                episodes: list[dict[str, Any]] | None = None, model_log: str | None = None,
                results: bool = True, folder: str | None = None) -> Path:
    trial = run / (task_id if folder is None else folder) / trial_name
    (trial / "panes").mkdir(parents=True)
    if results:
        (trial / "results.json").write_text(json.dumps({
            "id": f"id-{trial_name}", "trial_name": trial_name, "task_id": task_id,
            "instruction": "Do the task.", "is_resolved": resolved, "failure_mode": failure_mode,
            "parser_results": {"test_done": "passed" if resolved else "failed"} if resolved is not None else None,
            "recording_path": f"{run.name}/{task_id}/{trial_name}/sessions/agent.cast",
            "total_input_tokens": 900, "total_output_tokens": 100,
            "trial_started_at": _stamp(minute), "trial_ended_at": _stamp(minute + 9),
            "agent_started_at": _stamp(minute, 2), "agent_ended_at": _stamp(minute + 7, 2),
            "test_started_at": _stamp(minute + 8), "test_ended_at": _stamp(minute + 8, 30)}, indent=4))
    if commands is not None:
        (trial / "commands.txt").write_text(commands)
    (trial / "panes" / "pre-agent.txt").write_text("root@abc:/app#\n")
    (trial / "panes" / "post-agent.txt").write_text("root@abc:/app# ls\nroot@abc:/app#\n")
    if cast is not None:
        (trial / "sessions").mkdir()
        header = {"version": 2, "width": 160, "height": 40, "timestamp": 1752540000,
                  "env": {"SHELL": "/bin/bash", "TERM": "tmux-256color"}}
        (trial / "sessions" / "agent.cast").write_text(
            "\n".join(json.dumps(event) for event in [header, *cast]) + "\n")
    for number, answer in enumerate(episodes or []):
        episode = trial / "agent-logs" / f"episode-{number}"
        episode.mkdir(parents=True)
        (episode / "response.json").write_text(json.dumps(answer, indent=4))
        (episode / "prompt.txt").write_text("...")
        if number == 0 and model_log:
            (episode / "debug.json").write_text(json.dumps({"model": model_log, "custom_llm_provider": "openai"}))
    return trial


def _answer(keys: str, done: bool) -> dict[str, Any]:
    return {"state_analysis": "...", "explanation": "...",
            "commands": [{"keystrokes": keys, "is_blocking": True, "timeout_sec": 5}], "is_task_complete": done}


def make_runs(root: Path) -> dict[str, Path]:
    dataset = root / "dataset"
    for task_id in ("fix-permissions", "hello-world", "nginx-request-logging"):
        make_machine_task(dataset, task_id, None, tmux=False)
    runs = root / "runs"
    run = runs / "2025-07-15__00-00-00"
    run.mkdir(parents=True)
    (run / "run_metadata.json").write_text(json.dumps({
        "run_id": run.name, "dataset_name": "terminal-bench-core", "dataset_version": "0.1.1",
        "agent_name": "terminus", "model_name": "anthropic/claude-3-7-sonnet", "n_attempts": 1}))
    (run / "results.json").write_text(json.dumps({"results": [], "n_resolved": 1, "accuracy": 0.25}))
    write_trial(run, "fix-permissions", "fix-permissions.1-of-1", minute=0, resolved=True,
                commands=_commands("chmod +x process_data.sh\n", "./process_data.sh\n"))
    write_trial(run, "hello-world", "hello-world.1-of-1", minute=10, resolved=False,
                commands=_commands("echo 'Hello, world!' > hello.txt\n", ["C-c"]),
                episodes=[_answer("echo 'Hello, world!' > hello.txt\n", False), _answer("", True)])
    write_trial(run, "nginx-request-logging", "nginx-request-logging.1-of-1", minute=20, resolved=False,
                failure_mode="agent_timeout",
                commands=_commands("apt-get install -y nginx\n", after_tests=("nginx -t\n",)),
                episodes=[_answer("apt-get install -y nginx\n", False)])
    # Timed by its cast: `clear`, then the three batches; the last until the recording ends.
    write_trial(run, "hello-world", "hello-world.2-of-2", minute=30, resolved=False,
                commands=_commands("sleep 3; echo done\n", "vim notes.txt\n", ["i", "hi", "Escape", ":wq", "Enter"]),
                cast=[[0.01, "o", "root@abc:/app# "], [0.5, "i", "clear\r"], [0.52, "o", "\u001b[H\u001b[J"],
                      [2.0, "i", "sleep 3; echo done; tmux wait -S done\r"], [5.1, "o", "done\r\n"],
                      [7.25, "i", "vim notes.txt\r"], [9.0, "i", "ihi\u001b:wq\r"],
                      [12.5, "o", "root@abc:/app# "]])
    write_trial(run, "missing-task", "missing-task.1-of-1", minute=40, resolved=False,
                commands=_commands("ls\n"))
    write_trial(run, "fix-permissions", "fix-permissions.2-of-2", minute=50, resolved=False,
                commands="\n".join(OPENING + ["['source /installed-agent/setup-env.sh', 'Enter']",
                                              "['mini -m m -t \\'fix it\\' -y', 'Enter']"] + TESTS) + "\n")
    write_trial(run, "hello-world", "hello-world.3-of-3", minute=55, resolved=None, results=False,
                commands=_commands("ls\n"))
    # recovery-bench's layout: no run metadata; the agent and model from Terminus's logs.
    write_trial(runs / "gpt-4o-mini-collected", "hello-world", "hello-world.1-of-1.initial-gpt-4o-mini",
                folder="01d32ba4-hello-world", minute=58, resolved=None,
                failure_mode="parse_error", commands=_commands("touch hello.txt\n"),
                episodes=[_answer("touch hello.txt\n", True)], model_log="gpt-4o-mini")
    return {"dataset": dataset, "runs": runs}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tb")
    inputs = make_runs(root)
    trees = []
    for name in ("work", "again"):
        command = ["import", "terminal-bench", str(inputs["runs"]), "--dataset", str(inputs["dataset"]),
                   "--out", str(root / name)]
        assert cli_main(command) == 0
        trees.append({p.relative_to(root / name).as_posix(): p.read_bytes()
                      for p in sorted((root / name).rglob("*")) if p.is_file()})
    return {**inputs, "work": root / "work", "trees": trees}


def _record(work: Path, task: str, predecessor: str, attempt: int) -> dict[str, Any]:
    return json.loads((work / "runs" / task / predecessor / str(attempt) / "record.json").read_text())


def _keys(work: Path, task: str, predecessor: str, attempt: int) -> list[dict[str, Any]]:
    path = work / "runs" / task / predecessor / str(attempt) / "commands.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


TERMINUS = "terminus__anthropic_claude_3_7_sonnet"


def test_terminus_turns_are_the_trajectory_reviewers_read(imported: dict[str, Any]) -> None:
    """Each turn: its keys, what the model said, and the terminal the next prompt showed it."""
    run_dir = imported["work"] / "runs" / "hello-world" / TERMINUS / "1"
    record = json.loads((run_dir / "record.json").read_text())
    steps = json.loads((run_dir / record["trajectory"]).read_text())["steps"]
    assert record["steps"] == len(steps) == 2
    assert steps[0]["command"] == "echo 'Hello, world!' > hello.txt"
    assert steps[0]["output"] == "state: ...\nplan: ...\n--- the terminal afterwards ---\n..."
    # The last turn: the recorded post-agent pane is what it left.
    assert steps[1]["output"].endswith("declared the task complete\n--- the terminal afterwards ---\n"
                                       "root@abc:/app# ls\nroot@abc:/app#")
    # A trial with no Terminus logs has no trajectory.
    assert _record(imported["work"], "fix-permissions", TERMINUS, 1)["trajectory"] is None


def test_a_resolved_trial(imported: dict[str, Any]) -> None:
    record = _record(imported["work"], "fix-permissions", TERMINUS, 1)
    assert [record[k] for k in ("termination", "submitted", "outcome", "reward")] == ["submitted", True, "success", 1.0]
    assert record["tests"] == {"test_done": "passed"}
    assert record["agent"] == "terminus"
    block = record["residualize"]
    assert block["agent_spec"] == "terminal-bench:terminus+anthropic/claude-3-7-sonnet"
    assert block["import"]["trial"] == "2025-07-15__00-00-00/fix-permissions/fix-permissions.1-of-1"
    assert block["import"]["task_version"] == "terminal-bench-core@0.1.1"
    assert block["import"]["date"] == "2025-07-15T00:09:00Z"
    assert block["import"]["pane"] == "panes/post-agent.txt"
    # The harness's own keys (asciinema, clear, the tests) are not the agent's.
    assert _keys(imported["work"], "fix-permissions", TERMINUS, 1) == [
        {"keystrokes": "chmod +x process_data.sh\n"}, {"keystrokes": "./process_data.sh\n"}]
    assert block["source"]["timing"] == "untimed: no sessions/agent.cast"


def test_an_unresolved_trial_that_declared_completion(imported: dict[str, Any]) -> None:
    record = _record(imported["work"], "hello-world", TERMINUS, 1)
    assert [record[k] for k in ("termination", "submitted", "outcome", "reward")] == ["submitted", True, "failure", 0.0]
    assert record["residualize"]["source"]["declared_complete"] is True
    assert record["residualize"]["source"]["episodes"] == 2
    # A key name stays an entry of its own, so that tmux still reads it as that key.
    assert _keys(imported["work"], "hello-world", TERMINUS, 1) == [
        {"keystrokes": "echo 'Hello, world!' > hello.txt\n"}, {"keystrokes": "C-c"}]


def test_a_trial_whose_agent_timed_out(imported: dict[str, Any]) -> None:
    record = _record(imported["work"], "nginx-request-logging", TERMINUS, 1)
    assert [record[k] for k in ("termination", "submitted", "outcome")] == ["time_limit", False, "failure"]
    assert record["error"] == "failure_mode: agent_timeout"
    # What it typed while the tests ran is not part of the state the tests saw.
    assert _keys(imported["work"], "nginx-request-logging", TERMINUS, 1) == [{"keystrokes": "apt-get install -y nginx\n"}]
    assert record["residualize"]["source"]["typed_after_tests"] == 1
    assert record["durations"] == {"agent_sec": 420.0, "total_sec": 540.0}


def test_a_trial_timed_by_its_cast(imported: dict[str, Any]) -> None:
    keys = _keys(imported["work"], "hello-world", TERMINUS, 2)
    # Each batch's wait: from its burst of typed input to the next one (the last: to the end).
    assert keys == [{"keystrokes": "sleep 3; echo done\n", "duration_sec": 5.25},
                    {"keystrokes": "vim notes.txt\n", "duration_sec": 1.75},
                    {"keystrokes": "ihi", "duration_sec": 0.0}, {"keystrokes": "Escape", "duration_sec": 0.0},
                    {"keystrokes": ":wq\n", "duration_sec": 3.5}]
    record = _record(imported["work"], "hello-world", TERMINUS, 2)
    assert record["residualize"]["import"]["commands"] == "commands.txt + sessions/agent.cast"
    assert record["residualize"]["source"]["timing"] == "cast"


def test_problems_are_listed_and_counted_never_fatal(imported: dict[str, Any]) -> None:
    config = json.loads((imported["work"] / "generate.json").read_text())
    block = config["import"]
    assert block["unknown_tasks"] == {"missing-task": 1}
    assert block["trials"] == 8 and block["runs"] == 6
    problems = block["problems"]
    assert any(p.startswith("2025-07-15__00-00-00/missing-task/missing-task.1-of-1: task missing-task is not in")
               for p in problems)
    assert any(p.startswith("2025-07-15__00-00-00/hello-world/hello-world.3-of-3: no results.json")
               for p in problems)
    assert len(problems) == 2
    # The installed agent's trial (mini-swe-agent, launched by `mini`) has no cast to read its
    # actions from: it is imported without a final state, and says why.
    assert block["no_final_state"] == 1
    assert block["no_final_state_reasons"] == {"mini-swe-agent: no sessions/agent.cast": 1}
    record = _record(imported["work"], "fix-permissions", "mini_swe_agent__m", 1)
    assert record["residualize"]["final_state"]["recoverable"] is False
    assert "mini-swe-agent: no sessions/agent.cast" in record["residualize"]["final_state"]["detail"]


def test_recovery_bench_layout_agent_and_model_from_terminus_logs(imported: dict[str, Any]) -> None:
    record = _record(imported["work"], "hello-world", "terminus__openai_gpt_4o_mini", 1)
    # parse_error: the tests ran but their output could not be graded: submitted, no verdict.
    assert [record[k] for k in ("termination", "submitted", "outcome", "reward")] == [
        "submitted", True, "infra_error", None]
    assert "task_version" not in record["residualize"]["import"]


def test_the_same_input_gives_the_same_bytes(imported: dict[str, Any]) -> None:
    work, again = imported["trees"]
    assert work == again and "generate.json" in work


def test_imported_keystrokes_load_as_a_state_would(imported: dict[str, Any]) -> None:
    for path in (imported["work"] / "runs").rglob("commands.jsonl"):
        assert check_replayable(path)


def test_stage_ii_reads_imported_trials(imported: dict[str, Any]) -> None:
    assert cli_main(["residualize", "filter", str(imported["work"])]) == 0
    filtered = json.loads((imported["work"] / "filter.json").read_text())
    rules = {(e["task"], e["candidate"]): e["rule"] for e in filtered["excluded"]}
    assert rules[("fix-permissions", f"{TERMINUS}-a1")] == "not_failing"
    assert rules[("fix-permissions", "mini_swe_agent__m-a1")] == "no_final_state"
    assert filtered["no_final_state_reasons"] == {"mini-swe-agent: no sessions/agent.cast": 1}
    assert rules[("nginx-request-logging", f"{TERMINUS}-a1")] == "not_submitted"
    assert rules[("hello-world", "terminus__openai_gpt_4o_mini-a1")] == "infra_failure"
    assert [(c["task"], c["candidate"]) for c in filtered["candidates"]] == [
        ("hello-world", f"{TERMINUS}-a1"), ("hello-world", f"{TERMINUS}-a2")]


def test_review_shows_the_request_the_run_was_given_and_its_turns(tmp_path: Path) -> None:
    """A run made on another version of the task: its reviewers see both requests, and its turns."""
    inputs = make_runs(tmp_path)
    same = inputs["runs"] / "2025-07-15__00-00-00" / "hello-world" / "hello-world.2-of-2" / "results.json"
    results = json.loads(same.read_text())
    same.write_text(json.dumps({**results, "instruction": "Keep the ticker running.\n"}))
    work = tmp_path / "work"
    import_terminal_bench(inputs["runs"], inputs["dataset"], work, progress=lambda _: None, warn=lambda _: None)
    assert cli_main(["residualize", "filter", str(work)]) == 0
    assert cli_main(["review", str(work)]) == 0
    packet = (work / "review" / "hello-world" / f"{TERMINUS}-a1.md").read_text()
    given = packet.split("## The request the run was given (it differs from the task's)\n", 1)[1]
    assert "-Do the task.\n+Keep the ticker running." in given
    assert "declared the task complete" in packet.split("## Trajectory", 1)[1]
    page = (work / "review" / "hello-world" / f"{TERMINUS}-a1.html").read_text()
    assert "The request the run was given" in page and "+Keep the ticker running." in page
    # The same request as the task's: no such section.
    assert "The request the run was given" not in (work / "review" / "hello-world" / f"{TERMINUS}-a2.md").read_text()


def test_no_trial_of_the_dataset_stops_with_a_reason(tmp_path: Path) -> None:
    inputs = make_runs(tmp_path)
    only_missing = tmp_path / "only"
    write_trial(only_missing, "missing-task", "missing-task.1-of-1", minute=0, resolved=False,
                commands=_commands("ls\n"))
    with pytest.raises(ConfigError, match="none of the 1 readable trial"):
        import_terminal_bench(only_missing, inputs["dataset"], tmp_path / "w", progress=lambda _: None,
                              warn=lambda _: None)
    with pytest.raises(ConfigError, match="no Terminal-Bench trial directories"):
        import_terminal_bench(inputs["dataset"], inputs["dataset"], tmp_path / "w2", progress=lambda _: None,
                              warn=lambda _: None)


def test_a_trial_of_a_task_the_dataset_cannot_load_is_not_counted_as_a_task_it_lacks(tmp_path: Path) -> None:
    """A broken task folder must not shrink "runs of the dataset's tasks" into "tasks not in it"."""
    dataset = tmp_path / "dataset"
    for task_id in ("hello-world", "broken-task"):
        make_machine_task(dataset, task_id, None, tmux=False)
    (dataset / "broken-task" / "task.toml").write_text("[task\n")  # not TOML
    runs = tmp_path / "runs" / "collected"
    for task_id in ("hello-world", "broken-task", "missing-task"):
        write_trial(runs, task_id, f"{task_id}.1-of-1.initial", folder=f"0a1b2c3d-{task_id}", minute=0,
                    resolved=False, commands=_commands("ls\n"), episodes=[_answer("ls\n", True)],
                    model_log="gpt-4o-mini")
    warnings: list[str] = []
    import_terminal_bench(runs, dataset, tmp_path / "work", progress=lambda _: None, warn=warnings.append)
    block = json.loads((tmp_path / "work" / "generate.json").read_text())["import"]
    assert block["trials"] == 3 and block["runs"] == 1
    assert block["unknown_tasks"] == {"missing-task": 1}
    assert block["unloadable_tasks"] == {"broken-task": 1}
    assert any(p.startswith("0a1b2c3d-broken-task/broken-task.1-of-1.initial: task broken-task is in ")
               and "cannot be loaded" in p for p in block["problems"])
    assert any("dataset task broken-task cannot be loaded" in line for line in warnings)
    funnel = {"runs": 3, "runs_of_tasks_not_in_tb2": 1, "runs_of_tb2_tasks": 1, "runs_of_unloadable_tasks": 1}
    assert "  runs of the dataset's tasks that could not be loaded (not imported): 1" in render_funnel(funnel)


def test_commands_txt_harness_lines_and_agent_strings(tmp_path: Path) -> None:
    """The harness's lists are left out; the same text typed by the agent (a string) is kept."""
    path = tmp_path / "commands.txt"
    path.write_text(textwrap.dedent("""\
        ['asciinema rec --stdin /logs/agent.cast', 'Enter']
        ['clear', 'Enter']
        'clear\\n'
        'bash /tests/run-tests.sh\\n'
        'C-d'
        ['C-d']
        ['bash ', '/tests/run-tests.sh', 'Enter']
        """))
    batches, after, why = read_commands_txt(path)
    assert why is None and after == 0
    assert batches == [["clear\n"], ["bash /tests/run-tests.sh\n"], ["C-d"]]
    path.write_text("['asciinema rec --stdin /logs/agent.cast', 'Enter']\nnot a repr\n")
    assert read_trial_keys(tmp_path) == "commands.txt line 2 is not a repr of tmux keys"


def test_a_cast_that_does_not_match_leaves_the_keystrokes_untimed(tmp_path: Path) -> None:
    trial = write_trial(tmp_path, "t", "t.1-of-1", minute=0, resolved=False, commands=_commands("ls\n", "pwd\n"),
                        cast=[[0.5, "i", "clear\r"], [1.0, "i", "ls\r"], [2.0, "i", "whoami\r"]])
    keys = read_trial_keys(trial)
    assert not isinstance(keys, str)
    assert keys.timing == "untimed: agent.cast: typed burst 2 is not batch 2 of commands.txt"
    assert all("duration_sec" not in entry for entry in keys.interactions)

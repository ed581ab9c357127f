"""Terminal-Bench trials of mini-swe-agent: its actions read back from the recorded terminal.

The casts are written here by hand as mini-swe-agent 1.x printed its run into Terminal-Bench's
160-column tmux pane (asciinema v2 "o" events): its banner, the System and User messages (role
headers in bold green), a rule before each step, rich's spinner ("Waiting for the LM to
respond..." redrawn after `\\r ESC[2K`, erased on stop with a newline, `ESC[1A`, `ESC[2K`), the
step header in red, the model's reply wrapped by rich at 160 columns on word boundaries (a
wrapped row keeps its trailing space), mini's answer (`<returncode>`, `<output>`), a LiteLLM log
record with its traceback written in between, and "Saved trajectory to" before the shell's
prompt comes back. The trials: one that declared completion (a heredoc, a wrapped line, a
format error, an output elided by mini's template), one that stopped without declaring it, one
whose action has a row filling the width with no space (undecidable: refused), one whose action
timed out, and one where mini never started.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from taskfactory import make_machine_task

from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.states.state import check_replayable
from swe_residual.dataset.states.tool_calls import output_divergence
from swe_residual.residualize.importing.cast_screen import screen_rows
from swe_residual.residualize.importing.rich_unwrap import break_kind, cell_len, unwrap
from swe_residual.residualize.importing.tb_installed import read_installed_run
from swe_residual.residualize.importing.tb_mini import launched_model, read_mini_printout
from swe_residual.residualize.importing.terminal_bench import import_terminal_bench

pytestmark = pytest.mark.unit

GREEN_USER = "\x1b[1;32mUser\x1b[0m:"
RULE = "\x1b[92m" + "─" * 160 + "\x1b[0m"
SPIN = "\x1b[32m⠋\x1b[0m Waiting for the LM to respond..."
SPIN_STOP = SPIN + "\r\n\x1b[?25h\r\x1b[1A\x1b[2K"
LITELLM = ("\x1b[92m04:12:57 - LiteLLM:ERROR\x1b[0m: litellm_logging.py:4483 - Error creating standard logging object\r\n"
           "Traceback (most recent call last):\r\n  File \"proxy_server.py\", line 74, in <module>\r\n"
           "    import backoff\r\nModuleNotFoundError: No module named 'backoff'\r\n\r\n"
           "During handling of the above exception, another exception occurred:\r\n\r\n"
           "Traceback (most recent call last):\r\n  File \"proxy_server.py\", line 80, in <module>\r\n"
           "ImportError: Missing dependency No module named 'backoff'\r\n")
# A source line of 156 + 22 columns: rich breaks it after the space that ends column 156.
LONG_HEAD = "echo " + "a" * 150 + " "
LONG_TAIL = "tail-word >> notes.txt"
OPENING = ["['asciinema rec --stdin /logs/agent.cast', 'Enter']", "['clear', 'Enter']",
           "['source /installed-agent/setup-env.sh', 'Enter']",
           "[\"source /installed-agent/install-agent.sh && echo 'INSTALL_SUCCESS'\", 'Enter']"]
TESTS = ["['asciinema rec --stdin /logs/tests.cast', 'Enter']", "['clear', 'Enter']",
         "['bash ', '/tests/run-tests.sh', 'Enter']", "['C-d']", "['C-d']"]
LAUNCH = "mini -m anthropic/claude-sonnet-4-0 -t 'Fix it.' -y --exit-immediately"


def step(number: int, reply: list[str], answer: list[str], *, log_in_reply: bool = False) -> str:
    """One step as mini printed it: rule, spinner, header, reply, User, answer (rows, CRLF)."""
    printed = RULE + "\r\n\x1b[?25l" + (SPIN + "\r\x1b[2K") * 3 + "\r\n"
    printed += (f"\x1b[1;31mmini-swe-agent\x1b[0m\x1b[31m (step \x1b[0m\x1b[1;31m{number}\x1b[0m\x1b[31m, "
                f"\x1b[0m\x1b[1;31m$0.0{number}\x1b[0m\x1b[31m):\x1b[0m\r\n")
    printed += SPIN + "\r\x1b[2K"
    rows = "\r\n".join(reply) + "\r\n"
    if log_in_reply:  # the log thread wrote over a spinner frame, mid-reply
        middle = len(reply) // 2
        rows = "\r\n".join(reply[:middle]) + "\r\n" + SPIN + LITELLM + "\r\n".join(reply[middle:]) + "\r\n"
    printed += rows + SPIN + "\r\x1b[2K" + SPIN_STOP
    return printed + "\r\n" + GREEN_USER + "\r\n" + "\r\n".join(answer) + "\r\n"


def printout(*steps: str, ending: str = "") -> str:
    banner = ("root@abc:/app# " + LAUNCH + "; tmux wait -S done\r\n\x1b[?2004l\r"
              "👋 This is \x1b[1;32mmini-swe-agent\x1b[0m version \x1b[1;32m1.7\x1b[0m\x1b[1;32m.\x1b[0m"
              "\x1b[1;32m0\x1b[0m.\r\n\x1b[?12l\x1b[?25h\r\n\x1b[1;32mSystem\x1b[0m:\r\nYou are a helpful assistant.\r\n"
              "\r\n" + GREEN_USER + "\r\nPlease solve this issue: Fix it.\r\n")
    end = ending + "Saved trajectory to '/root/.config/mini-swe-agent/last_mini_run.traj.json'\r\n"
    return banner + "".join(steps) + LITELLM + end + "\x1b[?2004hroot@abc:/app# "


def reply(*action: str, thought: str = "THOUGHT: I look first.") -> list[str]:
    return [thought, "", "```bash", *action, "```"]


def ran(code: int, *output: str) -> list[str]:
    return [f"<returncode>{code}</returncode>", "<output>", *output, "</output>"]


SUBMIT = step(9, reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", thought="THOUGHT: Done."), [""])


def write_trial(run: Path, task_id: str, name: str, *, resolved: bool | None, printed: str | None,
                failure_mode: str = "unset", minute: int = 0) -> Path:
    trial = run / task_id / name
    (trial / "sessions").mkdir(parents=True)
    stamp = f"2025-08-15T00:{minute:02d}:00.000000+00:00"
    (trial / "results.json").write_text(json.dumps({
        "trial_name": name, "task_id": task_id, "instruction": "Fix it.", "is_resolved": resolved,
        "failure_mode": failure_mode, "parser_results": None, "trial_started_at": stamp, "trial_ended_at": stamp}))
    (trial / "commands.txt").write_text("\n".join(OPENING + [repr([LAUNCH, "Enter"])] + TESTS) + "\n")
    if printed is not None:
        header = {"version": 2, "width": 160, "height": 40, "timestamp": 1755216000}
        # Events cut anywhere, even inside an escape sequence, as asciinema records them.
        events = [[0.1 * n, "o", printed[start:start + 97]] for n, start in enumerate(range(0, len(printed), 97))]
        (trial / "sessions" / "agent.cast").write_text(
            "\n".join(json.dumps(line) for line in [header, *events]) + "\n")
    return trial


def make_runs(root: Path) -> dict[str, Path]:
    dataset = root / "dataset"
    for task_id in ("fix-git", "nginx-request-logging", "hello-world"):
        make_machine_task(dataset, task_id, None, tmux=False)
    run = root / "runs" / "2025-08-15__00-00-00"
    run.mkdir(parents=True)
    (run / "run_metadata.json").write_text(json.dumps({
        "run_id": run.name, "dataset_name": "terminal-bench-core", "dataset_version": "0.1.1",
        "agent_name": "mini-swe-agent", "model_name": "anthropic/claude-sonnet-4-0"}))
    declared = printout(
        step(1, reply("ls -la"), ran(0, "total 0", "-rw-r--r-- 1 root root 0 Aug 15 00:00 a.txt")),
        step(2, reply("cat <<'EOF' > /app/notes.txt", "first line", "  indented\tline", "EOF"), ran(0, ""),
             log_in_reply=True),
        step(3, ["THOUGHT: two blocks.", "```bash", "ls", "```", "```bash", "pwd", "```"],
             ["Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
              "If you want to end the task, ..."]),
        step(4, reply("echo tail >> notes.txt", thought=LONG_HEAD + "\r\n" + LONG_TAIL),
             ran(1, "sh: 1: cannot create notes.txt: Permission denied")),
        step(5, reply("seq 1 100000"), ["<returncode>0</returncode><warning>", "The output of your last command was too long.",
                                        "</warning><output_head>", "1", "</output_head>"]),
        SUBMIT)
    write_trial(run, "fix-git", "fix-git.1-of-1", resolved=False, printed=declared)
    stopped = printout(step(1, reply("ls"), ran(0, "a.txt")),
                       ending="\r\n" + GREEN_USER + "\r\nAn error occurred.\r\n")
    write_trial(run, "hello-world", "hello-world.1-of-1", resolved=False, printed=stopped, minute=10)
    # A heredoc line longer than the pane: wrapped, or a line that ended with a space?
    undecidable = printout(step(1, reply("cat <<'EOF' > notes.txt", LONG_HEAD, LONG_TAIL, "EOF"), ran(0, "")), SUBMIT)
    write_trial(run, "nginx-request-logging", "nginx-request-logging.1-of-1", resolved=False, printed=undecidable,
                minute=20)
    timed_out = printout(step(1, reply("sleep 100"), [
        "The last command <command>sleep 100</command> timed out and has been killed.",
        "The output of the command was:", " <output>", "", "</output>"]), SUBMIT)
    write_trial(run, "hello-world", "hello-world.2-of-2", resolved=False, printed=timed_out, minute=30)
    write_trial(run, "fix-git", "fix-git.2-of-2", resolved=None, failure_mode="unset", minute=40,
                printed="root@abc:/app# " + LAUNCH + "\r\nbash: mini: command not found\r\n\x1b[?2004hroot@abc:/app# ")
    return {"dataset": dataset, "runs": root / "runs"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("mini")
    inputs = make_runs(root)
    work = root / "work"
    assert cli_main(["import", "terminal-bench", str(inputs["runs"]), "--dataset", str(inputs["dataset"]),
                     "--out", str(work)]) == 0
    return {**inputs, "work": work}


PREDECESSOR = "mini_swe_agent__anthropic_claude_sonnet_4_0"


def _run_dir(work: Path, task: str, attempt: int) -> Path:
    return work / "runs" / task / PREDECESSOR / str(attempt)


def _record(work: Path, task: str, attempt: int) -> dict[str, Any]:
    return json.loads((_run_dir(work, task, attempt) / "record.json").read_text())


def test_a_declared_run_becomes_tool_call_lines(imported: dict[str, Any]) -> None:
    run_dir = _run_dir(imported["work"], "fix-git", 1)
    lines = [json.loads(line) for line in (run_dir / "commands.jsonl").read_text().splitlines()]
    observed_ls = {"exit_code": 0, "output": "total 0\n-rw-r--r-- 1 root root 0 Aug 15 00:00 a.txt\n",
                   "printed_by": "rich"}
    assert lines == [
        {"command": "ls -la", "shell": "sh", "cwd": "/app", "observed": observed_ls},
        # The heredoc whole, though a log record and a spinner frame were printed inside it.
        {"command": "cat <<'EOF' > /app/notes.txt\nfirst line\n  indented\tline\nEOF", "shell": "sh", "cwd": "/app",
         "observed": {"exit_code": 0, "output": "\n", "printed_by": "rich"}},
        # Step 3 ran nothing (two bash blocks); a wrapped row of step 4's thought does not touch its action.
        {"command": "echo tail >> notes.txt", "shell": "sh", "cwd": "/app",
         "observed": {"exit_code": 1, "output": "sh: 1: cannot create notes.txt: Permission denied\n",
                      "printed_by": "rich"}},
        # Its output was elided by mini's template: the exit status alone is compared.
        {"command": "seq 1 100000", "shell": "sh", "cwd": "/app", "observed": {"exit_code": 0}},
    ]
    check_replayable(run_dir / "commands.jsonl")
    record = _record(imported["work"], "fix-git", 1)
    assert [record[k] for k in ("agent", "termination", "submitted", "outcome")] == [
        "mini-swe-agent", "submitted", True, "failure"]
    block = record["residualize"]
    assert block["agent_spec"] == "terminal-bench:mini-swe-agent+anthropic/claude-sonnet-4-0"
    assert block["import"]["declared_done"] is True
    assert block["import"]["commands"] == "sessions/agent.cast (mini-swe-agent's actions as it printed them)"
    assert block["import"]["tool_calls"] == {
        "no action: a reply without exactly one bash block": 1,
        "output not kept: elided by mini's template (over 10000 characters)": 1,
        "replayed: action": 4, "skipped: the submission echo": 1}
    assert block["source"]["actions"] == 5 and block["source"]["launch"] == LAUNCH
    steps = json.loads((run_dir / record["trajectory"]).read_text())["steps"]
    assert [s["action"] for s in steps] == ["command", "command", "message", "command", "command", "command"]
    assert steps[0]["output"].startswith("THOUGHT: I look first.\n\n```bash\nls -la\n```\n--- mini-swe-agent answered")
    assert steps[3]["output"].startswith(LONG_HEAD + LONG_TAIL + "\n")  # the reviewers read wraps joined


def test_a_run_that_stopped_without_declaring_is_not_submitted(imported: dict[str, Any]) -> None:
    record = _record(imported["work"], "hello-world", 1)
    assert [record[k] for k in ("termination", "submitted")] == ["agent_error", False]
    assert record["error"] == "failure_mode: unset; mini-swe-agent stopped without declaring the task done"
    assert record["residualize"]["import"]["declared_done"] is False


def test_an_undecidable_wrap_in_an_action_is_refused_with_its_reason(imported: dict[str, Any]) -> None:
    record = _record(imported["work"], "nginx-request-logging", 1)
    assert record["submitted"] is True  # it declared completion; only its actions are unknown
    final_state = record["residualize"]["final_state"]
    assert final_state["recoverable"] is False
    assert final_state["reason"] == "mini-swe-agent: its action depends on an undecidable line break"
    assert ("row 5 of the reply (156 of 160 columns, ending 'aaaaaaaaaaaaaaaaaaaaaaa ') may be wrapped or a line "
            "that ended with spaces, before 'tail-word >> notes.txt'") in final_state["detail"]
    assert not (_run_dir(imported["work"], "nginx-request-logging", 1) / "commands.jsonl").exists()


def test_a_timed_out_action_and_a_run_that_never_started(imported: dict[str, Any]) -> None:
    timed_out = _record(imported["work"], "hello-world", 2)["residualize"]["final_state"]
    assert timed_out["reason"] == "mini-swe-agent: the action timed out and mini killed its shell after 30 s"
    never = _record(imported["work"], "fix-git", 2)
    assert never["termination"] == "infra_error"
    assert never["error"] == "failure_mode: unset; mini-swe-agent never started (no banner of it in sessions/agent.cast)"
    assert never["residualize"]["final_state"]["reason"] == (
        "mini-swe-agent: mini-swe-agent never started (no banner of it in sessions/agent.cast)")


def test_stage_ii_counts_each_reason(imported: dict[str, Any]) -> None:
    block = json.loads((imported["work"] / "generate.json").read_text())["import"]
    assert block["installed_agents"] == {"mini-swe-agent": 5}
    assert block["no_final_state_reasons"] == {
        "mini-swe-agent: its action depends on an undecidable line break": 1,
        "mini-swe-agent: mini-swe-agent never started (no banner of it in sessions/agent.cast)": 1,
        "mini-swe-agent: the action timed out and mini killed its shell after 30 s": 1}
    assert cli_main(["residualize", "filter", str(imported["work"])]) == 0
    filtered = json.loads((imported["work"] / "filter.json").read_text())
    assert [(c["task"], c["candidate"]) for c in filtered["candidates"]] == [("fix-git", f"{PREDECESSOR}-a1")]
    assert filtered["no_final_state_reasons"] == {
        "mini-swe-agent: its action depends on an undecidable line break": 1,
        "mini-swe-agent: the action timed out and mini killed its shell after 30 s": 1}


def test_the_registry_reads_only_a_launch_it_knows(tmp_path: Path) -> None:
    trial = tmp_path / "t"
    trial.mkdir()
    (trial / "commands.txt").write_text("\n".join(OPENING + [repr(["openhands --task 'x'", "Enter"])] + TESTS))
    assert read_installed_run(trial) is None
    assert launched_model(LAUNCH) == "anthropic/claude-sonnet-4-0"


@pytest.mark.parametrize(("row", "following", "kind"), [
    (LONG_HEAD, LONG_TAIL, "wrap"),  # ends with a space; the next word would not have fitted (or a
                                     # line that ended with a space: open to both readings)
    ("short line ", "next", "line"),  # a line that ended with a space: the next word fitted
    ("x" * 120, "y", "line"),  # rich never breaks where the text still fits
    ("b" * 160, "c", "undecidable"),  # a folded word, or a line of exactly the width
    ("中" * 78 + " ", "中中", "wrap"),  # 157 cells, a word of 4: wide characters count twice
    ("中" * 79 + "x", "中", "undecidable"),  # 159 cells + 2 could not fit: perhaps folded before it
])
def test_rich_breaks(row: str, following: str, kind: str) -> None:
    assert break_kind(row, following, 160) == kind


def test_unwrap_and_cells() -> None:
    assert cell_len("中a") == 3
    assert unwrap(["short ", "next", "x" * 120], 160).text == "short \nnext\n" + "x" * 120
    wrapped = unwrap(["x", LONG_HEAD, LONG_TAIL], 160)
    assert wrapped.text is None and "row 2 (156 of 160 columns" in (wrapped.undecidable or "")
    refused = unwrap(["b" * 160, "c"], 160)
    assert refused.text is None and "row 1" in (refused.undecidable or "")


def test_the_screen_drops_what_a_spinner_erased() -> None:
    printed = "text\r\n" + SPIN + "\r\x1b[2K" + SPIN_STOP + "\r\nnext\r\n"
    assert screen_rows(printed) == ["text", "", "next", ""]


def test_an_output_printed_by_rich_is_compared_as_rich_printed_it() -> None:
    observed = {"exit_code": 0, "output": "a       b\n10%50%done\n", "printed_by": "rich"}
    assert output_divergence(observed, 0, "a\tb\n10%\r50%\rdone\n") is None
    assert output_divergence({**observed, "printed_by": None}, 0, "a\tb\n10%\r50%\rdone\n") is not None


@pytest.mark.parametrize(("action", "refused"), [
    ("echo 'a:b:c ✓ ─'", None),  # no emoji: as printed
    ("echo '✅ done'", "its action holds an emoji, which rich may have printed for an emoji code: '✅'"),
    ("cat <<'EOF' > Makefile\nall:\n        cc -o x x.c\nEOF",
     "its action writes a Makefile with lines indented by 8 spaces: rich printed tabs as spaces"),
])
def test_what_rich_may_have_printed_otherwise_is_refused(action: str, refused: str | None) -> None:
    rows = screen_rows(printout(step(1, reply(*action.split("\n")), ran(0, "")), SUBMIT))
    run = read_mini_printout(rows, 160, "/app")
    assert run.refused == (f"step 1: {refused}" if refused else None)
    assert run.declared_complete is True


def test_wraps_taken_on_trust_are_counted_and_a_heredoc_decides_its_closing_row(tmp_path: Path) -> None:
    inputs = make_runs(tmp_path)
    work = tmp_path / "trusted"
    import_terminal_bench(inputs["runs"], inputs["dataset"], work, trust_wraps=True,
                          progress=lambda _: None, warn=lambda _: None)
    block = json.loads((work / "generate.json").read_text())["import"]
    assert block["trust_wraps"] is True and block["command"].endswith(" --trust-wraps")
    run_dir = _run_dir(work, "nginx-request-logging", 1)
    lines = [json.loads(line) for line in (run_dir / "commands.jsonl").read_text().splitlines()]
    assert lines[0]["command"] == f"cat <<'EOF' > notes.txt\n{LONG_HEAD}{LONG_TAIL}\nEOF"
    record = json.loads((run_dir / "record.json").read_text())
    assert record["residualize"]["import"]["tool_calls"]["wraps in actions taken on trust"] == 1
    # The heredoc's last line ended with a space, and its `EOF` would not have fitted after it:
    # only the line-end reading closes the heredoc.
    spaced = ["cat <<'EOF' > notes.txt", "x" * 158 + " ", "EOF"]
    run = read_mini_printout(screen_rows(printout(step(1, reply(*spaced), ran(0, "")), SUBMIT)), 160, "/app",
                             trust_wraps=True)
    assert run.refused is None and run.interactions[0]["command"] == "\n".join(spaced)
    assert run.counts["rows ending with spaces read as line ends: a heredoc's closing line follows"] == 1
    # A joined row that leaves the heredoc open, with no closing row to read otherwise: refused.
    open_ended = ["cat <<'EOF' > notes.txt", "x" * 158 + " ", "EOF-not"]
    run = read_mini_printout(screen_rows(printout(step(1, reply(*open_ended), ran(0, "")), SUBMIT)), 160, "/app",
                             trust_wraps=True)
    assert run.refused == ("step 1: its action's heredoc is left open once its wraps are joined: no 'EOF' line "
                           "(a row that ended with spaces was a line of its own)")

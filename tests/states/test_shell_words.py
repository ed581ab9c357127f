"""The engine-tool refusal of a transcript looks at what the shell would run (issue 32): a
tool's name inside a string, or typed while a quote was open from an earlier keystroke line, is
text; a line that would run `docker`, `nsenter`, ... is refused at load, as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from taskfactory import make_task

from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.states.shell_words import OpenQuote, TypedShell, engine_tool

RUNS = {
    "plain": ("docker ps", "docker"),
    "after a separator": ("echo hi; docker ps", "docker"),
    "after a pipe and sudo with options": ("cat a 2>&1 | sudo -u root docker x", "docker"),
    "quoted command word": ('"docker" ps', "docker"),
    "absolute path": ("FOO=1 /usr/bin/docker ps", "/usr/bin/docker"),
    "after a redirection": (">out docker ps", "docker"),
    "command substitution": ("x=$(nsenter -t 1 -m sh)", "nsenter"),
    "substitution inside double quotes": ('echo "$(docker ps)"', "docker"),
    "backquotes": ("echo `kubectl get pods`", "kubectl"),
    "bash -c": ("bash -c 'docker ps'", "docker"),
    "eval": ('eval "podman run x"', "podman"),
    "find -exec": ("find / -name x -exec docker rm {} \\;", "docker"),
    "keyword": ("if true; then unshare -r sh; fi", "unshare"),
    "a comment sign inside a word hides nothing": ("echo a#b; ctr images ls", "ctr"),
    "line continuation": ("echo x && \\\ndocker ps", "docker"),
}
TEXT = {
    "double-quoted string": 'echo "no docker here"',
    "single-quoted string": "git commit -m 'stop using docker'",
    "a package name": "apt-get install -y docker.io",
    "an argument": "which docker && grep -c docker notes.txt",
    "bash -c printing it": "bash -c 'echo docker'",
    "find -name": "find / -name docker",
    "a comment": "# docker is not here",
}


@pytest.mark.unit
@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_line_that_runs_a_tool_names_it(kind: str) -> None:
    text, tool = RUNS[kind]
    assert engine_tool(text) == tool


@pytest.mark.unit
@pytest.mark.parametrize("kind", sorted(TEXT))
def test_a_tool_mentioned_as_text_is_not_run(kind: str) -> None:
    assert engine_tool(TEXT[kind]) is None


@pytest.mark.unit
def test_an_open_quote_is_reported_not_guessed() -> None:
    with pytest.raises(OpenQuote):
        engine_tool("echo 'one\ndocker ps\n")


@pytest.mark.unit
def test_a_quote_left_open_by_an_earlier_keystroke_line_makes_text_of_the_next() -> None:
    shell = TypedShell()
    assert shell.feed("echo 'one\n") is None
    assert shell.feed("docker ps\n") is None  # inside the quote: text
    assert shell.feed("' > /app/quoted.txt\n") is None  # the quote closes: echo runs, not docker
    assert shell.pending == ""
    # Keys typed in pieces run when Enter is pressed.
    assert shell.feed("dock") is None
    assert shell.feed("er ps") is None
    assert shell.feed("Enter") == "docker"


@pytest.mark.unit
def test_ctrl_c_drops_an_open_quote_and_what_was_typed_in_it() -> None:
    shell = TypedShell()
    assert shell.feed("echo \"start\n") is None
    assert shell.feed("C-c") is None
    # The quote opened above was dropped: this line is a command again.
    assert shell.feed("nsenter -t 1 sh\n") == "nsenter"


def _machine_task(root: Path, lines: list[dict]) -> Path:
    task = make_task(root, "machine-task", states={})
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('track = "repo"', 'track = "machine"'))
    state = task / "residual" / "terminus-1"
    state.mkdir(parents=True)
    (state / "state.toml").write_text('predecessor = "terminus"\ntrack = "machine"\n')
    (state / "commands.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return task


def test_a_transcript_mentioning_docker_inside_an_open_quote_loads(tmp_path: Path) -> None:
    lines = [{"keystrokes": "cat > /app/notes.txt << 'EOF'\n"},  # a here-document: read as lines,
             {"keystrokes": "EOF\n"},  # so it is closed before the test's own case
             {"keystrokes": "echo 'the plan:\n", "duration_sec": 0.1},
             {"keystrokes": "docker compose up; nsenter -t 1\n", "duration_sec": 0.1},
             {"keystrokes": "' >> /app/notes.txt\n", "duration_sec": 0.1},
             {"command": 'echo "no docker here" > /app/x'}]
    _machine_task(tmp_path / "data", lines)
    entry = load_dataset(tmp_path / "data").entries[0]
    assert dict(entry.state_errors) == {} and [s.id for s in entry.states] == ["terminus-1"]


def test_a_transcript_line_that_would_run_docker_is_still_refused(tmp_path: Path) -> None:
    lines = [{"keystrokes": "echo 'the plan'\n"}, {"keystrokes": "C-c"},
             {"keystrokes": "echo 'x' && docker ps\n"}]
    _machine_task(tmp_path / "data", lines)
    error = dict(load_dataset(tmp_path / "data").entries[0].state_errors)["terminus-1"]
    assert "line 3 runs a namespace or container-engine tool ('docker')" in str(error)
    assert error.field == "command"


def test_a_command_with_an_unclosed_quote_counts_every_mention(tmp_path: Path) -> None:
    # `bash -c` runs the lines before a syntax error: the whole text is searched.
    _machine_task(tmp_path / "data", [{"command": "docker ps\necho 'oops"}])
    error = dict(load_dataset(tmp_path / "data").entries[0].state_errors)["terminus-1"]
    assert "runs a namespace or container-engine tool ('docker')" in str(error)

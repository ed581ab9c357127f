"""Handoff views: what an agent starting from a Residual State is told of its predecessor.

The paper's protocol is `blind`: the agent gets the request and the state, nothing else. The
other views hand it what a real successor might get, as one Markdown file built from the
state directory alone (never from the hidden tests, the state's validation, or its dataset
description, which would give the answer away):

- `trace`: the predecessor's trajectory (`trajectory.jsonl`), commands and clipped outputs;
- `notes`: what it said when it stopped (`notes.md`), as it wrote it;
- `structured`: a note the suite writes: files changed, the tests it ran with their last
  results as it saw them, and its claim of completion.

A state without the source of its view (no trajectory for `trace`, no notes for `notes`) still
runs, with a file that says so: every view then has the same items, so the views' task sets
and their Gaps stay comparable, and "the predecessor left nothing" is itself a handoff real
successors get. Every rendering is a pure function of the state's files: byte-identical on
every run (no timestamps; sets sorted).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from pathlib import Path

from swe_residual.dataset.states.diffparse import parse_diff
from swe_residual.trial.handoff.runs import find_test_runs, shell_lines
from swe_residual.dataset.states.state import ResidualState, interaction_text
from swe_residual.agents.trajectory import Step, steps_from_jsonl
from swe_residual.dataset.values import Track
from swe_residual.dataset.states.tool_calls import is_file_tool

BLIND, TRACE, NOTES, STRUCTURED = "blind", "trace", "notes", "structured"
#: every view, in the order tables list them (blind first: the paper's protocol)
VIEWS = (BLIND, TRACE, NOTES, STRUCTURED)
#: how many characters of one step's output the trace shows (head and tail, clipped in the middle)
CLIP_CHARS = 2000
CLAIM_CHARS = 4000
NO_TRAJECTORY = "The previous agent left no trajectory with this state: what it did is not known."
NO_NOTES = "The previous agent left no notes."


def parse_view(text: str) -> str:
    """One view name, or ValueError naming the known ones (settings add the source)."""
    view = text.strip()
    if view not in VIEWS:
        raise ValueError(f"unknown handoff view {view!r} (one of {', '.join(VIEWS)})")
    return view


def view_suffix(view: str | None) -> str:
    """What item ids and per-item file names add for a view: nothing for `blind`."""
    return "" if view in (None, BLIND) else f"@{view}"


def render(view: str, state: ResidualState) -> str | None:
    """The handoff file's text for `view` (None for `blind`: no file at all)."""
    if view == BLIND:
        return None
    if view == TRACE:
        return render_trace(state)
    if view == NOTES:
        return render_notes(state)
    if view == STRUCTURED:
        return render_structured(state)
    raise ValueError(f"unknown handoff view {view!r}")


# --------------------------------------------------------------------------- sources


def read_steps(state: ResidualState) -> list[Step] | None:
    """The predecessor's steps (None when the state keeps no trajectory)."""
    if state.trajectory_path is None:
        return None
    text = state.trajectory_path.read_text(encoding="utf-8", errors="replace")
    return steps_from_jsonl(text, state.predecessor).steps


def read_notes(state: ResidualState) -> str | None:
    if state.notes_path is None:
        return None
    return _text(state.notes_path)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").strip()


# --------------------------------------------------------------------------- Markdown helpers


def fenced(text: str, info: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it, so it cannot close early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """The head and the tail of a long output (a summary line is usually at the end)."""
    if len(text) <= limit:
        return text
    head, tail = limit // 4, limit - limit // 4
    return f"{text[:head]}\n[... {len(text) - limit} characters clipped ...]\n{text[-tail:]}"


def quoted(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.splitlines())


def _finish(lines: list[str]) -> str:
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- trace and notes


def render_trace(state: ResidualState) -> str:
    lines = ["# Handoff: the previous agent's trajectory", ""]
    steps = read_steps(state)
    if steps is None:
        return _finish(lines + [NO_TRAJECTORY])
    lines += [f"Its {len(steps)} recorded step(s), in order. Outputs longer than {CLIP_CHARS} characters "
              "are clipped in the middle.", ""]
    for number, step in enumerate(steps, start=1):
        lines += [f"## Step {number}: {_step_title(step)}", ""]
        if step.command:
            lines += [fenced(step.command, "sh"), ""]
        if step.output:
            output = clip(step.output)
            lines += [quoted(output) if step.action == "message" else fenced(output, "text"), ""]
    return _finish(lines)


def _step_title(step: Step) -> str:
    if step.action == "command":
        return "command" + ("" if step.exit_code is None else f" (exit code {step.exit_code})")
    if step.path:
        return f"{step.action} `{step.path}`"
    return step.action


def render_notes(state: ResidualState) -> str:
    notes = read_notes(state)
    return _finish(["# Handoff: the previous agent's notes", "", notes or NO_NOTES])


# --------------------------------------------------------------------------- structured


def render_structured(state: ResidualState) -> str:
    steps = read_steps(state)
    lines = ["# Handoff: what the previous agent left", "",
             "Written by the evaluation suite from the state the previous agent left: the files it "
             "changed, the tests it ran with their last results as it saw them, and what it said "
             "when it stopped.", ""]
    prior = state.raw.get("prior_attempt") if isinstance(state.raw.get("prior_attempt"), dict) else {}
    if prior.get("submitted") is True:
        steps_taken = prior.get("steps")
        lines += ["It declared the task done" + (f" after {steps_taken} step(s)." if isinstance(steps_taken, int)
                                                 else "."), ""]
    lines += ["## Files changed", "", *_files_changed(state), ""]
    lines += ["## Tests it ran", "", *_tests_ran(steps), ""]
    lines += ["## Its claim of completion", "", _claim(state, steps)]
    return _finish(lines)


def _files_changed(state: ResidualState) -> list[str]:
    if state.track == Track.REPO:
        diffs = sorted(parse_diff(state.read_patch()), key=lambda d: d.path)
        if not diffs:
            return ["None."]
        return [f"- `{d.path}` ({d.status}" + (f" from `{d.old_path}`" if d.old_path else "") + ")" for d in diffs]
    commands = state.read_commands()
    touched: dict[str, str] = {}
    for entry in commands:
        if is_file_tool(entry):  # an agent's file tool names its one file
            how, path = interaction_text(entry).split(" ", 1)
            touched[path] = "written" if how == "write" else "edited"
            continue
        for path, how in command_targets(interaction_text(entry), entry.get("cwd")).items():
            touched[path] = how
    lines = [f"- `{path}` ({touched[path]})" for path in sorted(touched)] or ["None named by its commands."]
    return lines + ["", f"Read from the text of its {len(commands)} command(s), so a file a program "
                        "changed without naming it is not listed."]


def _tests_ran(steps: list[Step] | None) -> list[str]:
    if steps is None:
        return ["Unknown: the state keeps no trajectory."]
    runs = find_test_runs(steps)
    if not runs:
        return ["None that the suite recognizes (pytest, unittest, npm test, go test, cargo test and the like)."]
    lines = []
    for number, run in enumerate(runs, start=1):
        exit_code = "unknown exit code" if run.exit_code is None else f"exit code {run.exit_code}"
        summary = f"`{run.summary}`" if run.summary else "no pass/fail summary line in its output"
        times = f", run {run.times} times" if run.times > 1 else ""
        lines.append(f"{number}. `{_one_line(run.command)}` (last at step {run.step}{times}, {exit_code}): {summary}")
        if run.failing:
            lines.append("   - failing as it saw them: " + ", ".join(f"`{name}`" for name in run.failing))
    return lines


def _one_line(command: str, limit: int = 200) -> str:
    text = " ".join(command.split()).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _claim(state: ResidualState, steps: list[Step] | None) -> str:
    claim = read_notes(state)
    if not claim and steps:
        messages = [step.output.strip() for step in steps if step.action == "message" and step.output.strip()]
        claim = messages[-1] if messages else None
    if not claim:
        return "None: the state keeps neither notes nor a final message."
    return quoted(clip(claim, CLAIM_CHARS))


# A machine-track state is a terminal session: the files it changed are read from the text of
# its commands (redirections, tee, sed -i, touch, mkdir, cp/mv/install/ln targets, rm).
_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"}
_REDIRECTS = {">", ">>", ">|", "&>", "&>>"}
_EFFECTS = {"tee": "written", "touch": "written", "mkdir": "created", "rm": "removed"}


def _words(command: str) -> list[str]:
    """Shell words and operators, quotes respected, heredoc bodies left out."""
    lexer = shlex.shlex("\n".join(shell_lines(command)), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: nothing can be read from it
        return []


def command_targets(command: str, cwd: str | None = None) -> dict[str, str]:
    """Paths a shell command names as changed: {path: "written" | "created" | "removed"}."""
    found: dict[str, str] = {}
    segment: list[str] = []
    words = _words(command) + [";"]
    for index, word in enumerate(words):
        if word in _REDIRECTS and index + 1 < len(words):
            found[_absolute(words[index + 1], cwd)] = "written"
            continue
        if word in _SEPARATORS:
            _segment_targets(segment, cwd, found)
            segment = []
        elif not (word.isdigit() and index + 1 < len(words) and words[index + 1] in _REDIRECTS | {">&", "<"}) \
                and not (index > 0 and words[index - 1] in _REDIRECTS | {">&", "<", "<<", "<<<"}):
            segment.append(word)  # neither a redirection's file descriptor nor its target
    return {path: how for path, how in found.items()
            if path and path not in _SEPARATORS and not path.startswith("/dev/")}


def _segment_targets(words: list[str], cwd: str | None, found: dict[str, str]) -> None:
    if not words:
        return
    name, args = words[0], [w for w in words[1:] if not w.startswith("-")]
    if name == "sed" and any(w.startswith("-i") for w in words[1:]) and args:
        found[_absolute(args[-1], cwd)] = "written"
    elif name in _EFFECTS:
        found.update({_absolute(arg, cwd): _EFFECTS[name] for arg in args})
    elif name in ("cp", "mv", "install", "ln") and len(args) >= 2:
        found[_absolute(args[-1], cwd)] = "written"


def _absolute(path: str, cwd: str | None) -> str:
    if not path or "$" in path or "*" in path:
        return path
    return posixpath.normpath(posixpath.join(cwd, path)) if cwd and not path.startswith("/") else path

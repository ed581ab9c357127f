"""A Residual State as the last layers of a Dockerfile, for the Harbor export.

Harbor builds a task's environment/ and starts the agent in it; it has no notion of a state to
restore. So the state goes into the image, done the way the suite's docker backend does it
(swe_residual/environments/docker/states.py), so that both start from the same files:

- repo track: the state's patch is applied with `git apply` at the task's workdir, strictly (no
  fuzz, no --recount), binary-safe, creating new files and removing deleted ones, and never
  committed: HEAD stays the base commit, the changes sit in the working tree.
- machine track: the recorded commands run in order, each as `bash -c COMMAND` from its own
  directory (relative to the workdir; default the workdir) under `timeout -s KILL` with its
  recorded deadline (default 600 s), its exit status ignored, as the suite's replay does.

An image holds files, not running processes: a state that needs processes left running, or a
command that was killed at its deadline (a partial run that a build step cannot reproduce),
cannot be exported, and `NotExportable` says why.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from typing import Any

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.states.state import ResidualState, is_keystrokes
from swe_residual.dataset.states.tool_calls import is_file_tool
from swe_residual.dataset.task import Task

# The patch's name in the exported environment/ (the build context) and in the image, which
# it leaves in the same layer that applies it.
PATCH_NAME = "swe-residual-state.patch"
PATCH_IN_IMAGE = f"/tmp/{PATCH_NAME}"
# The suite's replay gives a command without `timeout_sec` this deadline (states.replay).
DEFAULT_COMMAND_TIMEOUT_SEC = 600.0
# One replayed command: $1 its directory, $2 its deadline, $3 the command. Exit status 137 is
# `timeout -s KILL` firing: the suite's replay fails the state then, so the build fails too.
REPLAY_SCRIPT = (
    'cd -- "$1" || exit 1; timeout -s KILL "$2" bash -c "$3"; '
    '[ $? -ne 137 ] || { echo "a replayed command did not finish within $2 s" >&2; exit 1; }'
)
# Commands that start something meant to outlive them: a backgrounded command (`&` that is
# not `&&`, `>&`, `&>` or `|&`), nohup, setsid, disown, daemon starters.
_BACKGROUND = re.compile(
    r"(?<![&>|<])&(?![&>])|\b(?:nohup|setsid|disown|start-stop-daemon|daemonize)\b"
    r"|\bsystemctl\s+(?:start|restart)\b|\bservice\s+\S+\s+(?:start|restart)\b"
)


class NotExportable(Exception):
    """Why a start cannot be reproduced as a Harbor task (one sentence)."""


def layer_banner(task: Task, state: ResidualState) -> str:
    return f"\n# --- SWE-Residual: Residual State {task.id}/{state.id} (predecessor: {state.predecessor}) ---\n"


# -- repo track ----------------------------------------------------------------------------------
def repo_layer(task: Task, state: ResidualState) -> tuple[str, bytes | None]:
    """(Dockerfile lines to append, the patch for the build context or None when empty)."""
    assert state.patch_path is not None
    patch = state.patch_path.read_bytes()
    banner = layer_banner(task, state)
    if not patch.strip():
        # The suite applies nothing for an empty patch either (patches.apply_patch).
        return banner + "# The state's patch is empty: the start is the base commit itself.\n", None
    # No [metadata] workdir: RUN starts in the image's WORKDIR already, as the suite's exec does.
    enter = f"cd {shlex.quote(task.config.workdir)} && " if task.config.workdir else ""
    text = (
        banner
        + "# What the predecessor left, applied as the suite applies it: strictly (no fuzz), binary-safe,\n"
        + "# new files created and deleted files removed, NOT committed: HEAD stays the base commit.\n"
        + f"COPY {PATCH_NAME} {PATCH_IN_IMAGE}\n"
        + f"RUN {enter}git -c safe.directory='*' apply --whitespace=nowarn --binary {PATCH_IN_IMAGE} \\\n"
        + f"    && rm -f {PATCH_IN_IMAGE}\n"
    )
    return text, patch


# -- machine track -------------------------------------------------------------------------------
def live_process_reason(state: ResidualState, commands: list[dict[str, Any]]) -> str | None:
    """Why the state needs processes left running (which an image cannot hold), or None."""
    if state.live_processes:
        return "its state.toml declares [machine] live_processes = true: running processes cannot be part of an image"
    machine = state.raw.get("machine")
    if isinstance(machine, dict) and machine.get("fidelity") == "replay":
        return ("its state.toml records [machine] fidelity = \"replay\" (the state includes running processes): "
                "an image cannot hold them")
    if state.live_processes is None:
        # Undeclared: the docker backend would find out by replaying; the export does not run
        # anything, so a command that starts something in the background is taken at its word.
        for number, entry in enumerate(commands, start=1):
            if match := _BACKGROUND.search(entry["command"]):
                return (f"command {number} may leave a process running ({match.group(0).strip()!r}) and the state "
                        "does not declare [machine] live_processes = false: an image cannot hold running processes")
    return None


def machine_layer(task: Task, state: ResidualState) -> str:
    """Dockerfile lines replaying the state's commands at build time; NotExportable if it cannot."""
    try:
        commands = state.read_commands()
    except DatasetError as exc:
        raise NotExportable(str(exc)) from exc
    if any(is_keystrokes(entry) for entry in commands):
        raise NotExportable("its interactions are keystrokes typed into a terminal session (tmux): the session, and "
                            "whatever runs in it, cannot be part of an image")
    if any(is_file_tool(entry) for entry in commands):
        raise NotExportable("its interactions include an agent's file writes or edits (the tool-call form), which "
                            "the export does not turn into build steps")
    reason = live_process_reason(state, commands)
    if reason is not None:
        raise NotExportable(reason)
    # No [metadata] workdir: "." is the image's WORKDIR, where every RUN starts.
    workdir = task.config.workdir or "."
    prefix = ["env", *(f"{key}={value}" for key, value in task.config.environment_env.items())]
    lines = [
        layer_banner(task, state).rstrip("\n"),
        f"# The predecessor's {len(commands)} terminal command(s), replayed in order as the suite replays them:",
        "# each `bash -c COMMAND` from its directory under `timeout -s KILL` (its recorded deadline, else",
        f"# {DEFAULT_COMMAND_TIMEOUT_SEC:.0f} s); its exit status is ignored, an overrun fails the build.",
    ]
    for number, entry in enumerate(commands, start=1):
        if entry.get("timed_out"):
            raise NotExportable(f"command {number} was killed at its deadline when recorded (timed_out): "
                                "a build step cannot reproduce a partial run")
        cwd = entry.get("cwd")
        directory = posixpath.normpath(posixpath.join(workdir, cwd)) if cwd else workdir
        timeout = float(entry.get("timeout_sec", DEFAULT_COMMAND_TIMEOUT_SEC))
        argv = [*(prefix if len(prefix) > 1 else []), "sh", "-c", REPLAY_SCRIPT, "replay", directory,
                f"{max(timeout, 0.001):.3f}", entry["command"]]
        # The exec form (a JSON array): the command is one argument, never re-read by a shell
        # or by the Dockerfile parser (newlines stay escaped, the line never continues).
        lines.append(f"# command {number} of {len(commands)}")
        lines.append("RUN " + json.dumps(argv, ensure_ascii=True))
    return "\n".join(lines) + "\n"

"""Scripted predecessors as agents: `--predecessor NAME=script:DIR`.

`DIR/<task-id>.sh` is a bash script run from the working directory (the repository root on the
repo track); `DIR/<task-id>.jsonl` is a list of terminal interactions
(`{"command": ..., "timeout_sec"?, "cwd"?}`, the machine track's `commands.jsonl` format).
The agent reads the file on the host and sends its content through the session, so it works on
every backend and the trajectory shows exactly what ran:

- a `.sh` script is split at its `# step N` comment lines: each step runs as one command, with
  the script's preamble (everything before the first step: shebang, `set -euo pipefail`)
  prepended. A script without step markers runs as one command. A step exiting non-zero ends the
  run as the agent's own error (the `set -e` reading of a script);
- a `.jsonl` file runs one command per line, in order, with its cwd and timeout. A command that
  fails does not stop it (an interactive agent sees the failure and goes on).

The run declares the task done when the script is through. Stage I does not run a scripted
predecessor on a task it has no script for (run directly, such an agent reports an agent error).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from swe_residual.agents import Agent, resolve_agent
from swe_residual.agents.base import AGENT_ERROR, SUBMITTED, AgentResult, AgentSession
from swe_residual.dataset.errors import ConfigError

SCRIPT_PREFIX = "script:"
_STEP = re.compile(r"^# step \d+\b")


def split_script(text: str) -> list[str]:
    """The commands a `.sh` predecessor runs: one per `# step N` block, preamble prepended."""
    lines = text.splitlines(keepends=True)
    starts = [index for index, line in enumerate(lines) if _STEP.match(line)]
    if not starts:
        return [text]
    preamble = "".join(lines[:starts[0]])
    bounds = [*starts, len(lines)]
    return [preamble + "".join(lines[begin:end]) for begin, end in zip(bounds, bounds[1:])]


def read_interactions(path: Path) -> list[dict[str, Any]]:
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        entry = json.loads(line)
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise ConfigError(f"{path}: line {number} needs a string `command`")
        entries.append(entry)
    return entries


class ScriptAgent:
    """Replays one task's scripted predecessor (see the module docstring)."""

    def __init__(self, directory: Path | str, task_id: str, name: str | None = None) -> None:
        self.directory = Path(directory)
        self.task_id = task_id
        self.name = name or f"{SCRIPT_PREFIX}{directory}"

    def script(self) -> Path | None:
        for suffix in (".sh", ".jsonl"):
            candidate = self.directory / f"{self.task_id}{suffix}"
            if candidate.is_file():
                return candidate
        return None

    def run(self, session: AgentSession) -> AgentResult:
        script = self.script()
        if script is None:
            return AgentResult(AGENT_ERROR, message=f"nothing scripted for {self.task_id} in {self.directory}")
        if script.suffix == ".jsonl":
            for entry in read_interactions(script):
                timeout = entry.get("timeout_sec")
                session.exec(entry["command"], timeout_sec=float(timeout) if timeout is not None else None,
                             cwd=entry.get("cwd"))
            return AgentResult(SUBMITTED, message=f"replayed {script.name}")
        for number, command in enumerate(split_script(script.read_text(encoding="utf-8")), start=1):
            result = session.exec(command)
            if result.exit_code != 0:
                return AgentResult(AGENT_ERROR, message=f"{script.name} step {number} exited with "
                                                        f"{result.exit_code}: {result.output.strip()[-300:]}")
        return AgentResult(SUBMITTED, message=f"ran {script.name}")


@dataclass(frozen=True)
class Predecessor:
    """`NAME=AGENT` from the command line."""

    name: str
    spec: str

    def has_run_for(self, task_id: str) -> bool:
        """A scripted predecessor has nothing to run on a task it has no script for."""
        if not self.spec.startswith(SCRIPT_PREFIX):
            return True
        return ScriptAgent(Path(self.spec[len(SCRIPT_PREFIX):]), task_id).script() is not None

    def factory(self, task_id: str) -> Callable[[], Agent]:
        if self.spec.startswith(SCRIPT_PREFIX):
            directory = Path(self.spec[len(SCRIPT_PREFIX):])
            return lambda: ScriptAgent(directory, task_id, name=self.name)
        return resolve_agent(self.spec)


def parse_predecessor(value: str) -> Predecessor:
    name, sep, spec = value.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise ConfigError(f"--predecessor {value!r}: expected NAME=AGENT (e.g. drafter=script:datasets/predecessors/drafter)")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.]*", name):
        raise ConfigError(f"--predecessor {value!r}: NAME must be lower-case letters, digits, '_' or '.' (it names state ids)")
    if spec.startswith(SCRIPT_PREFIX) and not Path(spec[len(SCRIPT_PREFIX):]).is_dir():
        raise ConfigError(f"--predecessor {value!r}: {spec[len(SCRIPT_PREFIX):]} is not a directory")
    if not spec.startswith(SCRIPT_PREFIX):
        resolve_agent(spec)  # a bad agent spec is a usage error now, not one per run
    return Predecessor(name.strip(), spec.strip())

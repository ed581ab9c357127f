"""The normalized trajectory every agent produces: its steps and what they showed it.

A step is one recorded agent turn: a shell command (`action="command"`), a file view
(`"view"`), a file write (`"edit"`) or a message. The acceptance-bias metrics read which
files' contents the steps showed and whether inherited changes were inspected.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TRAJECTORY_SCHEMA = 1
MAX_OUTPUT_CHARS = 20_000  # per step, so a chatty command cannot blow up the records


@dataclass
class Step:
    index: int
    action: str  # "command" | "view" | "edit" | "message"
    command: str | None = None
    path: str | None = None
    output: str = ""
    exit_code: int | None = None
    duration_sec: float = 0.0
    # The model call behind the step, when the agent's model reported its usage.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def as_dict(self) -> dict[str, Any]:
        fields = asdict(self)
        for name in ("prompt_tokens", "completion_tokens"):  # only where known: other agents' steps stay as they were
            if fields[name] is None:
                del fields[name]
        return fields


@dataclass
class Trajectory:
    agent: str
    steps: list[Step] = field(default_factory=list)
    final_message: str | None = None

    def add(self, action: str, **fields: Any) -> Step:
        output = fields.pop("output", "") or ""
        if len(output) > MAX_OUTPUT_CHARS:
            output = output[:MAX_OUTPUT_CHARS] + f"\n[... {len(output) - MAX_OUTPUT_CHARS} more characters]"
        step = Step(index=len(self.steps), action=action, output=output, **fields)
        self.steps.append(step)
        return step

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": TRAJECTORY_SCHEMA,
            "agent": self.agent,
            "final_message": self.final_message,
            "steps": [step.as_dict() for step in self.steps],
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=1, ensure_ascii=True) + "\n")


def steps_from_jsonl(text: str, agent: str) -> Trajectory:
    """Read an agent-written trajectory file: one JSON object per line, {command, output}."""
    trajectory = Trajectory(agent=agent)
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a half-written last line from a killed agent
        if not isinstance(entry, dict):
            continue
        action = entry.get("action") or ("command" if entry.get("command") else "message")
        trajectory.add(
            str(action),
            command=entry.get("command") if isinstance(entry.get("command"), str) else None,
            path=entry.get("path") if isinstance(entry.get("path"), str) else None,
            output=str(entry.get("output", "")),
            exit_code=entry.get("exit_code") if isinstance(entry.get("exit_code"), int) else None,
        )
    return trajectory

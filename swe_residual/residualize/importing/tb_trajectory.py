"""Terminus's turns (`agent-logs/episode-N/`) as the suite's normalized trajectory.

A Terminal-Bench trial keeps no trajectory file, but Terminus logged every turn: its answer
(`response.json`: `state_analysis`, `explanation`, the `commands` it typed, `is_task_complete`)
and the prompt of the next turn (`prompt.txt`), which holds the terminal as the typed keys left
it. Each turn becomes one step (the steps stay Terminus's turns): its keys as the command, and
as output what the model said and then the terminal it saw next (the recorded `post-agent`
pane after the last turn). Reviewers read it on the review page beside the replayed keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swe_residual.dataset.harbor_layout import read_object
from swe_residual.residualize.importing.tb_trials import episode_dirs
from swe_residual.agents.trajectory import Trajectory


def _keys(answer: dict[str, Any]) -> str:
    commands = answer.get("commands")
    if not isinstance(commands, list):
        return ""
    typed = [str(c.get("keystrokes")) for c in commands if isinstance(c, dict) and c.get("keystrokes") is not None]
    return "".join(typed).rstrip("\n")


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace").rstrip() if path.is_file() else None


def terminus_trajectory(trial: Path, agent: str) -> Trajectory | None:
    """The trial's turns, or None when it has no Terminus answers (another agent, no logs)."""
    episodes = episode_dirs(trial)
    answers = [(episode, read_object(episode / "response.json")[0]) for episode in episodes]
    turns = [(episode, answer) for episode, answer in answers
             if answer is not None and ("is_task_complete" in answer or "commands" in answer)]
    if not turns:
        return None
    trajectory = Trajectory(agent=agent)
    following = {episode: episodes[i + 1] for i, episode in enumerate(episodes[:-1])}
    for episode, answer in turns:
        said = [f"{label}: {answer[key]}" for key, label in (("state_analysis", "state"), ("explanation", "plan"))
                if isinstance(answer.get(key), str) and answer[key]]
        if answer.get("is_task_complete") is True:
            said.append("declared the task complete")
        nxt = following.get(episode)
        screen = _text(nxt / "prompt.txt") if nxt is not None else _text(trial / "panes" / "post-agent.txt")
        if screen:
            said.append("--- the terminal afterwards ---\n" + screen)
        trajectory.add("command", command=_keys(answer), output="\n".join(said))
    last = turns[-1][1]
    if isinstance(last.get("explanation"), str):
        trajectory.final_message = last["explanation"]
    return trajectory

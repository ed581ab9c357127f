"""Terminal-Bench trials of installed agents: the agent's run read from its recorded terminal.

An installed agent (mini-swe-agent, OpenHands, Claude Code... as Terminal-Bench set them up
under `/installed-agent/`) is launched by the harness in one typed command; its keys rebuild
nothing (tb_keys.py refuses them). What it did is only in `sessions/agent.cast`. Each agent
this suite can read back is registered in `INSTALLED_AGENTS`, keyed by the command that launched
it (the first word of a `commands.txt` line after the set-up lines); a trial launched by any
other command stays as tb_keys.py left it.

A registered reader gives the run in the tool-call form of `commands.jsonl`
(states/tool_calls.py): one `{"command", "shell", "observed"}` line per action, or why the
actions cannot be recovered exactly (the trial is then imported without a final state, Stage II
`no_final_state`, with that reason).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.residualize.importing.cast_screen import cast_output, cast_width, screen_rows
from swe_residual.residualize.importing.tb_keys import INSTALLED_AGENT, read_commands_txt
from swe_residual.agents.trajectory import Trajectory
from swe_residual.residualize.importing.tb_mini import (AGENT as MINI, MiniTurn, launch_directory, launched_model,
                                                        mini_region, read_mini_printout)

CAST = "sessions/agent.cast"
DEFAULT_WIDTH = 160  # Terminal-Bench's tmux session


@dataclass
class InstalledRun:
    agent: str
    model: str | None  # as the launch command named it
    launch: str  # the command that started the agent
    interactions: list[dict[str, Any]] = field(default_factory=list)
    declared_complete: bool | None = None  # None: no record says (no cast): the harness's reading stands
    actions: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    refused: str | None = None  # why its interactions cannot rebuild the final state
    cost_limited: bool = False
    source: str = CAST
    trajectory: Trajectory | None = None  # what it printed, step by step, for the reviewers


def _read_mini(trial: Path, launch: str, trust_wraps: bool) -> InstalledRun:
    run = InstalledRun(MINI, launched_model(launch), launch)
    cast = trial / CAST
    if not cast.is_file():
        run.refused = f"no {CAST}: the only record of what {MINI} did"
        return run
    try:
        printed = cast_output(cast)
    except (OSError, ValueError) as exc:
        run.refused = f"{CAST} cannot be read: {exc}"
        return run
    region = mini_region(printed)
    if region is None:
        run.refused, run.declared_complete = f"{MINI} never started (no banner of it in {CAST})", False
        return run
    width = cast_width(cast) or DEFAULT_WIDTH
    read = read_mini_printout(screen_rows(region), width, launch_directory(printed[:printed.find(region)]),
                              trust_wraps)
    run.interactions, run.declared_complete, run.actions = read.interactions, read.declared_complete, read.actions
    run.counts, run.refused, run.cost_limited = read.counts, read.refused, read.cost_limited
    run.trajectory = _mini_trajectory(read.turns, read.declared_complete)
    return run


def _mini_trajectory(turns: list[MiniTurn], declared: bool) -> Trajectory | None:
    """Each step a command (its action, else a message): the reply, then mini's answer."""
    if not turns:
        return None
    trajectory = Trajectory(agent=MINI)
    for turn in turns:
        output = f"{turn.reply}\n--- mini-swe-agent answered ---\n{turn.answer}"
        if turn.action is not None:
            trajectory.add("command", command=turn.action, output=output)
        else:
            trajectory.add("message", output=output)
    if declared:
        trajectory.final_message = "declared the task complete (COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT)"
    return trajectory


@dataclass(frozen=True)
class InstalledAgent:
    name: str
    launcher: str  # the launch command's first word
    read: Callable[[Path, str, bool], InstalledRun]  # (trial, launch command, trust_wraps)


INSTALLED_AGENTS: tuple[InstalledAgent, ...] = (
    InstalledAgent(MINI, "mini", _read_mini),
)


def launch_of(trial: Path) -> tuple[InstalledAgent, str] | None:
    """The registered agent a trial launched and its launch command, or None."""
    batches, _, why = read_commands_txt(trial / "commands.txt")
    if why is not None or not any(INSTALLED_AGENT in argument for batch in batches for argument in batch):
        return None
    for batch in batches:
        text = "".join(argument for argument in batch if argument not in ("Enter", "C-m"))
        first = text.split(None, 1)[0] if text.strip() else ""
        for agent in INSTALLED_AGENTS:
            if first == agent.launcher:
                return agent, text.strip()
    return None


def read_installed_run(trial: Path, trust_wraps: bool = False) -> InstalledRun | None:
    """The run of a registered installed agent, or None when the trial launched none.
    `trust_wraps`: read a printed row that ends with spaces before a word that would not have
    fitted as a wrap (the agent's printer's), though it may be a line that ended with spaces."""
    found = launch_of(trial)
    return found[0].read(trial, found[1], trust_wraps) if found is not None else None

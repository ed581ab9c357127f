"""An item's files beside its record: its trajectory, artifacts, agent logs and verifier
output, where each is kept, and the secrets kept out of them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from swe_residual.trial.handoff.views import BLIND, view_suffix
from swe_residual.trial.records import agent_slug, rollout_file_suffix
from swe_residual.trial.grading import Verification
from swe_residual.agents.redaction import REDACTED, redact
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.task import Task
from swe_residual.agents.trajectory import Trajectory


def item_file_name(state: ResidualState | None, handoff: str = BLIND, rollout: int | None = None) -> str:
    """An item's name in the per-item paths: `clean` or the state id, its view, then `.rN` for a
    rollout of a run with `--rollouts` above 1 (so two rollouts never share a file)."""
    return (f"{state.id}{view_suffix(handoff)}" if state else "clean") + rollout_file_suffix(rollout)


def item_artifacts_dir(run_dir: Path, agent_name: str, task: Task, state: ResidualState | None,
                       handoff: str = BLIND, rollout: int | None = None) -> Path:
    """Where an item's collected artifacts are kept, beside its trajectory."""
    return run_dir / "artifacts" / agent_slug(agent_name) / task.id / item_file_name(state, handoff, rollout)


def item_agent_logs_dir(run_dir: Path, agent_name: str, task: Task, state: ResidualState | None,
                        handoff: str = BLIND, rollout: int | None = None) -> Path:
    """Where an item's agent keeps its own logs (a Harbor agent's /logs/agent, as Harbor keeps
    them in its trial's `agent/`): under `agent/`, laid out as the artifacts are."""
    return run_dir / "agent" / agent_slug(agent_name) / task.id / item_file_name(state, handoff, rollout)


def keep_agent_logs(run_dir: Path, logs_dir: Path, trajectory_path: str | None) -> tuple[str | None, str | None]:
    """(the agent's logs directory, its ATIF trajectory), relative to the run directory, of
    what the final attempt's agent left in `logs_dir`; the ATIF `trajectory.json` moves beside
    the suite's trajectory as `<item>.atif.json` (one copy, found where the suite's is)."""
    atif = logs_dir / "trajectory.json"
    atif_path: str | None = None
    if atif.is_file() and trajectory_path is not None:
        kept = (run_dir / trajectory_path).with_suffix(".atif.json")
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(atif, kept)
            atif_path = kept.relative_to(run_dir).as_posix()
        except OSError:
            pass  # a read-only or full results disk: not kept
    if not logs_dir.is_dir() or not any(logs_dir.iterdir()):
        return None, atif_path
    return logs_dir.relative_to(run_dir).as_posix(), atif_path


def item_verifier_log(run_dir: Path, agent_name: str, task: Task, state: ResidualState | None,
                      handoff: str = BLIND, rollout: int | None = None) -> Path:
    """Where an item's verifier output (test.sh's stdout and stderr) is kept: under `verifier/`,
    laid out as the artifacts are, in a file named as Harbor names it."""
    return (run_dir / "verifier" / agent_slug(agent_name) / task.id / item_file_name(state, handoff, rollout)
            / "test-stdout.txt")


def keep_verifier_log(verification: Verification | None, path: Path, run_dir: Path, secrets: list[str],
                       notes: list[str]) -> str | None:
    """Write what the verifier printed for the final verdict to `path`; its path relative to the
    run directory, or None when there was nothing to keep (no verification) or it was not written."""
    if verification is None or (not verification.output.output and verification.output.exit_code is None):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(redact(verification.output.output, secrets), encoding="utf-8", errors="replace")
    except OSError as exc:  # a read-only or full results disk must not cost the record
        notes.append(f"verifier output not kept: {exc}")
        return None
    return path.relative_to(run_dir).as_posix()


def redact_artifacts(run_dir: Path, artifacts: list[str], secrets: list[str]) -> None:
    """The kept copies of the artifacts hold no secret either (the verifier had the originals)."""
    for relative in artifacts:
        root = run_dir / relative
        for path in [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()):
            try:
                data = path.read_bytes()
                cleaned = data
                for secret in secrets:
                    cleaned = cleaned.replace(secret.encode(), REDACTED.encode())
                if cleaned != data:
                    path.write_bytes(cleaned)
            except OSError:  # a read-only results disk: such copies are not kept at all
                continue


def redact_trajectory(trajectory: Trajectory, secrets: list[str]) -> None:
    """Secrets an agent printed (or echoed) never reach the trajectory file."""
    for step in trajectory.steps:
        step.output = redact(step.output, secrets)
        step.command = redact(step.command, secrets)
    trajectory.final_message = redact(trajectory.final_message, secrets)

"""Harbor job directories as Harbor 0.25 writes them (TrialResult, TrialConfig, ATIF
trajectory, artifact manifest), for the tests that read Harbor's results
(test_import_runs.py, test_harbor_results.py)."""

from __future__ import annotations

import json
import secrets
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swe_residual.residualize.harbor.checksum import task_checksum
import pytest



def _stamp(minute: int) -> str:
    return f"2026-03-0{1 + minute // 60}T10:{minute % 60:02d}:00.250000Z"


def _atif(command: str, output: str) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.6", "session_id": "s-1",
        "agent": {"name": "claude-code", "version": "2.0.1", "model_name": "anthropic/claude-sonnet-4-5"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Make clamp clamp."},
            {"step_id": 2, "source": "agent", "message": "Looking at the code.",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "Read",
                             "arguments": {"file_path": "/app/calc.py"}}],
             "observation": {"results": [{"source_call_id": "c1", "content": "def clamp(value, low, high):"}]},
             "metrics": {"prompt_tokens": 1200, "completion_tokens": 40}},
            {"step_id": 3, "source": "agent", "message": "Fixing it.",
             "tool_calls": [{"tool_call_id": "c2", "function_name": "Bash", "arguments": {"command": command}}],
             "observation": {"results": [{"source_call_id": "c2", "content": [{"type": "text", "text": output}]}]}},
            {"step_id": 4, "source": "agent", "message": "Done: clamp is fixed."},
        ],
    }


def write_trial(job: Path, name: str, task: Path, *, task_name: str, agent: str, provider: str, model: str,
                minute: int, rewards: dict[str, float] | None, exception: str | None = None,
                patch: str | None = None, patch_source: str = "/logs/artifacts/model.patch",
                trajectory: dict[str, Any] | None = None, junit: str | None = None,
                checksum: str | None = None) -> Path:
    """One trial directory as Harbor writes it (TrialPaths), result.json a TrialResult whose
    `task_checksum` is the task directory's as Harbor computes it (or `checksum`)."""
    if checksum is None:
        checksum = task_checksum(task) if (task / "task.toml").is_file() else "0" * 64
    trial = job / name
    for part in ("agent", "verifier", "artifacts"):
        (trial / part).mkdir(parents=True)
    config = {"task": {"path": str(task)}, "trial_name": name, "trials_dir": str(job), "timeout_multiplier": 1.0,
              "agent": {"name": agent, "model_name": f"{provider}/{model}"}, "environment": {"type": "docker"},
              "verifier": {}, "artifacts": []}
    (trial / "config.json").write_text(json.dumps(config, indent=4))
    start, end = _stamp(minute), _stamp(minute + 9)
    result: dict[str, Any] = {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, name)), "task_name": task_name, "trial_name": name,
        "trial_uri": trial.as_uri(), "task_id": {"path": str(task)}, "source": None, "task_checksum": checksum,
        "config": config,
        "agent_info": {"name": agent, "version": "1.0.0", "model_info": {"name": model, "provider": provider}},
        "agent_result": {"n_input_tokens": 5000, "n_cache_tokens": 0, "n_output_tokens": 700, "cost_usd": 0.04},
        "verifier_result": {"rewards": rewards} if rewards is not None else None,
        "verifier_environment_mode": "shared",
        "exception_info": None if exception is None else {
            "exception_type": exception, "exception_message": f"{exception} raised",
            "exception_traceback": "Traceback ...", "occurred_at": _stamp(minute + 8)},
        "started_at": start, "finished_at": end,
        "environment_setup": {"started_at": start, "finished_at": _stamp(minute + 1)},
        "agent_setup": {"started_at": _stamp(minute + 1), "finished_at": _stamp(minute + 2)},
        "agent_execution": {"started_at": _stamp(minute + 2), "finished_at": _stamp(minute + 7)},
        "verifier": {"started_at": _stamp(minute + 7), "finished_at": end},
    }
    (trial / "result.json").write_text(json.dumps(result, indent=4))
    if rewards is not None:
        (trial / "verifier" / "reward.txt").write_text(f"{rewards['reward']}\n")
    if junit is not None:
        (trial / "verifier" / "junit.xml").write_text(junit)
    if trajectory is not None:
        (trial / "agent" / "trajectory.json").write_text(json.dumps(trajectory, indent=2))
    manifest = [{"source": "/logs/artifacts", "destination": "artifacts/logs/artifacts", "type": "directory",
                 "status": "ok" if patch is not None else "empty", "service": None, "exclude": list[str]()}]
    (trial / "artifacts" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    if patch is not None:
        target = trial / "artifacts" / patch_source.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(patch)
    return trial


def terminus_atif(episodes: list[list[dict[str, Any]]], model: str = "openai/gpt-5") -> dict[str, Any]:
    """Terminus-2's ATIF trajectory: one agent step per episode, its commands as `bash_command`
    tool calls (`keystrokes`, `duration`), the screen after them as the observation."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": "Keep the ticker running."}]
    for episode, commands in enumerate(episodes):
        calls = [{"tool_call_id": f"call_{episode}_{i + 1}", "function_name": "bash_command",
                  "arguments": {"keystrokes": c["keystrokes"], "duration": c["duration"]}}
                 for i, c in enumerate(commands)]
        steps.append({"step_id": len(steps) + 1, "source": "agent", "model_name": model,
                      "message": f"Analysis: episode {episode}\nPlan: type the commands", "tool_calls": calls,
                      "observation": {"results": [{"source_call_id": f"call_{episode}_1" if len(calls) == 1 else None,
                                                   "content": "New Terminal Output:\n$ "}]},
                      "metrics": {"prompt_tokens": 900, "completion_tokens": 60}})
    steps.append({"step_id": len(steps) + 1, "source": "agent", "model_name": model, "message": "Done.",
                  "tool_calls": [{"tool_call_id": f"call_{len(episodes)}_task_complete",
                                  "function_name": "mark_task_complete", "arguments": {}}],
                  "observation": {"results": [{"content": "Current Terminal Screen:\n$ "}]}})
    return {"schema_version": "ATIF-v1.6", "session_id": "terminus-session",
            "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": model, "extra": {"parser": "json"}},
            "steps": steps, "final_metrics": {"total_prompt_tokens": 900 * len(episodes),
                                              "total_completion_tokens": 60 * len(episodes), "total_cached_tokens": 0}}


def write_episodes(trial: Path, episodes: list[list[dict[str, Any]]]) -> None:
    """agent/episode-N/{prompt.txt,response.txt,debug.json}: each model turn's prompt and its answer
    in Terminus's JSON form (what older Harbor versions keep instead of tool calls)."""
    for episode, commands in enumerate(episodes):
        directory = trial / "agent" / f"episode-{episode}"
        directory.mkdir(parents=True)
        (directory / "prompt.txt").write_text("New Terminal Output:\n$ \n")
        (directory / "response.txt").write_text(json.dumps(
            {"analysis": f"episode {episode}", "plan": "type the commands", "commands": commands,
             "task_complete": False}, indent=2))
        (directory / "debug.json").write_text(json.dumps({"model": "openai/gpt-5", "episode": episode}))


def tool_call_atif(turns: list[list[dict[str, Any]]], final: str | None = "Done.") -> dict[str, Any]:
    """OpenClaw's ATIF trajectory: one agent step per model turn with its tool calls, then one
    step per call holding the tool's answer (`extra.tool_call_id`, and for commands
    `exec_status`/`exec_exit_code`); `final` is the last turn's words (None: the run stopped
    right after its last tool call, without declaring the task done). Each call is
    `{"name", "arguments", "answer", "status"?, "exit_code"?}`."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": "Make the tool state."}]
    for turn, calls in enumerate(turns):
        ids = [f"tool-{turn}-{i}" for i in range(len(calls))]
        steps.append({"step_id": len(steps) + 1, "source": "agent", "model_name": "z-ai/glm-5",
                      "message": f"turn {turn}", "extra": {"openclaw_role": "assistant"},
                      "tool_calls": [{"tool_call_id": i, "function_name": c["name"], "arguments": c["arguments"]}
                                     for i, c in zip(ids, calls)]})
        for call_id, call in zip(ids, calls):
            extra: dict[str, Any] = {"openclaw_role": "toolResult", "tool_call_id": call_id}
            if "status" in call:
                extra.update(exec_status=call["status"], exec_exit_code=call.get("exit_code"))
            steps.append({"step_id": len(steps) + 1, "source": "agent", "message": call["answer"],
                          "observation": {"results": [{"content": call["answer"]}]}, "extra": extra})
    if final is not None:
        steps.append({"step_id": len(steps) + 1, "source": "agent", "model_name": "z-ai/glm-5", "message": final,
                      "extra": {"openclaw_role": "assistant", "stop_reason": "stop"}})
    return {"schema_version": "ATIF-v1.6", "session_id": "openclaw-session",
            "agent": {"name": "openclaw", "version": "unknown", "model_name": "openai/z-ai/glm-5"}, "steps": steps}


@pytest.fixture
def machine_task_id() -> Iterator[str]:
    """A fresh machine-track task id for the tests that build its image; its cached images are
    removed afterwards (imported by the test modules that use it)."""
    from swe_residual.environments.docker import remove_cached_images

    name = f"machine-{secrets.token_hex(3)}"
    yield name
    remove_cached_images(name)


def commit_folder(folder: Path) -> str:
    """`folder` made a git repository of one commit (a source of runs as `dataset build` reads it
    from a clone); its commit."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "jobs")
    return git("rev-parse", "HEAD")

"""Small DeepSWE tasks and run folders written here, in the three published layouts.

Nothing is copied from the published runs: each layout is reproduced with a few files of our
own (a DeepSWE-like task `calc`, v1.1; a release trial; a Codex CLI run folder with its ledger;
a pi run folder with its session), enough to exercise what the importers read.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

TASK = "calc-clamp-bounds-in-both-directions"  # longer than the 32 characters a trial name keeps
BASE = "0" * 40
F2P = ["tests.test_calc.test_clamp_low", "tests.test_calc.test_clamp_high"]
P2P = ["tests.test_calc.test_add"]


def write_task(root: Path, task_id: str = TASK, version: str = "v1.1") -> Path:
    """A DeepSWE-shaped task (repo track: a base commit and a separate verifier), data only."""
    task = root / task_id
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        schema_version = "1.3"
        artifacts = ["/logs/artifacts/model.patch"]
        [task]
        name = "datacurve/{task_id}"
        [metadata]
        task_id = "{task_id}"
        base_commit_hash = "{BASE}"
        [verifier]
        environment_mode = "separate"
        timeout_sec = 60.0
        [agent]
        timeout_sec = 60.0
        [environment]
        docker_image = "registry.example/deepswe:{task_id}-{version}"
        """))
    (task / "instruction.md").write_text("Make clamp() respect both bounds.\n")
    (task / "tests" / "test.sh").write_text("#!/bin/sh\nexit 0\n")
    (task / "tests" / "config.json").write_text(json.dumps({"base_commit": BASE, "f2p_node_ids": F2P,
                                                            "p2p_node_ids": P2P, "grade": {"format": "ctrf"}}))
    (task / "solution" / "solve.sh").write_text("#!/bin/sh\nexit 0\n")
    return task


def patch(*files: tuple[str, str]) -> str:
    """A unified diff adding each (path, one line of content)."""
    return "".join(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                   f"@@ -0,0 +1 @@\n+{line}\n" for path, line in files)


SOURCE_PATCH = patch(("calc_bounds.py", "LOW = 0"))
# What a run leaves by accident beside its work: `pip install pkg>=1.0` unquoted, an editable
# install's egg-info, a byte-compiled module.
STRAY_PATCH = SOURCE_PATCH + patch(("=1.0", "Requirement already satisfied"),
                                   ("calc.egg-info/PKG-INFO", "Name: calc"),
                                   ("__pycache__/calc.cpython-311.pyc", "junk"))


def verifier(directory: Path, f2p_passed: int, *, ctrf: bool = True) -> None:
    """DeepSWE v1.1's verifier output: reward.json and a CTRF report named by bucket."""
    directory.mkdir(parents=True, exist_ok=True)
    reward = 1 if f2p_passed == len(F2P) else 0
    (directory / "reward.json").write_text(json.dumps({
        "reward": reward, "f2p_total": len(F2P), "f2p_passed": f2p_passed, "p2p_total": len(P2P),
        "p2p_passed": len(P2P)}))
    if ctrf:
        tests = [{"name": f"[p2p] {t}", "status": "passed"} for t in P2P]
        tests += [{"name": f"[f2p] {t}", "status": "passed" if n < f2p_passed else "failed"} for n, t in enumerate(F2P)]
        (directory / "ctrf.json").write_text(json.dumps({"results": {"tool": {"name": "pytest"}, "tests": tests}}))
    (directory / "reports").mkdir(exist_ok=True)
    (directory / "reports" / "base.xml").write_text("<testsuite/>")  # raw framework report: never read


def atif(commands: list[str], model: str = "vertex_ai/claude-fable-5") -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "system", "message": "You are helpful."},
                                   {"step_id": 2, "source": "user", "message": "Please solve this issue: ..."}]
    for n, command in enumerate(commands, start=3):
        steps.append({"step_id": n, "timestamp": f"2026-06-12T17:3{n % 10}:00+00:00", "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": f"c{n}", "function_name": "bash", "arguments": {"command": command}}],
                      "observation": {"results": [{"source_call_id": f"c{n}",
                                                   "content": json.dumps({"returncode": 0, "output": f"ran {n}"})}]}})
    return {"schema_version": "ATIF-v1.7", "agent": {"name": "mini-swe-agent", "version": "2.4.1", "model_name": model},
            "steps": steps, "final_metrics": {"total_prompt_tokens": 900, "total_completion_tokens": 90,
                                              "total_cost_usd": 0.5}}


def release_trial(root: Path, name: str, *, commands: list[str], patch_text: str | None, f2p_passed: int,
                  row: dict[str, Any] | None = None) -> Path:
    """One trial directory of DeepSWE's release (agent/, artifacts/, verifier/)."""
    trial = root / name
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / "trajectory.json").write_text(json.dumps(atif(commands)))
    (trial / "agent" / "mini-swe-agent.txt").write_text("mini-swe-agent log\n")
    if patch_text is not None:
        (trial / "artifacts").mkdir()
        (trial / "artifacts" / "model.patch").write_text(patch_text)
    verifier(trial / "verifier", f2p_passed)
    (trial / "verifier" / "test-stdout.txt").write_text("===== grade =====\n")
    if row is not None:
        (trial / "index-row.json").write_text(json.dumps(row))
    return trial


def index_row(name: str, task: str, model: str, config: str, outcome: str) -> dict[str, Any]:
    return {"trial_name": name, "task_name": task, "model": model, "config": config, "harness": "mini-swe-agent",
            "outcome": outcome, "reward": 1.0 if outcome == "pass" else 0.0, "cost_usd": 1.25,
            "finished_at": "2026-06-12T18:00:00Z", "agent_duration_seconds": 300, "has_trajectory": True,
            "verifier_files": ["ctrf.json", "reward.json", "test-stdout.txt", "reports/base.xml"]}


def codex_run(root: Path, task: str, arm: str, *, reward: int, patch_text: str, responses: list[str]) -> Path:
    """One Codex CLI run folder, `runs/<task>/<arm>/`, with the ledger line above it."""
    run = root / "runs" / task / arm
    run.mkdir(parents=True)
    (run / "env.json").write_text(json.dumps({"task_id": task, "arm": arm, "started_at": "2026-06-01T01:17:17Z",
                                              "codex_cli_version": "codex-cli0.135.0", "craft_model": "gpt-5.5"}))
    (run / "model.patch").write_text(patch_text)
    (run / "grade.json").write_text(json.dumps({"reward": reward, "base_pass": True, "new_pass": bool(reward),
                                                "exception": "", "model_patch_bytes": len(patch_text)}))
    (run / "grade.txt").write_text(f"REWARD {reward}\n")
    (run / "prompts.jsonl").write_text(json.dumps({"ts": "2026-06-01T01:17:51Z", "role": "impl", "model": "gpt-5.5",
                                                   "prompt": "Implement the feature described in this PRD.\n\nPRD:\n"
                                                             "Make clamp() respect both bounds."}) + "\n")
    (run / "responses.jsonl").write_text("".join(
        json.dumps({"ts": f"2026-06-01T01:2{n}:00Z", "role": "impl", "model": "gpt-5.5", "response": text}) + "\n"
        for n, text in enumerate(responses)))
    with (root / "ledger.jsonl").open("a") as ledger:
        ledger.write(json.dumps({"task_id": task, "arm": arm, "state": "DONE", "reward": reward,
                                 "class": "RESOLVED" if reward else "UNRESOLVED_MODEL", "wall": 323,
                                 "ts": "2026-06-01T01:22:42Z"}) + "\n")
    return run


def pi_session(instruction: str, calls: list[tuple[str, dict[str, Any]]], final: str | None) -> str:
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-07-01T23:31:30.980Z",
                                    "cwd": "/app"},
                                   {"type": "message", "timestamp": "2026-07-01T23:31:31.254Z", "message": {
                                       "role": "user", "content": [{"type": "text", "text":
                                           f'<file name="/task/instruction.md">\n{instruction}\n</file>\n'}]}}]
    for n, (name, arguments) in enumerate(calls):
        lines.append({"type": "message", "timestamp": f"2026-07-01T23:32:{n:02d}.000Z", "message": {
            "role": "assistant", "stopReason": "toolUse", "usage": {"input": 100, "output": 10},
            "content": [{"type": "thinking", "thinking": ""},
                        {"type": "toolCall", "id": f"call_{n}", "name": name, "arguments": arguments}]}})
        lines.append({"type": "message", "timestamp": f"2026-07-01T23:32:{n:02d}.500Z", "message": {
            "role": "toolResult", "toolCallId": f"call_{n}", "toolName": name,
            "content": [{"type": "text", "text": f"result {n}"}], "isError": False}})
    if final is not None:
        lines.append({"type": "message", "timestamp": "2026-07-01T23:35:00.000Z", "message": {
            "role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": final}]}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def pi_run(root: Path, task: str, rep: int, *, patch_text: str | None, f2p_passed: int | None, timed_out: bool = False,
           final: str | None = "Done: clamp respects both bounds and the tests pass.") -> Path:
    run = root / task / f"rep{rep}"
    (run / "session").mkdir(parents=True)
    result = {"task": task, "config": "advisor-gpt55-xhigh", "model": "openai-codex/gpt-5.5", "rep": rep,
              "arm_advisor": {"enabled": True, "provider": "openai-codex", "model": "gpt-5.5", "reasoning": "xhigh"},
              "thinking_level": "low", "agent_exit": 0, "agent_timed_out": timed_out, "agent_wall_s": 225.4,
              "input_tokens": 7000, "output_tokens": 700, "combined_cost_usd": 0.88}
    (run / "result.pre-sessionid-fix.json").write_text(json.dumps(result))
    (run / "session" / "2026-07-01T23-31-30-980Z_s1.jsonl").write_text(pi_session(
        "Make clamp() respect both bounds.",
        [("bash", {"command": "git status && ls"}), ("read", {"path": "calc.py"}),
         ("edit", {"path": "calc.py", "oldText": "a", "newText": "b"}),
         ("advisor", {"question": "done?"})], final))
    (run / "tool-usage.jsonl").write_text("{}\n")
    if patch_text is not None:
        (run / "artifacts").mkdir()
        (run / "artifacts" / "model.patch").write_text(patch_text)
    if f2p_passed is not None:
        verifier(run / "verifier", f2p_passed)
    return run

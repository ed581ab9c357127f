"""`swe-residual import codex-runs DIR --dataset DATASET --out WORK`: Codex CLI run folders.

The layout of a coordinator's DeepSWE runs of Codex CLI (as `kimjune01/deepswe-run` publishes
them, `results/coordinator/<run>/`): a `ledger.jsonl` (one line per finished run: `task_id`,
`arm`, `state`, `reward`, `class`, `wall`, `ts`) and one folder per run,
`runs/<task>/<arm>/`, holding

    env.json          task_id, arm, started_at, codex_cli_version, craft_model (the model)
    model.patch       the working tree's diff against the base commit: the final state
    grade.json        reward, base_pass, new_pass, exception: the grade of DeepSWE v1.0's
                      verifier (its test.sh on the base suite and on the hidden feature suite)
    grade.txt         the two test runs' summaries (kept for the review, not read)
    prompts.jsonl     each prompt the harness gave the model (ts, role, model, prompt)
    responses.jsonl   each final answer (ts, role, model, response): the trajectory kept here

DIR is that directory, its `runs/`, or one run folder. The predecessor is
`codex-cli+<model>+<arm>`. Declared done: Codex CLI's `exec` ends when the model answers
without a tool call, so a run whose last response is a non-empty answer and whose grade
recorded no exception submitted; a ledger line whose `state` is not `DONE` or whose `class`
names an infrastructure failure is an `infra_error`. The grade has no per-test statuses;
the request the run got (the first prompt) is kept beside the task's for the review. The
runs were graded on DeepSWE v1.0's tasks: Stage IV validates them on the dataset's version.
"""

from __future__ import annotations

import argparse
import shlex
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swe_residual.agents.trajectory import Trajectory
from swe_residual.dataset.errors import ConfigError
from swe_residual.dataset.harbor_layout import format_time, parse_time
from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.values import Termination
from swe_residual.residualize.importing.deepswe_runs import (RunFacts, VerifierReading, add_common_arguments,
                                                             find_task, read_json_file, read_jsonl, read_patch,
                                                             version_note, warn_stderr, write_runs)
from swe_residual.residualize.importing.runs import ImportSummary, TaskIndex
from swe_residual.trial.record_model import Durations

SPEC_PREFIX = "codex-runs:"
AGENT = "codex-cli"
GRADED_ON = "v1.0"  # grade.json's base_pass/new_pass: DeepSWE v1.0's two-suite verifier


def is_run_dir(directory: Path) -> bool:
    return (directory / "grade.json").is_file() or ((directory / "env.json").is_file()
                                                     and (directory / "model.patch").is_file())


def run_dirs(root: Path) -> list[Path]:
    if is_run_dir(root):
        return [root]
    return sorted(path.parent for path in root.rglob("env.json") if is_run_dir(path.parent)) + \
        sorted(path.parent for path in root.rglob("grade.json")
               if is_run_dir(path.parent) and not (path.parent / "env.json").is_file())


def ledger_of(directory: Path, root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The nearest `ledger.jsonl` at or above ROOT's runs: (task_id, arm) -> its last line."""
    for place in (directory, *directory.parents):
        found = read_jsonl(place / "ledger.jsonl")
        if found:
            return {(str(e.get("task_id")), str(e.get("arm"))): e for e in found}
        if place == root.parent:
            break
    return {}


def _verdict(grade: dict[str, Any] | None, why: str | None) -> VerifierReading:
    if grade is None:
        return VerifierReading(None, None, None, why or "grade.json: none")
    exception = grade.get("exception")
    reward = grade.get("reward")
    if exception or isinstance(reward, bool) or not isinstance(reward, (int, float)):
        return VerifierReading(None, None, None, f"grade.json: {exception or 'no numeric reward'}")
    rewards = {"reward": float(reward)}
    for key in ("base_pass", "new_pass"):
        if isinstance(grade.get(key), bool):
            rewards[key] = 1.0 if grade[key] else 0.0
    return VerifierReading(float(reward), rewards, None, None)


def _trajectory(responses: list[dict[str, Any]]) -> Trajectory:
    """Each final answer a message step, named by the harness's role (a scaffold asks for a
    design, tools, an implementation...); Codex's tool calls are not in these files."""
    trajectory = Trajectory(agent=AGENT)
    for entry in responses:
        text = entry.get("response")
        if isinstance(text, str) and text.strip():
            trajectory.add("message", output=f"[{entry.get('role') or 'response'}] {text}")
    trajectory.final_message = next((str(e["response"]) for e in reversed(responses)
                                     if isinstance(e.get("response"), str) and e["response"].strip()), None)
    return trajectory


def read_run(directory: Path, relative: str, ledger: dict[tuple[str, str], dict[str, Any]], index: TaskIndex, *,
             source: str, command: str) -> tuple[RunFacts | None, str | None]:
    env, _ = read_json_file(directory / "env.json")
    env = env if isinstance(env, dict) else {}
    task_name = str(env.get("task_id") or directory.parent.name)
    arm = str(env.get("arm") or directory.name)
    task = find_task(index, task_name)
    if task is None:
        return None, None
    grade, why = read_json_file(directory / "grade.json")
    verdict = _verdict(grade if isinstance(grade, dict) else None, why)
    line = ledger.get((task_name, arm), {})
    responses = sorted(read_jsonl(directory / "responses.jsonl"), key=lambda e: str(e.get("ts") or ""))
    prompts = sorted(read_jsonl(directory / "prompts.jsonl"), key=lambda e: str(e.get("ts") or ""))
    model = next((str(e["model"]) for e in responses + prompts if isinstance(e.get("model"), str)), None) \
        or (str(env["craft_model"]) if isinstance(env.get("craft_model"), str) else None)
    answered = bool(responses) and isinstance(responses[-1].get("response"), str) and responses[-1]["response"].strip()
    state, klass = str(line.get("state") or "DONE"), str(line.get("class") or "")
    if state != "DONE" or "INFRA" in klass.upper():
        termination, reason = Termination.INFRA_ERROR, f"the ledger says state {state}, class {klass or 'none'}"
    elif not answered:
        termination, reason = Termination.AGENT_ERROR, "no final answer in responses.jsonl: it did not declare the task done"
    else:  # submitted; a grade with an exception is no verdict (outcome null: Stage IV decides)
        termination, reason = Termination.SUBMITTED, None
    version = str(env.get("codex_cli_version") or "").removeprefix("codex-cli") or None
    moment = parse_time(line.get("ts")) or parse_time(env.get("started_at"))
    provenance: dict[str, Any] = {"kind": "codex-runs", "source": source, "run": relative, "command": command}
    if moment is not None:
        provenance["date"] = format_time(moment)
    provenance["task_version"] = version_note(GRADED_ON, task)
    wall = line.get("wall")
    facts = {"task_id": task_name, "arm": arm, "harness": AGENT, "agent_version": version, "model": model,
             "ledger_class": klass or None, "ledger_reward": line.get("reward"), "graded_on": GRADED_ON,
             "base_pass": grade.get("base_pass") if isinstance(grade, dict) else None,
             "new_pass": grade.get("new_pass") if isinstance(grade, dict) else None,
             "declared_done": bool(answered)}
    run = RunFacts(
        task=task, identity=f"{AGENT}+{model or 'unknown-model'}+{arm}", agent=AGENT, model=model,
        run_id=f"codex-runs:{relative}", submitted=termination == Termination.SUBMITTED, termination=termination,
        why_not_submitted=reason, verifier=verdict, patch=read_patch(directory / "model.patch"),
        patch_source="model.patch", provenance=provenance, facts={k: v for k, v in facts.items() if v is not None},
        trajectory=_trajectory(responses) if responses else None,
        durations=Durations(total_sec=float(wall)) if isinstance(wall, (int, float)) else Durations(),
        instruction=str(prompts[0]["prompt"]) if prompts and isinstance(prompts[0].get("prompt"), str) else None,
    )
    return run, None


def import_codex_runs(source: str, dataset_path: Path | str, out: Path | str, *,
                      progress: Callable[[str], None] = print,
                      warn: Callable[[str], None] = warn_stderr) -> ImportSummary:
    root = Path(source)
    if not root.is_dir():
        raise ConfigError(f"{source}: no such directory (a Codex run folder, or a directory of them)")
    found = run_dirs(root)
    if not found:
        raise ConfigError(f"{source}: no Codex run folders (env.json with model.patch, or grade.json) found")
    dataset = load_dataset(dataset_path)
    index = TaskIndex(dataset)
    command = f"swe-residual import codex-runs {shlex.quote(source)} --dataset {shlex.quote(str(dataset_path))}"
    runs: list[RunFacts] = []
    unknown: Counter[str] = Counter()
    for directory in found:
        relative = directory.relative_to(root).as_posix() if directory != root else directory.name
        run, _ = read_run(directory, relative, ledger_of(directory, root), index, source=source, command=command)
        if run is None:
            unknown[directory.parent.name] += 1
        else:
            runs.append(run)
    if unknown:
        warn(f"{sum(unknown.values())} run(s) of {len(unknown)} task(s) not in {dataset_path} skipped: "
             + ", ".join(sorted(unknown)))
    return write_runs(out, dataset_path, runs, kind="codex-runs", source=source, command=command,
                      spec_prefix=SPEC_PREFIX, unknown=dict(unknown), problems=[], read=len(found), progress=progress)


def _command(args: argparse.Namespace) -> int:
    import_codex_runs(args.location, args.dataset, args.out)
    return 0


def register(sources: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sources.add_parser("codex-runs", help="Codex CLI run folders on DeepSWE tasks -> Stage I runs")
    parser.add_argument("location", metavar="DIR", help="a coordinator's results directory, its runs/, or one run folder")
    add_common_arguments(parser)
    parser.set_defaults(func=_command)

"""`swe-residual dataset build`: a published dataset rebuilt from its manifest and the fetched
repositories it names, checksums verified.

The sources are tiny git repositories made here: one holding a task folder (as a benchmark's
repository does) and a licence, one holding a Terminal-Bench trial folder (`results.json`,
`commands.txt` in the harness's repr form, `panes/post-agent.txt`), as run collections publish
them. The manifest is written here as `dataset record` writes one.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from recordfactory import make_record
from taskfactory import make_machine_task

from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.importing.git_source import folder_checksum
from swe_residual.residualize.published.materialise import build
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.stats import dataset_stats, render_stats

TRIAL = "runs/collected/0a1b-tiny-task/tiny-task.1-of-1"
COMMANDS_TXT = "\n".join([
    "['asciinema rec --stdin /logs/agent.cast', 'Enter']", "['clear', 'Enter']",
    repr("echo 'open\n"), repr("touch /app/never\n"), repr("' > /app/quoted.txt\n"),
    "['asciinema rec --stdin /logs/tests.cast', 'Enter']", "['clear', 'Enter']",
    "['bash ', '/tests/run-tests.sh', 'Enter']", "['C-d']"]) + "\n"
EXPECTED_COMMANDS = (b'{"keystrokes": "echo \'open\\n"}\n{"keystrokes": "touch /app/never\\n"}\n'
                     b'{"keystrokes": "\' > /app/quoted.txt\\n"}\n')
PANE = "root@0123456789ab:/app# echo 'open\n> touch /app/never\n> ' > /app/quoted.txt\nroot@0123456789ab:/app#\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _commit_all(repo: Path) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "add")
    return _git(repo, "rev-parse", "HEAD")


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Any]:
    tasks = _repo(tmp_path / "bench")
    make_machine_task(tasks / "tasks", "tiny-task", None, tmux=False)
    (tasks / "tasks" / "LICENSE").write_text("Apache License 2.0 (test copy)\n")
    tasks_commit = _commit_all(tasks)
    runs = _repo(tmp_path / "runs-repo")
    trial = runs / TRIAL
    (trial / "panes").mkdir(parents=True)
    (trial / "results.json").write_text(json.dumps({"task_id": "tiny-task", "trial_name": "tiny-task.1-of-1",
                                                    "is_resolved": False, "failure_mode": "unset"}))
    (trial / "commands.txt").write_text(COMMANDS_TXT)
    (trial / "panes" / "post-agent.txt").write_text(PANE)
    runs_commit = _commit_all(runs)
    # The upstream task changes after the dataset was recorded: the manifest's commit still rules.
    (tasks / "tasks" / "tiny-task" / "instruction.md").write_text("Changed upstream.\n")
    _commit_all(tasks)
    return {"tasks": tasks, "tasks_commit": tasks_commit, "runs": runs, "runs_commit": runs_commit,
            "task_files": _tree(tmp_path / "bench" / "tasks" / "tiny-task")}


def _manifest(sources: dict[str, Any]) -> dict[str, Any]:
    original = dict(sources["task_files"], **{"instruction.md": b"Keep the ticker running.\n"})
    state = {"schema": 1, "track": "machine", "predecessor": "terminus__openai_gpt_4o_mini",
             "source_run": "residualize:runs/tiny-task/terminus__openai_gpt_4o_mini/1", "commands": "commands.jsonl",
             "prior_attempt": {"submitted": True, "termination": "submitted", "duration_sec": 12.0},
             "validation": {"valid": True, "reward": 0.0, "n_tests": 1, "n_failed": 1, "pass_rate": 0.0,
                            "tests": {"t.test_solved": "failed"}}}
    manifest: dict[str, Any] = {
        "schema": 1, "name": "tiny",
        "sources": {"bench": {"repository": "https://example.org/bench", "commit": sources["tasks_commit"],
                              "licence": "Apache-2.0", "licence_path": "tasks/LICENSE",
                              "licence_sha256": hashlib.sha256(b"Apache License 2.0 (test copy)\n").hexdigest()},
                    "collection": {"repository": "https://example.org/runs", "commit": sources["runs_commit"],
                                   "licence": "not stated"}},
        "tasks": {"tiny-task": {"source": "bench", "path": "tasks/tiny-task", "sha256": folder_checksum(original)}},
        "states": {"tiny-task/terminus__openai_gpt_4o_mini-1": {
            "source": "collection", "trial": TRIAL, "agent": "terminus", "model": "openai/gpt-4o-mini",
            "commands_sha256": hashlib.sha256(EXPECTED_COMMANDS).hexdigest(), "state": state}},
        "funnel": {"runs": 3, "runs_of_tasks_not_in_tb2": 1, "runs_of_tb2_tasks": 2,
                   "stage_ii": {"infra_failure": 0, "not_submitted": 1}, "stage_ii_candidates": 1,
                   "stage_iii_retained": 1, "stage_iv": {"Passed human review": 1, "Included": 1}},
    }
    return manifest


def _write(directory: Path, manifest: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.toml").write_text(tomlwrite.dumps(manifest))
    return directory


def test_tasks_and_states_are_written_from_the_sources(tmp_path: Path, sources: dict[str, Any]) -> None:
    directory = _write(tmp_path / "tiny", _manifest(sources))
    report = build(directory, {"bench": sources["tasks"], "collection": sources["runs"]}, progress=lambda _: None)
    assert report.tasks == ["tiny-task"] and report.states == ["tiny-task/terminus__openai_gpt_4o_mini-1"]
    task_files = _tree(directory / "tiny-task")
    state_files = {k: v for k, v in task_files.items() if k.startswith("residual/")}
    # The task as published at the manifest's commit (not the later upstream change), mode kept.
    assert task_files["instruction.md"] == b"Keep the ticker running.\n"
    assert {k: v for k, v in task_files.items() if not k.startswith("residual/") and k != "instruction.md"} == \
        {k: v for k, v in sources["task_files"].items() if k != "instruction.md"}
    assert (directory / "tiny-task" / "tests" / "test.sh").stat().st_mode & 0o111
    assert (directory / "LICENSE.bench").read_text() == "Apache License 2.0 (test copy)\n"
    state_dir = "residual/terminus__openai_gpt_4o_mini-1"
    assert state_files[f"{state_dir}/commands.jsonl"] == EXPECTED_COMMANDS
    assert state_files[f"{state_dir}/recorded-pane.txt"] == PANE.encode()
    # What was written runs as a dataset: the manifest and licences beside the tasks are not tasks.
    dataset = load_dataset(directory)
    assert [e.task.id for e in dataset.entries] == ["tiny-task"] and not dataset.task_errors
    (state,) = dataset.entries[0].states
    assert state.initial_tests == {"t.test_solved": "failed"}
    lines = render_stats(dataset_stats(dataset))
    assert "  Stage II excluded, not_submitted: 1" in lines and "  Stage IV, Included: 1" in lines


@pytest.mark.parametrize(("table", "key", "field", "refusal"), [
    ("tasks", "tiny-task", "sha256", "task tiny-task: tasks/tiny-task at .* has checksum"),  # content differs
    ("states", "tiny-task/terminus__openai_gpt_4o_mini-1", "commands_sha256", "give commands.jsonl"),  # other keys
])
def test_inputs_that_differ_from_the_manifest_are_refused(tmp_path: Path, sources: dict[str, Any], table: str,
                                                           key: str, field: str, refusal: str) -> None:
    manifest = _manifest(sources)
    manifest[table][key][field] = "0" * 64
    directory = _write(tmp_path / "tiny", manifest)
    with pytest.raises(ConfigError, match=refusal):
        build(directory, {"bench": sources["tasks"], "collection": sources["runs"]}, progress=lambda _: None)


def test_a_missing_source_or_commit_is_named(tmp_path: Path, sources: dict[str, Any]) -> None:
    directory = _write(tmp_path / "tiny", _manifest(sources))
    assert cli_main(["dataset", "build", str(directory), "--source", f"bench={sources['tasks']}"]) == 2
    with pytest.raises(ConfigError, match="no --source for collection"):
        build(directory, {"bench": sources["tasks"]}, progress=lambda _: None)
    manifest = _manifest(sources)
    manifest["sources"]["collection"]["commit"] = "f" * 40
    _write(directory, manifest)
    with pytest.raises(ConfigError, match="commit f{40} of https://example.org/runs is not in it"):
        build(directory, {"bench": sources["tasks"], "collection": sources["runs"]}, progress=lambda _: None)


def test_record_writes_a_manifest_that_builds_the_same_state(tmp_path: Path, sources: dict[str, Any]) -> None:
    """`dataset record` on a work directory and its built dataset, then `dataset build` from the
    manifest alone: the same commands.jsonl and state.toml, the funnel kept."""
    runs_dir = str(sources["runs"] / "runs" / "collected")
    work, built = tmp_path / "work", tmp_path / "built"
    run = work / "runs" / "tiny-task" / "terminus__openai_gpt_4o_mini" / "1"
    run.mkdir(parents=True)
    trial = "0a1b-tiny-task/tiny-task.1-of-1"
    (run / "record.json").write_text(json.dumps({
        **make_record("tiny-task", agent="terminus", track="machine"),
        "outcome": "failure", "termination": "submitted", "submitted": True, "reward": 0.0,
        "tests": {"t.test_solved": "failed"},
        "residualize": {"source": {"agent": "terminus", "model": "openai/gpt-4o-mini", "declared_complete": True,
                                   "failure_mode": "unset", "dataset": None},
                        "import": {"kind": "terminal-bench", "source": runs_dir, "trial": trial,
                                   "command": f"swe-residual import terminal-bench {runs_dir} --dataset /x/y"}}}))
    (work / "generate.json").write_text(json.dumps({"dataset": "/x/y", "import": {
        "source": runs_dir, "trials": 3, "unknown_tasks": {"other-task": 1}}}))
    (work / "filter.json").write_text(json.dumps({"n_runs": 2, "counts": {"not_submitted": 1},
                                                  "candidates": [{"task": "tiny-task"}]}))
    candidate = {"task": "tiny-task", "candidate": "terminus__openai_gpt_4o_mini-a1",
                 "run": "runs/tiny-task/terminus__openai_gpt_4o_mini/1", "category": "included", "detail": "",
                 "state": "terminus__openai_gpt_4o_mini-1", "oracle_solvable": True,
                 "replay": {"pane": "matches", "replays_agree": True}}
    table = {row: 0 for row in ("passed_review", "replay_failed", "environment_unusable",
                                "no_valid_verdict_or_not_failing", "not_oracle_solvable", "included")}
    (work / "table5.json").write_text(json.dumps({"candidates": [candidate], "table5": {
        "total": {**table, "passed_review": 1, "included": 1}}}))
    (work / "review" / "tiny-task").mkdir(parents=True)
    (work / "review" / "tiny-task" / "terminus__openai_gpt_4o_mini-a1.md").write_text(
        "reviewer_1: name = maintainer-a\nreviewer_1: task_directed = yes\nreviewer_1: consistent = yes\n"
        "reviewer_2: name =\nreviewer_2: task_directed = ?\nreviewer_2: consistent = ?\n")
    state_dir = built / "tiny-task" / "residual" / "terminus__openai_gpt_4o_mini-1"
    state_dir.mkdir(parents=True)
    (state_dir / "commands.jsonl").write_bytes(EXPECTED_COMMANDS)
    (state_dir / "state.toml").write_text(tomlwrite.dumps({
        **_manifest(sources)["states"]["tiny-task/terminus__openai_gpt_4o_mini-1"]["state"],
        "provenance": {"import": {"source": runs_dir, "trial": trial,
                                  "command": f"swe-residual import terminal-bench {runs_dir} --dataset /x/y"}}}))
    (tmp_path / "sources.toml").write_text(tomlwrite.dumps({"sources": {
        "bench": {"repository": "https://example.org/bench", "clone": str(sources["tasks"]),
                  "commit": sources["tasks_commit"], "licence": "Apache-2.0", "licence_path": "tasks/LICENSE",
                  "tasks": "tasks"},
        "collection": {"repository": "https://example.org/runs", "clone": str(sources["runs"]),
                       "commit": sources["runs_commit"], "runs": "runs/collected"}}}))
    out = tmp_path / "published"
    assert cli_main(["dataset", "record", str(work), "--built", str(built), "--sources",
                     str(tmp_path / "sources.toml"), "--out", str(out)]) == 0
    text = (out / "manifest.toml").read_text()
    assert str(sources["runs"]) not in text and str(sources["tasks"]) not in text  # no local path
    assert "https://example.org/runs@" in text and "--dataset" not in text
    report = build(out, {"bench": sources["tasks"], "collection": sources["runs"]}, progress=lambda _: None)
    assert report.states == ["tiny-task/terminus__openai_gpt_4o_mini-1"]
    written = out / "tiny-task" / "residual" / "terminus__openai_gpt_4o_mini-1"
    assert (written / "commands.jsonl").read_bytes() == EXPECTED_COMMANDS
    funnel = dataset_stats(load_dataset(out))["funnel"]
    assert funnel["stage_ii"] == {"not_submitted": 1} and funnel["runs_of_tasks_not_in_tb2"] == 1
    assert funnel["stage_iv"]["Included"] == 1
    recorded = tomllib.loads(text)["states"]["tiny-task/terminus__openai_gpt_4o_mini-1"]
    assert recorded["stage_iii"]["reviewer_1"] == {"name": "maintainer-a", "task_directed": "yes", "consistent": "yes"}
    assert recorded["trial"] == "runs/collected/0a1b-tiny-task/tiny-task.1-of-1" and recorded["agent"] == "terminus"
    # The state as Stage IV wrote it, its local paths replaced by the repository's reference.
    assert recorded["state"]["track"] == "machine" and recorded["state"]["validation"]["tests"] == {"t.test_solved": "failed"}
    assert recorded["state"]["provenance"]["import"]["source"].startswith("https://example.org/runs@")


def test_record_add_joins_a_source_of_harbor_tool_call_trials(tmp_path: Path, sources: dict[str, Any]) -> None:
    """A second source of runs (Harbor job directories of an agent that acted through tools)
    recorded into the manifest already there with `--add`: both sources' states build, the new
    state's commands.jsonl is what `import harbor-jobs` reads from the trial, and the new
    source's funnel is printed beside the first."""
    from harborjobs import tool_call_atif, write_trial

    from swe_residual.residualize.harbor.tool_calls import interactions_jsonl, read_tool_calls

    out = _write(tmp_path / "published", _manifest(sources))
    jobs = _repo(tmp_path / "jobs-repo")
    turns = [[{"name": "write", "arguments": {"path": "/app/notes.txt", "content": "draft\n"}, "answer": "ok"}],
             [{"name": "exec", "arguments": {"command": "cat /app/notes.txt"}, "answer": "draft",
               "status": "completed", "exit_code": 0}]]
    trial = write_trial(jobs / "jobs" / "job-1", "tiny-task__abc", sources["tasks"] / "tasks" / "tiny-task",
                        task_name="tiny-task", agent="openclaw", provider="openai", model="z-ai/glm-5", minute=0,
                        rewards={"reward": 0.0}, trajectory=tool_call_atif(turns))
    read = read_tool_calls(trial)
    assert read is not None
    commands = interactions_jsonl(read.interactions)
    jobs_commit = _commit_all(jobs)
    work, built, pred = tmp_path / "work", tmp_path / "built", "openclaw__openai_z_ai_glm_5"
    run = work / "runs" / "tiny-task" / pred / "1"
    run.mkdir(parents=True)
    jobs_dir = str(jobs / "jobs")
    (run / "record.json").write_text(json.dumps({
        **make_record("tiny-task", agent="openclaw", track="machine"),
        "outcome": "failure", "termination": "submitted", "submitted": True, "reward": 0.0, "tests": {},
        "residualize": {"source": {"agent": "openclaw", "model": "openai/z-ai/glm-5"},
                        "import": {"kind": "harbor-jobs", "source": jobs_dir, "trial": "job-1/tiny-task__abc",
                                   "declared_done": True, "command": f"swe-residual import harbor-jobs {jobs_dir}"}}}))
    (work / "generate.json").write_text(json.dumps({"dataset": "/x/y", "import": {
        "kind": "harbor-jobs", "source": jobs_dir, "trials": 1, "unknown_tasks": {}}}))
    (work / "filter.json").write_text(json.dumps({"n_runs": 2, "counts": {}, "candidates": [{"task": "tiny-task"}] * 2}))
    (work / "review.json").write_text(json.dumps({"retained": [{"task": "tiny-task"}], "rejected": [
        {"task": "tiny-task", "candidate": f"{pred}-a2", "failed": ["task_directed"]}]}))
    table = {row: 0 for row in ("passed_review", "replay_failed", "environment_unusable",
                                "no_valid_verdict_or_not_failing", "not_oracle_solvable", "included")}
    candidate = {"task": "tiny-task", "candidate": f"{pred}-a1", "run": f"runs/tiny-task/{pred}/1",
                 "category": "included", "detail": "", "state": f"{pred}-1", "oracle_solvable": True,
                 "replay": {"replays_agree": True, "outputs_compared": 1, "outputs": "match"}}
    (work / "table5.json").write_text(json.dumps({"candidates": [candidate], "table5": {
        "total": {**table, "passed_review": 1, "included": 1}}}))
    state_dir = built / "tiny-task" / "residual" / f"{pred}-1"
    state_dir.mkdir(parents=True)
    (state_dir / "commands.jsonl").write_bytes(commands)
    (state_dir / "state.toml").write_text(tomlwrite.dumps({
        "schema": 1, "track": "machine", "predecessor": pred, "commands": "commands.jsonl",
        "validation": {"valid": True, "reward": 0.0, "tests": {"t.test_solved": "failed"}}}))
    (tmp_path / "sources.toml").write_text(tomlwrite.dumps({"sources": {
        "bench": {"repository": "https://example.org/bench", "clone": str(sources["tasks"]),
                  "commit": sources["tasks_commit"], "licence": "Apache-2.0", "tasks": "tasks"},
        "openclaw": {"repository": "https://example.org/jobs", "clone": str(jobs), "commit": jobs_commit,
                     "licence": "not stated (no licence file in the repository at this commit)", "runs": "jobs"}},
        "notes": {f"tiny-task/{pred}-a2": "only read files, then stopped"}}))
    assert cli_main(["dataset", "record", str(work), "--built", str(built), "--sources",
                     str(tmp_path / "sources.toml"), "--out", str(out), "--add"]) == 0
    manifest = tomllib.loads((out / "manifest.toml").read_text())
    assert set(manifest["sources"]) == {"bench", "collection", "openclaw"}
    assert manifest["sources"]["openclaw"]["runs_format"] == "harbor-jobs"
    assert manifest["states"][f"tiny-task/{pred}-1"]["trial"] == "jobs/job-1/tiny-task__abc"
    assert manifest["states"][f"tiny-task/{pred}-1"]["stage_i"]["declared_complete"] is True
    assert manifest["states"][f"tiny-task/{pred}-1"]["task_version"].startswith("the dataset's version")
    assert manifest["candidates"][f"tiny-task/{pred}-a2"] == {
        "category": "stage_iii_rejected", "detail": "answered no: task_directed", "note": "only read files, then stopped"}
    assert manifest["funnels"]["openclaw"]["stage_iii_retained"] == 1
    assert manifest["funnels"]["openclaw"]["stage_iii_rejected"] == 1
    report = build(out, {"bench": sources["tasks"], "collection": sources["runs"], "openclaw": jobs},
                   progress=lambda _: None)
    assert sorted(report.states) == [f"tiny-task/{pred}-1", "tiny-task/terminus__openai_gpt_4o_mini-1"]
    assert (out / "tiny-task" / "residual" / f"{pred}-1" / "commands.jsonl").read_bytes() == commands
    stats = dataset_stats(load_dataset(out))
    assert stats["funnel"]["runs_of_tb2_tasks"] == 2 and stats["funnel"]["by_source"]["openclaw"]["runs"] == 1
    assert stats["funnel"]["by_source"]["openclaw"]["runs_of_tb2_tasks"] == 2
    assert "Funnel of source openclaw (manifest.toml)" in "\n".join(render_stats(stats))


def test_validate_may_be_given_the_tasks_whose_states_it_runs(tmp_path: Path, sources: dict[str, Any]) -> None:
    # After one task's image is rebuilt, that task and its states only (written, then Stage IV);
    # a task the manifest does not have is named with those it has.
    directory = _write(tmp_path / "tiny", _manifest(sources))
    given = ["--source", f"bench={sources['tasks']}", "--source", f"collection={sources['runs']}"]
    assert cli_main(["dataset", "build", str(directory), *given, "--task", "tiny-task"]) == 0
    assert (directory / "tiny-task" / "residual" / "terminus__openai_gpt_4o_mini-1" / "commands.jsonl").is_file()
    assert cli_main(["dataset", "build", str(directory), *given, "--task", "other-task"]) == 2
    with pytest.raises(ConfigError, match=r"--task other-task: not a task of .*manifest.toml \(tiny-task\)"):
        build(directory, {"bench": sources["tasks"], "collection": sources["runs"]}, validate=True,
              progress=lambda _: None, tasks=frozenset({"other-task"}))

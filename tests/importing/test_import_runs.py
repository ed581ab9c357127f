"""`swe-residual import harbor-jobs` and `import predictions`, through the whole pipeline.

Small Harbor job directories are written here as Harbor 0.25 writes them (TrialResult,
TrialConfig, ATIF trajectory, artifact manifest), for tasks of a small dataset: a submitted
failing trial, a submitted passing one, one that timed out, one that ended in an
infrastructure error, one without its patch artifact, a trial of a task not in the dataset and
an unreadable trial. Then import -> `residualize filter` -> `review --accept-all-as` ->
`build --backend local`, checking Stage II's rules, Table 5 and the states' provenance. The
same for a prediction file. Harbor's own models load the fixtures when its venv is there.
"""

from __future__ import annotations

import shutil

import hashlib
import json
import os
import subprocess
import textwrap
import tomllib
import uuid
from pathlib import Path
from typing import Any

import pytest
from harborjobs import _atif, _stamp, write_trial
from taskfactory import BASE_SOURCE, RESIDUAL_SOURCE, git_diff_of, make_task

from swe_residual.cli.main import main as cli_main
from swe_residual.residualize.harbor import jobs as harbor_jobs
from swe_residual.agents.atif import atif_to_trajectory
from swe_residual.dataset.harbor_layout import ArtifactEntry, find_artifact, read_jobs
from swe_residual.residualize.importing.predictions import read_predictions
from swe_residual.dataset.errors import ConfigError

BASE_FILES = {"calc.py": BASE_SOURCE, "README.md": "# calc\n"}
# Two different partial fixes (each leaves a hidden test failing) and a third for predictions.
HIGH_ONLY = BASE_SOURCE.replace("    return value\n", "    return min(value, high)\n")
LOW_TAGGED = RESIDUAL_SOURCE.replace("return max(low, value)", "return max(low, value)  # predicted")


def _diff(source: str, root: Path) -> str:
    return git_diff_of(BASE_FILES, {"calc.py": source}, root / ".diff")


JUNIT = "<testsuites><testsuite name='pytest'>" + "".join(
    f"<testcase classname='test_calc' name='test_{name}'>{'<failure/>' if name == 'clamp_high' else ''}</testcase>"
    for name in ("add", "clamp_low", "clamp_high", "clamp_inside")) + "</testsuite></testsuites>"


def make_inputs(root: Path) -> dict[str, Path]:
    """The dataset, a directory of Harbor jobs and a prediction file."""
    dataset = root / "dataset"
    calc = make_task(dataset, "calc", states={}, environment_mode="shared")  # collects no artifact: model.patch
    gauge = make_task(dataset, "gauge", states={})  # separate mode: declares /logs/artifacts/workspace.patch
    solution = (calc / "solution" / "solution.patch").read_text()
    jobs = root / "jobs"
    job = jobs / "2026-03-01__10-00-00"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"job_name": job.name, "jobs_dir": str(jobs), "n_attempts": 1}))
    (job / "result.json").write_text(json.dumps({
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, job.name)), "started_at": _stamp(0), "finished_at": _stamp(100),
        "n_total_trials": 8, "stats": {"n_completed_trials": 8}}))
    claude: dict[str, Any] = {"agent": "claude-code", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    failing = _diff(RESIDUAL_SOURCE, root)
    write_trial(job, "calc__Aa1", calc, task_name="test/calc", minute=0, rewards={"reward": 0.0}, patch=failing,
                trajectory=_atif("sed -i 's/return value/return max(low, value)/' calc.py", ""), junit=JUNIT, **claude)
    write_trial(job, "calc__Bb2", calc, task_name="test/calc", minute=10, rewards={"reward": 1.0}, patch=solution,
                **claude)
    write_trial(job, "calc__Cc3", calc, task_name="test/calc", minute=20, rewards={"reward": 0.0},
                exception="AgentTimeoutError", patch=_diff(HIGH_ONLY, root), **claude)
    write_trial(job, "calc__Dd4", calc, task_name="test/calc", minute=30, rewards=None,
                exception="EnvironmentStartTimeoutError", **claude)
    write_trial(job, "calc__Ee5", calc, task_name="test/calc", minute=40, rewards={"reward": 0.0}, **claude)
    write_trial(job, "gauge__Ff6", gauge, task_name="test/gauge", minute=50, rewards={"reward": 0.0},
                agent="terminus-2", provider="openai", model="gpt-5", patch=_diff(HIGH_ONLY, root),
                patch_source="/logs/artifacts/workspace.patch")
    write_trial(job, "other__Gg7", root / "elsewhere" / "other", task_name="test/other", minute=60,
                rewards={"reward": 0.0}, agent="terminus-2", provider="openai", model="gpt-5", patch=failing)
    broken = job / "calc__Hh8"
    (broken / "agent").mkdir(parents=True)
    (broken / "result.json").write_text('{"task_name": "test/calc", ')
    predictions = root / "preds.jsonl"
    lines = [
        {"instance_id": "calc", "model_name_or_path": "swe-agent/GPT-4o", "model_patch": _diff(LOW_TAGGED, root)},
        {"instance_id": "calc", "model_name_or_path": "swe-agent/GPT-4o", "model_patch": solution},
        {"instance_id": "nope", "model_name_or_path": "swe-agent/GPT-4o", "model_patch": failing},
        {"instance_id": "test/gauge", "model_name_or_path": "other-model", "model_patch": ""},
    ]
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"dataset": dataset, "jobs": jobs, "job": job, "predictions": predictions}


def _pipeline(work: Path, out: Path) -> None:
    assert cli_main(["residualize", "filter", str(work)]) == 0
    assert cli_main(["residualize", "review", str(work), "--accept-all-as", "test"]) == 0
    assert cli_main(["residualize", "build", str(work), "--out", str(out), "--backend", "local",
                     "--repeats", "1"]) == 0


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each source imported twice (the two work directories compared right away), then piped on."""
    root = tmp_path_factory.mktemp("import")
    inputs = make_inputs(root)
    found: dict[str, Any] = {**inputs, "root": root}
    sources = (("harbor-jobs", "harbor", inputs["jobs"]), ("predictions", "preds", inputs["predictions"]))
    for kind, prefix, source in sources:
        work, again, out = (root / f"{prefix}-{part}" for part in ("work", "again", "out"))
        for target in (work, again):
            command = ["import", kind, str(source), "--dataset", str(inputs["dataset"]), "--out", str(target)]
            assert cli_main(command) == 0
        found[f"{prefix}_trees"] = (_tree(work), _tree(again))
        _pipeline(work, out)
        found.update({f"{prefix}_work": work, f"{prefix}_again": again, f"{prefix}_out": out})
    return found


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- Harbor jobs


@pytest.mark.slow
def test_harbor_stage_ii_rules(imported: dict[str, Any]) -> None:
    filtered = _json(imported["harbor_work"] / "filter.json")
    rules = {(e["task"], e["candidate"]): e["rule"] for e in filtered["excluded"]}
    name = "claude_code__anthropic_claude_sonnet_4_5"
    assert rules == {("calc", f"{name}-a2"): "not_failing", ("calc", f"{name}-a3"): "not_submitted",
                     ("calc", f"{name}-a4"): "infra_failure", ("calc", f"{name}-a5"): "no_final_state"}
    assert [(c["task"], c["candidate"]) for c in filtered["candidates"]] == [
        ("calc", f"{name}-a1"), ("gauge", "terminus_2__openai_gpt_5-a1")]
    assert filtered["counts"] == {"infra_failure": 1, "not_submitted": 1, "not_failing": 1, "no_final_state": 1,
                                  "unchanged": 0, "duplicate": 0}
    detail = next(e["detail"] for e in filtered["excluded"] if e["rule"] == "no_final_state")
    assert "/logs/artifacts/model.patch" in detail and "calc__Ee5" in detail


@pytest.mark.slow
def test_harbor_table5(imported: dict[str, Any]) -> None:
    table = _json(imported["harbor_work"] / "table5.json")
    assert table["table5"]["total"] == {"passed_review": 2, "replay_failed": 0, "environment_unusable": 0,
                                        "no_valid_verdict_or_not_failing": 0, "not_oracle_solvable": 0, "unstable_verifier": 0, "included": 2}
    assert table["stage_ii"]["total"]["no_final_state"] == 1
    assert table["stage_ii"]["repo"] == {"infra_failure": 1, "not_submitted": 1, "not_failing": 1,
                                         "no_final_state": 1, "unchanged": 0, "duplicate": 0}


@pytest.mark.slow
def test_harbor_records(imported: dict[str, Any]) -> None:
    runs = imported["harbor_work"] / "runs" / "calc" / "claude_code__anthropic_claude_sonnet_4_5"
    first = _json(runs / "1" / "record.json")
    assert [first[k] for k in ("termination", "submitted", "outcome", "reward")] == ["submitted", True, "failure", 0.0]
    assert first["tests"]["test_calc.test_clamp_high"] == "failed"
    assert first["durations"] == {"setup_sec": 120.0, "agent_sec": 300.0, "verify_sec": 120.0, "total_sec": 540.0}
    assert first["tokens"] == {"prompt": 5000, "completion": 700} and first["cost"] == 0.04
    assert (runs / "1" / "changes.patch").read_text() == first["final_patch"]
    block = first["residualize"]
    assert block["agent_spec"] == "harbor:claude-code+anthropic/claude-sonnet-4-5"
    assert block["import"]["trial"] == "2026-03-01__10-00-00/calc__Aa1"
    assert block["import"]["date"] == "2026-03-01T10:09:00Z"
    assert block["import"]["patch"] == "artifacts/logs/artifacts/model.patch"
    assert block["source"]["exception_type"] is None
    trajectory = _json(runs / "1" / first["trajectory"])
    assert [(s["action"], s.get("path"), s.get("command")) for s in trajectory["steps"]] == [
        ("view", "/app/calc.py", None), ("command", None, "sed -i 's/return value/return max(low, value)/' calc.py"),
        ("message", None, None)]
    assert trajectory["steps"][0]["prompt_tokens"] == 1200 and first["steps"] == 3
    timed_out = _json(runs / "3" / "record.json")
    assert (timed_out["termination"], timed_out["submitted"], timed_out["outcome"]) == ("time_limit", False, "failure")
    infra = _json(runs / "4" / "record.json")
    assert (infra["termination"], infra["outcome"], infra["reward"]) == ("infra_error", "infra_error", None)
    assert infra["error"].startswith("EnvironmentStartTimeoutError")
    missing = _json(runs / "5" / "record.json")
    assert not (runs / "5" / "changes.patch").exists() and missing["residualize"]["final_state"]["recoverable"] is False


@pytest.mark.slow
def test_harbor_unknown_and_broken_trials_are_reported(imported: dict[str, Any]) -> None:
    config = _json(imported["harbor_work"] / "generate.json")
    block = config["import"]
    assert block["unknown_tasks"] == {"test/other": 1}
    assert len(block["problems"]) == 1
    assert block["problems"][0].startswith("2026-03-01__10-00-00/calc__Hh8: result.json is not valid JSON")
    assert block["trials"] == 8 and block["runs"] == 6
    assert config["tasks"] == ["calc", "gauge"]
    assert set(config["predecessors"]) == {"claude_code__anthropic_claude_sonnet_4_5", "terminus_2__openai_gpt_5"}


@pytest.mark.slow
def test_harbor_state_provenance(imported: dict[str, Any]) -> None:
    state = imported["harbor_out"] / "calc" / "residual" / "claude_code__anthropic_claude_sonnet_4_5-1"
    data = tomllib.loads((state / "state.toml").read_text())
    provenance = data["provenance"]
    assert provenance["import"] == {
        "kind": "harbor-jobs", "source": str(imported["jobs"]), "trial": "2026-03-01__10-00-00/calc__Aa1",
        "command": f"swe-residual import harbor-jobs {imported['jobs']} --dataset {imported['dataset']} "
                   "--predecessor-name-from agent+model",
        "date": "2026-03-01T10:09:00Z", "patch": "artifacts/logs/artifacts/model.patch"}
    assert provenance["stage_ii"]["rules_passed"] == ["infra_failure", "not_submitted", "not_failing",
                                                      "no_final_state", "unchanged", "duplicate"]
    assert data["prior_attempt"] == {"submitted": True, "termination": "submitted", "steps": 3, "duration_sec": 300.0}
    assert data["validation"]["tests"]["test_calc.test_clamp_high"] == "failed"
    # What the predecessor said comes with the state, for the non-blind handoff views: its ATIF
    # trajectory as the normalized one, and its final message as notes.
    steps = [json.loads(line) for line in (state / "trajectory.jsonl").read_text().splitlines()]
    assert any("calc.py" in (step.get("command") or step.get("path") or "") for step in steps)
    assert (state / "notes.md").read_text().strip() == "Done: clamp is fixed."
    gauge = imported["harbor_out"] / "gauge" / "residual" / "terminus_2__openai_gpt_5-1" / "state.toml"
    assert tomllib.loads(gauge.read_text())["provenance"]["import"]["patch"].endswith("/workspace.patch")


@pytest.mark.slow
@pytest.mark.parametrize("prefix", ["harbor", "preds"])
def test_import_twice_is_byte_identical(imported: dict[str, Any], prefix: str) -> None:
    first, second = imported[f"{prefix}_trees"]
    assert len(first) > 3 and first == second


@pytest.mark.slow
def test_harbor_import_again_into_the_same_work_dir(imported: dict[str, Any]) -> None:
    before = _tree(imported["harbor_again"])
    harbor_jobs.import_harbor_jobs(imported["jobs"], imported["dataset"], imported["harbor_again"],
                                   progress=lambda _: None, warn=lambda _: None)
    assert _tree(imported["harbor_again"]) == before
    with pytest.raises(ConfigError, match="already holds Stage I runs"):
        harbor_jobs.import_harbor_jobs(imported["jobs"], imported["dataset"], imported["harbor_again"],
                                       name_from="agent", progress=lambda _: None, warn=lambda _: None)


@pytest.mark.slow
def test_predecessor_name_from_agent(imported: dict[str, Any], tmp_path: Path) -> None:
    summary = harbor_jobs.import_harbor_jobs(imported["jobs"], imported["dataset"], tmp_path / "w", name_from="model",
                                             progress=lambda _: None, warn=lambda _: None)
    assert summary.predecessors == {"anthropic_claude_sonnet_4_5": "anthropic/claude-sonnet-4-5",
                                    "openai_gpt_5": "openai/gpt-5"}
    assert summary.unrecoverable == 2 and summary.unknown_tasks == {"test/other": 1}


@pytest.mark.slow
def test_cli_errors(imported: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = str(imported["dataset"])
    out = ["--out", str(tmp_path / "w")]
    assert cli_main(["import", "harbor-jobs", str(tmp_path / "missing"), "--dataset", dataset, *out]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert cli_main(["import", "predictions", str(tmp_path / "missing.jsonl"), "--dataset", dataset, *out]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "calc", "model_name_or_path": "m", "model_patch": ""}\n{"instance_id": \n')
    assert cli_main(["import", "predictions", str(bad), "--dataset", dataset, *out]) == 2
    assert "bad.jsonl: line 2: not valid JSON" in capsys.readouterr().err
    bad.write_text('{"instance_id": "calc", "model_patch": ""}\n')
    assert cli_main(["import", "predictions", str(bad), "--dataset", dataset, *out]) == 2
    assert "line 1: `model_name_or_path`" in capsys.readouterr().err
    assert cli_main(["import", "harbor-jobs", str(imported["jobs"]), "--dataset", dataset,
                     "--out", str(tmp_path / "w2")]) == 0
    assert "warning: 1 trial(s) of 1 task(s) not in" in capsys.readouterr().err


# --------------------------------------------------------------------------- predictions


@pytest.mark.slow
def test_predictions_pipeline(imported: dict[str, Any]) -> None:
    work = imported["preds_work"]
    filtered = _json(work / "filter.json")
    assert [(c["task"], c["candidate"]) for c in filtered["candidates"]] == [
        ("calc", "swe_agent_gpt_4o-a1"), ("calc", "swe_agent_gpt_4o-a2")]
    assert [(e["task"], e["candidate"], e["rule"]) for e in filtered["excluded"]] == [
        ("gauge", "other_model-a1", "unchanged")]
    table = _json(work / "table5.json")
    assert table["table5"]["total"] == {"passed_review": 2, "replay_failed": 0, "environment_unusable": 0,
                                        "no_valid_verdict_or_not_failing": 1, "not_oracle_solvable": 0, "unstable_verifier": 0, "included": 1}
    outcomes = {c["candidate"]: (c["category"], c["detail"]) for c in table["candidates"]}
    assert outcomes["swe_agent_gpt_4o-a2"] == ("no_valid_verdict_or_not_failing",
                                              "no longer failing: the verifier passes")
    record = _json(work / "runs" / "calc" / "swe_agent_gpt_4o" / "1" / "record.json")
    assert [record[k] for k in ("submitted", "termination", "outcome", "reward")] == [True, "submitted", None, None]
    config = _json(work / "generate.json")
    assert config["import"]["unknown_tasks"] == {"nope": 1}


@pytest.mark.slow
def test_predictions_state_provenance(imported: dict[str, Any]) -> None:
    state = imported["preds_out"] / "calc" / "residual" / "swe_agent_gpt_4o-1" / "state.toml"
    provenance = tomllib.loads(state.read_text())["provenance"]
    digest = hashlib.sha256(imported["predictions"].read_bytes()).hexdigest()
    assert provenance["import"] == {
        "kind": "predictions", "source": str(imported["predictions"]), "entry": "line 1", "sha256": digest,
        "command": f"swe-residual import predictions {imported['predictions']} --dataset {imported['dataset']}"}
    assert provenance["predecessor_agent"] == "predictions:swe-agent/GPT-4o"
    assert "date" not in provenance["import"]


@pytest.mark.unit
def test_prediction_file_formats(tmp_path: Path) -> None:
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"instance_id": "a", "model_name_or_path": "m", "model_patch": "x"},
                                  {"instance_id": "b", "model_name_or_path": "m", "model_patch": None}], indent=2))
    assert [(p.entry, p.instance_id, p.patch) for p in read_predictions(listed)] == [
        ("item 1", "a", "x"), ("item 2", "b", "")]
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"a": {"model_name_or_path": "m", "model_patch": "x"}}))
    assert [(p.entry, p.instance_id) for p in read_predictions(keyed)] == [("key a", "a")]
    single = tmp_path / "one.jsonl"
    single.write_text(json.dumps({"instance_id": "a", "model_name_or_path": "m", "model_patch": "x"}) + "\n")
    assert [p.entry for p in read_predictions(single)] == ["line 1"]


# --------------------------------------------------------------------------- the reader alone


@pytest.mark.unit
def test_find_artifact_layouts(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    (artifacts / "out").mkdir(parents=True)
    (artifacts / "model.patch").write_text("legacy")
    assert find_artifact(artifacts, (), "/logs/artifacts/model.patch") == artifacts / "model.patch"
    (artifacts / "out" / "model.patch").write_text("declared")
    manifest = (ArtifactEntry("/logs/artifacts", "artifacts/out", "directory", "ok"),)
    assert find_artifact(artifacts, manifest, "/logs/artifacts/model.patch") == artifacts / "out" / "model.patch"
    outside = tmp_path / "secret.patch"
    outside.write_text("no")
    (artifacts / "logs" / "artifacts").mkdir(parents=True)
    (artifacts / "logs" / "artifacts" / "x.patch").symlink_to(outside)
    assert find_artifact(artifacts, (), "/logs/artifacts/x.patch") is None


@pytest.mark.slow
def test_reader_is_tolerant(imported: dict[str, Any]) -> None:
    jobs = read_jobs(imported["jobs"])
    assert [t.trial_name for t in jobs.trials] == ["calc__Aa1", "calc__Bb2", "calc__Cc3", "calc__Dd4", "calc__Ee5",
                                                   "gauge__Ff6", "other__Gg7"]
    assert [p.relative for p in jobs.problems] == ["2026-03-01__10-00-00/calc__Hh8"]
    first = jobs.trials[0]
    assert (first.agent_name, first.model_name, first.reward) == ("claude-code", "anthropic/claude-sonnet-4-5", 0.0)


@pytest.mark.slow
def test_trials_are_found_as_deep_as_a_published_results_tree(imported: dict[str, Any], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A results tree as sources publish it (results/<machine>/<model>/<task>/<job>/<trial>: depth 5)
    is read; a trial deeper than the search goes is not, and the error says how deep it looked."""
    trial = read_jobs(imported["jobs"]).trials[0].path
    deep = tmp_path / "results" / "server" / "model" / "calc" / "job"
    shutil.copytree(trial, deep / trial.name)
    assert [t.trial_name for t in read_jobs(tmp_path / "results").trials] == [trial.name]
    too_deep = tmp_path / "deeper" / "a" / "b" / "c" / "d" / "e" / "f"
    shutil.copytree(trial, too_deep / trial.name)
    assert read_jobs(tmp_path / "deeper").trials == []
    assert cli_main(["import", "harbor-jobs", str(tmp_path / "deeper"), "--dataset", str(imported["dataset"]),
                     "--out", str(tmp_path / "w")]) == 2
    assert "found within 6 levels of it" in capsys.readouterr().err


@pytest.mark.unit
def test_atif_without_tool_results_ids() -> None:
    data = {"steps": [{"source": "agent", "message": "",
                       "tool_calls": [{"tool_call_id": "1", "function_name": "bash_command",
                                       "arguments": {"keystrokes": "ls\n", "duration": 1}}],
                       "observation": {"results": [{"content": "calc.py"}]}},
                      {"source": "agent", "tool_calls": [{"tool_call_id": "2", "function_name": "str_replace_editor",
                                                          "arguments": {"command": "view", "path": "/app/calc.py"}}]},
                      {"source": "agent", "tool_calls": [{"tool_call_id": "3", "function_name": "shell",
                                                          "arguments": {"command": ["git", "diff"]}}]},
                      {"source": "agent",
                       "tool_calls": [{"tool_call_id": "4", "function_name": "finish", "arguments": {}}]}]}
    steps = atif_to_trajectory(data, "a").steps
    assert [(s.action, s.command, s.path) for s in steps] == [
        ("command", "ls\n", None), ("view", None, "/app/calc.py"), ("command", "git diff", None),
        ("message", None, None)]
    assert steps[0].output == "calc.py" and steps[3].output == "finish {}"


# --------------------------------------------------------------------------- Harbor's own models


def _harbor_python() -> Path:
    cache = os.environ.get("SWE_RESIDUAL_CACHE") or str(Path.home() / ".cache" / "swe-residual")
    return Path(cache) / "harbor-venv" / "bin" / "python"


HARBOR_CHECK = textwrap.dedent("""\
    import json, sys
    from pathlib import Path
    from harbor.models.trial.result import TrialResult
    from harbor.models.trial.config import TrialConfig
    from harbor.models.trial.artifact_manifest import ArtifactManifestEntry
    from harbor.models.trajectories.trajectory import Trajectory
    for trial in sys.argv[1:]:
        trial = Path(trial)
        TrialResult.model_validate_json((trial / "result.json").read_text())
        TrialConfig.model_validate_json((trial / "config.json").read_text())
        for entry in json.loads((trial / "artifacts" / "manifest.json").read_text()):
            ArtifactManifestEntry.model_validate(entry)
        if (trial / "agent" / "trajectory.json").is_file():
            Trajectory.model_validate_json((trial / "agent" / "trajectory.json").read_text())
    print("ok", len(sys.argv) - 1)
    """)


@pytest.mark.slow
def test_fixtures_load_in_harbors_models(imported: dict[str, Any]) -> None:
    python = _harbor_python()
    if not os.access(python, os.X_OK):
        message = f"Harbor's venv is not at {python.parent.parent}: run scripts/setup-tests"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: required)")
        pytest.skip(message)
    trials = [str(t.path) for t in read_jobs(imported["jobs"]).trials]
    done = subprocess.run([str(python), "-c", HARBOR_CHECK, *trials], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == f"ok {len(trials)}"

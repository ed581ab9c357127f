"""`dataset build --validate --repeats N --record`: Stage IV's repeated runs written into the
manifest by the suite (not by a script beside it), for the states found as recorded.

The sources are two git repositories made here: one holding a repository-track task that the
local backend builds (taskfactory.py's `calc`), one a Codex CLI run folder whose `model.patch`
(a clamp that ignores its upper bound) is the state. Stage IV runs for real on the local
backend: the verifier and the oracle twice each, in temporary git workspaces.
"""

from __future__ import annotations

import hashlib
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from deepswe_layouts import codex_run
from taskfactory import BASE_SOURCE, RESIDUAL_SOURCE, git_diff_of, make_task

from swe_residual.cli.main import main as cli_main
from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.importing.git_source import folder_checksum
from swe_residual.residualize.published.materialise import build

TASK, STATE_ID = "calc", "codex_cli__gpt_5.5__baseline_codex-1"
STATE = f"{TASK}/{STATE_ID}"
RUNS = "results/codexrun"
TESTS = {"test_calc.test_add": "passed", "test_calc.test_clamp_high": "failed",
         "test_calc.test_clamp_inside": "passed", "test_calc.test_clamp_low": "passed"}


def _commit(path: Path) -> str:
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "add"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Any]:
    tasks = tmp_path / "bench"
    task = make_task(tasks, TASK, states={})
    contents = {p.relative_to(task).as_posix(): p.read_bytes() for p in sorted(task.rglob("*")) if p.is_file()}
    patch = git_diff_of({"calc.py": BASE_SOURCE, "README.md": "# calc\n"}, {"calc.py": RESIDUAL_SOURCE},
                        tmp_path / "diff")
    runs = tmp_path / "runs"
    codex_run(runs / RUNS, TASK, "baseline-codex", reward=0, patch_text=patch, responses=["Clamped."])
    return {"tasks": tasks, "tasks_commit": _commit(tasks), "task_sha256": folder_checksum(contents),
            "runs": runs, "runs_commit": _commit(runs), "patch_sha256": hashlib.sha256(patch.encode()).hexdigest()}


def _dataset(directory: Path, sources: dict[str, Any], tests: dict[str, str] = TESTS) -> Path:
    state = {"schema": 1, "track": "repo", "predecessor": "codex_cli__gpt_5.5__baseline_codex",
             "source_run": f"residualize:runs/{TASK}/codex_cli__gpt_5.5__baseline_codex/1", "patch": "changes.patch",
             "prior_attempt": {"submitted": True, "termination": "submitted", "steps": 1},
             "validation": {"valid": True, "reward": 0.0, "n_tests": 4, "n_failed": 1, "pass_rate": 0.75,
                            "tests": tests}}
    manifest = {
        "schema": 1, "name": "tiny-repo-track",
        "sources": {"bench": {"repository": "https://example.org/bench", "commit": sources["tasks_commit"],
                              "licence": "Apache-2.0"},
                    "codex": {"repository": "https://example.org/runs", "commit": sources["runs_commit"],
                              "licence": "not stated", "runs": RUNS, "runs_format": "codex-runs"}},
        "tasks": {TASK: {"source": "bench", "path": TASK, "sha256": sources["task_sha256"]}},
        "states": {STATE: {"source": "codex", "trial": f"{RUNS}/runs/{TASK}/baseline-codex", "agent": "codex-cli",
                           "model": "gpt-5.5", "patch_sha256": sources["patch_sha256"], "state": state}},
    }
    directory.mkdir(parents=True)
    (directory / "manifest.toml").write_text(tomlwrite.dumps(manifest))
    return directory


def _given(sources: dict[str, Any]) -> dict[str, Path]:
    return {"bench": sources["tasks"], "codex": sources["runs"]}


def test_record_writes_the_repeated_runs_into_the_manifest_and_the_state(
        tmp_path: Path, sources: dict[str, Any]) -> None:
    directory, given = _dataset(tmp_path / "tiny", sources), _given(sources)
    report = build(directory, given, validate=True, backend_name="local", repeats=2, record=True,
                   progress=lambda _: None)
    assert report.problems == [] and report.recorded == [STATE]
    manifest = tomllib.loads((directory / "manifest.toml").read_text())
    block = manifest["states"][STATE]["state"]["provenance"]["stage_iv"]["repeated"]
    failing = "failure: " + ", ".join(sorted(t for t, s in block["tests"].items() if s != "passed"))
    assert block["repeats"] == 2 and block["stable"] is True and block["category"] == "included"
    assert block["verifier_runs"] == [failing, failing] and block["oracle_runs"] == ["solved", "solved"]
    assert block["tests"] == TESTS and failing == "failure: test_calc.test_clamp_high"
    assert block["tasks_in_build"] == [TASK] and block["build_seconds"] > 0 and "load average" in block["machine"]
    # The state's own state.toml says it at once; a rebuild from the manifest writes the same.
    state_toml = directory / TASK / "residual" / STATE_ID / "state.toml"
    written = state_toml.read_bytes()
    assert tomllib.loads(written.decode())["provenance"]["stage_iv"]["repeated"] == block
    build(directory, given, progress=lambda _: None)
    assert state_toml.read_bytes() == written


def test_a_state_that_no_longer_validates_is_not_recorded(
        tmp_path: Path, sources: dict[str, Any]) -> None:
    # The manifest says a test passes that the state fails: a problem, named, and nothing written.
    directory = _dataset(tmp_path / "tiny", sources, {**TESTS, "test_calc.test_clamp_high": "passed"})
    before = (directory / "manifest.toml").read_bytes()
    report = build(directory, _given(sources), validate=True,
                   backend_name="local", repeats=2, record=True, progress=lambda _: None)
    assert report.recorded == [] and len(report.problems) == 1 and "differ from the recorded" in report.problems[0]
    assert (directory / "manifest.toml").read_bytes() == before


@pytest.mark.parametrize(("args", "message"), [
    ([], "needs --validate"),
    (["--validate", "--repeats", "1"], "needs --repeats 2 or more"),
])
def test_record_without_repeated_validation_is_a_usage_error(
        tmp_path: Path, sources: dict[str, Any], args: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    directory = _dataset(tmp_path / "tiny", sources)
    with pytest.raises(ConfigError, match=message):
        build(directory, {}, validate="--validate" in args, repeats=int(args[-1]) if args else 3, record=True)
    given = ["--source", f"bench={sources['tasks']}", "--source", f"codex={sources['runs']}"]
    assert cli_main(["dataset", "build", str(directory), *given, *args, "--record"]) == 2
    assert message in capsys.readouterr().err
    assert not (directory / TASK).exists()  # refused before anything was written

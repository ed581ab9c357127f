"""The small things a new user meets in the `swe-residual` command and `pytest --help`: the
version, the help texts, quartiles with decimals, an empty Harbor jobs directory, the tasks
`residualize generate` skips, a file given as a dataset (swe_residual/cli/main.py and friends)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from taskfactory import make_task

from swe_residual import __version__
from swe_residual.agents import AGENT_FORMS
from swe_residual.cli.main import build_parser, main as cli_main
from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.load import load_dataset
from swe_residual.residualize.stats import render_stats


@pytest.mark.unit
def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"swe-residual {__version__}"


@pytest.mark.unit
def test_report_help_describes_out(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "report.html" in help_text and "reports/merged" in help_text


@pytest.mark.unit
def test_images_help_names_the_cache_directory(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["images", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "~/.cache/swe-residual" in help_text and "SWE_RESIDUAL_CACHE" in help_text


def test_pytest_help_lists_every_agent_form() -> None:
    result = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], cwd=REPO_ROOT,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert result.returncode == 0, result.stderr
    help_text = " ".join(result.stdout.split())
    assert "mini-swe-agent" in AGENT_FORMS
    assert f"agent to evaluate (repeatable): {', '.join(AGENT_FORMS)}" in help_text


@pytest.mark.unit
def test_iqr_keeps_its_decimals() -> None:
    figures = {"n_states": 2, "n_tasks": 1, "states_per_predecessor": {"a": 2},
               "tasks_by_states": {"1": 0, "2": 1, "3": 0, "more": 0}, "prior_steps_median": 4.0,
               "prior_steps_iqr": [3.5, 4.5], "prior_time_median_sec": 60.0, "pass_rate_mean": 50.0,
               "pass_rate_median": 50.0, "states_failing_1_to_3": 2, "states_with_tests": 2,
               "states_failing_1_to_3_pct": 100.0, "interactions_median": 3.0}
    stats = {"overall": {"n_states": 2, "n_tasks": 1}, "n_tasks_total": 1, "tracks": {"machine": figures}}
    line = next(line for line in render_stats(stats) if "prior attempt" in line)
    assert "(IQR 3.5-4.5)" in line, line
    figures["prior_steps_iqr"] = [15.0, 25.0]
    assert "(IQR 15-25)" in next(line for line in render_stats(stats) if "prior attempt" in line)


@pytest.mark.unit
def test_empty_harbor_jobs_says_nothing_was_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "jobs").mkdir()
    assert cli_main(["report", "--harbor-jobs", str(tmp_path / "jobs"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr()
    text = err.out + err.err
    assert "no Harbor trial found" in text, text
    assert "read as run records into" not in text and "No such file" not in text
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
def test_a_file_is_not_a_dataset_directory(tmp_path: Path) -> None:
    path = tmp_path / "task.toml"
    path.write_text("")
    with pytest.raises(DatasetError, match="is a file, not a dataset directory"):
        load_dataset(path)
    with pytest.raises(DatasetError, match="dataset directory does not exist"):
        load_dataset(tmp_path / "nowhere")


def test_residualize_generate_names_the_tasks_without_a_script(tmp_path: Path) -> None:
    from swe_residual.residualize.generate import generate
    from swe_residual.residualize.predecessors import parse_predecessor

    make_task(tmp_path / "data", "alpha", states={})
    make_task(tmp_path / "data", "gamma", states={})
    scripts = tmp_path / "drafter"
    scripts.mkdir()
    lines: list[str] = []
    refs = generate(tmp_path / "data", [parse_predecessor(f"drafter=script:{scripts}")], tmp_path / "work",
                    backend_name="local", timeout_sec=60, progress=lines.append)
    assert refs == []
    assert "skip drafter on 2 task(s) without a script: alpha, gamma" in lines, lines

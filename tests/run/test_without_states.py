"""A Harbor dataset without Residual States (what every Harbor user has) still measures: run with
the oracle on the local backend, its Clean rate over Clean Starts alone is 100% in the terminal,
summary.json, summary.md and report.html, each saying the dataset has no states and how to make
them; `swe-residual validate` says so too, and the dataset stays valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from suitecheckout import make_checkout
from taskfactory import make_task

from swe_residual.cli.main import main as cli_main


@pytest.mark.slow
def test_the_oracle_on_a_dataset_without_states_measures_100_percent_clean(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    for task in ("alpha", "beta"):  # Harbor tasks as published: no residual/ directory
        assert not (make_task(pytester.path / "data", task, states={}) / "residual").exists()
    result = pytester.runpytest_subprocess(
        "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out", "--run-id=bare",
        "-p", "no:cacheprovider", "--agent=oracle",
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    lines = result.outlines
    assert "oracle: 100% from a clean start on Clean Starts alone (2 task(s); no Residual State to compare)" in lines
    assert "No Residual States: no task of this run ran one (a dataset without states, or Clean Starts" in lines
    header = next(i for i, line in enumerate(lines) if line.split()[:4] == ["agent", "track", "clean", "(starts"])
    assert lines[header + 1].split() == ["oracle", "repo", "100.0", "[34.2,", "100.0]", "2", "2"]
    assert "swe-residual residualize generate DATASET" in out and "swe-residual import harbor-jobs" in out

    run = pytester.path / "out" / "bare"
    alone = json.loads((run / "summary.json").read_text())["agents"]["oracle"]["tracks"]["repo"]["clean_starts"]
    assert (alone["clean"], alone["n_tasks"], alone["tasks_with_states"]) == (100.0, 2, 0)
    markdown = (run / "summary.md").read_text()
    assert "- oracle: 100% from a clean start on Clean Starts alone (2 task(s); no Residual State to compare)" in markdown
    row = next(line for line in markdown[markdown.index("### Clean rate over Clean Starts alone"):].splitlines()
               if line.startswith("| oracle "))
    assert [cell.strip() for cell in row.split("|")[1:-1]] == ["oracle", "repo", "100.0 [34.2, 100.0]", "2", "2"]
    page = (run / "report.html").read_text()
    assert '<h3 id="clean-starts">Clean rate over Clean Starts alone</h3>' in page
    assert '<td class="">100.0 [34.2, 100.0]</td>' in page[page.index('id="clean-starts"'):]


def test_validate_says_a_dataset_has_no_states_and_stays_valid(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    make_task(tmp_path / "bare", "alpha", states={})
    assert cli_main(["validate", str(tmp_path / "bare")]) == 0
    out = capsys.readouterr().out
    assert "alpha: track repo, 0 state(s), ok, no Residual State (Clean Start only)" in out
    assert "note: the dataset has no Residual States: a run measures the Clean rate over its Clean Starts alone" in out
    assert "swe-residual residualize generate DATASET" in out and "swe-residual import harbor-jobs" in out
    assert out.rstrip().endswith("1 task(s), 0 state(s), 0 problem(s)")

    make_task(tmp_path / "mixed", "alpha")
    make_task(tmp_path / "mixed", "gamma", states={})
    assert cli_main(["validate", str(tmp_path / "mixed")]) == 0
    out = capsys.readouterr().out
    assert "alpha: track repo, 1 state(s), ok\n" in out
    assert "note: 1 of 2 task(s) have no Residual State (gamma): a run measures their Clean Starts alone" in out

"""A task graded the way DeepSWE publishes its tasks (issue 48): the hidden tests run twice
(on the base commit, then on the work), a grader that is not pytest reads the two JUnit files,
writes `ctrf.json` with `[f2p] ` / `[p2p] ` labels on the names and `reward.json`, and moves the
JUnit files under `reports/`.

The task lists no acceptance tests, so a passing reward is held to the clean state's report.
Both reports are the grader's, labels included: before, the clean state's labelled names were
compared with the final report's unlabelled ones, and the oracle was "contradicted" on every
test. The local backend runs the task's own test.sh and grader as they are (no engine needed).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from taskfactory import make_task

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

TEST_SH = textwrap.dedent(
    """\
    #!/bin/bash
    TESTS_DIR="${TESTS_DIR:-/tests}"
    LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
    APP_DIR="${APP_DIR:-/app}"
    mkdir -p "$LOGS_DIR"
    cd "$APP_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
    unset PYTHONPATH
    export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
    run_tests() {
      python3 -I -B -m pytest -c "$TESTS_DIR/pytest.ini" --rootdir "$TESTS_DIR" -o pythonpath="$APP_DIR" \\
        -q "$TESTS_DIR" --junitxml="$1"
    }
    # The base commit first: the tests failing there are the ones the work must fix.
    run_tests "$LOGS_DIR/junit-base.xml"
    PATCH="${ARTIFACTS_DIR:-/logs/artifacts}/workspace.patch"
    if [ -s "$PATCH" ] && ! git -c safe.directory='*' apply --binary --whitespace=nowarn "$PATCH"; then
      echo 0 > "$LOGS_DIR/reward.txt"; exit 0
    fi
    run_tests "$LOGS_DIR/junit.xml"
    python3 -I -B "$TESTS_DIR/grade.py" "$LOGS_DIR" || echo -1 > "$LOGS_DIR/reward.txt"
    exit 0
    """
)

# The grader: not pytest, a script of the task's own.
GRADE_PY = textwrap.dedent(
    """\
    import json
    import os
    import sys
    import xml.etree.ElementTree as ET

    logs = sys.argv[1]


    def statuses(path):
        found = {}
        for case in ET.parse(path).getroot().iter("testcase"):
            failed = any(child.tag in ("failure", "error") for child in case)
            found[f"{case.get('classname')}.{case.get('name')}"] = "failed" if failed else "passed"
        return found


    base, new = statuses(f"{logs}/junit-base.xml"), statuses(f"{logs}/junit.xml")
    tests, f2p, p2p = [], [], []
    for name, status in sorted(new.items()):
        bucket = "p2p" if base.get(name) == "passed" else "f2p"
        (p2p if bucket == "p2p" else f2p).append(status == "passed")
        tests.append({"name": f"[{bucket}] {name}", "status": status})
    reward = 1 if all(f2p) and all(p2p) else 0
    with open(f"{logs}/ctrf.json", "w") as out:
        json.dump({"results": {"tool": {"name": "grade.py"}, "tests": tests}}, out)
    with open(f"{logs}/reward.json", "w") as out:
        json.dump({"reward": reward, "f2p_total": len(f2p), "f2p_passed": sum(f2p),
                   "p2p_total": len(p2p), "p2p_passed": sum(p2p)}, out)
    os.makedirs(f"{logs}/reports", exist_ok=True)
    os.replace(f"{logs}/junit-base.xml", f"{logs}/reports/base.xml")
    os.replace(f"{logs}/junit.xml", f"{logs}/reports/new.xml")
    """
)


def _grader_task(root: Path) -> None:
    task = make_task(root, "graded", states={}, test_sh=TEST_SH, environment_mode="separate")
    (task / "tests" / "grade.py").write_text(GRADE_PY)
    # No f2p/p2p lists: the expected tests are the clean state's report.
    (task / "tests" / "config.json").write_text(json.dumps({"grade": "ctrf"}))


def _run(root: Path, agent: str, backend: LocalBackend) -> dict[str, Any]:
    entry = load_dataset(root / "data").entries[0]
    options = RunOptions(run_id=f"deepswe-{root.name}", run_dir=root / "run", infra_retries=1)
    return record_json(run_item(entry.task, None, resolve_agent(agent), backend, options))


def test_a_deepswe_grader_task_grades_its_oracle_solved_and_noop_failed(tmp_path: Path) -> None:
    _grader_task(tmp_path / "data")
    assert load_dataset(tmp_path / "data").entries[0].task.acceptance_tests() is None
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    oracle = _run(tmp_path, "oracle", backend)
    assert (oracle["outcome"], oracle["reward"], oracle.get("contradicted")) == ("success", 1.0, None), (
        oracle["verifier_notes"], oracle["attempts"])
    # The labelled names as the grader wrote them, the JUnit files under reports/ never counted twice.
    assert oracle["tests"] == {"[f2p] test_calc.test_clamp_high": "passed", "[f2p] test_calc.test_clamp_low": "passed",
                               "[p2p] test_calc.test_add": "passed", "[p2p] test_calc.test_clamp_inside": "passed"}
    assert oracle["rewards"]["f2p_passed"] == 2 and oracle["rewards"]["p2p_passed"] == 2
    noop = _run(tmp_path, "noop", backend)
    assert (noop["outcome"], noop["reward"], noop.get("contradicted")) == ("failure", 0.0, None), noop["attempts"]
    assert noop["tests"]["[f2p] test_calc.test_clamp_high"] == "failed"
    assert not any("contradicted" in note for note in (*oracle["verifier_notes"], *noop["verifier_notes"]))

"""Small tasks of the project's own that reproduce the conventions of published benchmark tasks.

Each is written as the benchmark writes its tasks, and is left unedited by the suite's
metadata: no `[metadata] track`, no `[metadata] workdir`.

- `write_deepswe_task`: a DeepSWE v1.1-shaped repository task. A named `[environment]
  docker_image` (the test builds it from `environment/Dockerfile`, as such images are rebuilt
  offline), a base commit, a separate verifier built from `tests/Dockerfile` (the task image
  plus the hidden tests), a collect step grading only committed work (`git diff BASE HEAD`),
  `solution/solve.sh` applying `/solution/solution.patch` and committing it, and a `test.sh`
  that runs the suite on the base and with the patch into `base.xml` / `new.xml`, writes the
  canonical `ctrf.json` (ids `[f2p] ...` / `[p2p] ...`) and `reward.json` (f2p/p2p counts),
  then moves the JUnit files under `/logs/verifier/reports/`.
- `write_tb2_task`: a Terminal-Bench 2-shaped machine task. The image's WORKDIR is not /app,
  the verifier shares the agent's container, `test.sh` refuses to run from `/`, writes
  `ctrf.json` by a pytest plugin and `reward.txt`; `solve.sh` works relative to the WORKDIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

from swe_residual.environments.docker.base_image import BASE_IMAGE

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
}

# -- DeepSWE-shaped ---------------------------------------------------------------------------
CALC_BASE = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    raise NotImplementedError\n"
CALC_FIXED = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
CALC_WRONG = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
P2P_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
F2P_TEST = textwrap.dedent("""\
    from calc import mul


    def test_mul():
        assert mul(2, 3) == 6


    def test_mul_zero():
        assert mul(0, 7) == 0
""")
F2P_IDS = ["tests.test_mul.test_mul", "tests.test_mul.test_mul_zero"]
P2P_IDS = ["tests.test_add.test_add"]

DEEPSWE_TEST_SH = textwrap.dedent("""\
    #!/bin/bash
    set -uo pipefail
    trap 'if [ ! -f /logs/verifier/reward.json ] && [ ! -f /logs/verifier/reward.txt ]; then mkdir -p /logs/verifier; echo -1 > /logs/verifier/reward.txt; fi' EXIT
    cd /app || exit 6
    mkdir -p /logs/verifier
    cp /tests/test_mul.py tests/test_mul.py
    # The suites on the base commit, then with the submitted patch.
    python3 -m pytest -q -p no:cacheprovider tests --junitxml=/logs/verifier/base.xml
    if [ -s /logs/artifacts/model.patch ]; then
      git apply --whitespace=nowarn /logs/artifacts/model.patch \\
        || { echo '{"reward": 0, "apply_failed": 1}' > /logs/verifier/reward.json; exit 0; }
    fi
    python3 -m pytest -q -p no:cacheprovider tests --junitxml=/logs/verifier/new.xml
    python3 /tests/grade.py
    # Keep only the canonical files at the top; framework reports go under reports/.
    mkdir -p /logs/verifier/reports
    mv -f /logs/verifier/*.xml /logs/verifier/reports/
""")

DEEPSWE_GRADE_PY = textwrap.dedent("""\
    import json
    import xml.etree.ElementTree as ET

    config = json.load(open("/tests/config.json"))
    statuses = {}
    for case in ET.parse("/logs/verifier/new.xml").getroot().iter("testcase"):
        status = "failed" if case.find("failure") is not None or case.find("error") is not None else (
            "skipped" if case.find("skipped") is not None else "passed")
        statuses[f"{case.get('classname')}.{case.get('name')}"] = status
    tests, counts = [], {}
    for bucket in ("p2p", "f2p"):
        ids = config[f"{bucket}_node_ids"]
        passed = sum(statuses.get(i) == "passed" for i in ids)
        counts[f"{bucket}_total"], counts[f"{bucket}_passed"] = len(ids), passed
        tests += [{"name": f"[{bucket}] {i}", "status": "passed" if statuses.get(i) == "passed" else "failed"}
                  for i in ids]
    reward = int(counts["f2p_total"] > 0 and counts["f2p_passed"] == counts["f2p_total"]
                 and counts["p2p_passed"] == counts["p2p_total"])
    json.dump({"reportFormat": "CTRF", "results": {"tool": {"name": "pytest-junitxml"}, "tests": tests}},
              open("/logs/verifier/ctrf.json", "w"))
    json.dump({"reward": reward, **counts}, open("/logs/verifier/reward.json", "w"))
""")

DEEPSWE_SOLVE_SH = textwrap.dedent("""\
    #!/bin/bash
    cd /app
    git apply --whitespace=nowarn /solution/solution.patch
    git checkout -b feature/solution 2>/dev/null || true
    git add -A
    git -c user.name=oracle -c user.email=oracle@local commit -q --no-verify -m "Apply reference solution" || true
""")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_IDENTITY}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _diff(repo: Path, path: str, text: str) -> str:
    """The diff that turns `path` of the repository's HEAD into `text` (the tree left as it was)."""
    original = (repo / path).read_text()
    (repo / path).write_text(text)
    try:
        return _git(repo, "diff", "--binary")
    finally:
        (repo / path).write_text(original)


def write_deepswe_task(root: Path, image: str, *, solve_sh: str = DEEPSWE_SOLVE_SH, name: str = "calc-deepswe") -> Path:
    """The DeepSWE-shaped task under `root/name`, with one Residual State (an uncommitted,
    wrong `mul`); returns the task directory. Build `image` from its environment/ first."""
    task = root / name
    repo = task / "environment" / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC_BASE)
    (repo / "tests" / "test_add.py").write_text(P2P_TEST)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (task / "environment" / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY repo/ /app/\nRUN git config --global --add safe.directory /app\n"
        'CMD ["/bin/bash"]\n')
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        schema_version = "1.3"
        artifacts = ["/logs/artifacts/model.patch"]
        [task]
        name = "conformance/{name}"
        [metadata]
        task_id = "{name}"
        base_commit_hash = "{base}"
        [verifier]
        network_mode = "no-network"
        environment_mode = "separate"
        timeout_sec = 120.0
        [verifier.environment]
        build_timeout_sec = 300.0
        [[verifier.collect]]
        command = "cd /app && mkdir -p /logs/artifacts && git config --global --add safe.directory /app && git diff --binary {base} HEAD > /logs/artifacts/model.patch"
        timeout_sec = 60.0
        [agent]
        network_mode = "no-network"
        timeout_sec = 120.0
        [environment]
        docker_image = "{image}"
        build_timeout_sec = 300.0
    """))
    (task / "instruction.md").write_text("Implement `mul` in calc.py.\n")
    tests = task / "tests"
    tests.mkdir()
    (tests / "Dockerfile").write_text(
        f"FROM {image}\nCOPY test.sh grade.py config.json test_mul.py /tests/\nRUN chmod +x /tests/test.sh\n")
    (tests / "test.sh").write_text(DEEPSWE_TEST_SH)
    (tests / "grade.py").write_text(DEEPSWE_GRADE_PY)
    (tests / "test_mul.py").write_text(F2P_TEST)
    (tests / "config.json").write_text(json.dumps(
        {"base_commit": base, "f2p_node_ids": F2P_IDS, "p2p_node_ids": P2P_IDS, "grade": {"format": "junit"}}))
    solution = task / "solution"
    solution.mkdir()
    (solution / "solve.sh").write_text(solve_sh)
    (solution / "solution.patch").write_text(_diff(repo, "calc.py", CALC_FIXED))
    state = task / "residual" / "wrong-mul"
    state.mkdir(parents=True)
    (state / "state.toml").write_text('predecessor = "drafter"\nsource_run = "conformance"\n')
    (state / "changes.patch").write_text(_diff(repo, "calc.py", CALC_WRONG))
    return task


# -- Terminal-Bench 2-shaped ------------------------------------------------------------------
TB2_WORKDIR = "/srv/site"
TB2_SETUP_SH = "mkdir -p /srv/site && echo draft > /srv/site/page.txt\n"
TB2_TEST_SH = textwrap.dedent("""\
    #!/bin/bash
    # Check if we're in a valid working directory
    if [ "$PWD" = "/" ]; then
        echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
        exit 1
    fi
    python3 /tests/run_ctrf.py /tests/test_outputs.py
    if [ $? -eq 0 ]; then
      echo 1 > /logs/verifier/reward.txt
    else
      echo 0 > /logs/verifier/reward.txt
    fi
""")
# pytest-json-ctrf's shape: one entry per test, named by its node id.
TB2_RUN_CTRF = textwrap.dedent("""\
    import json
    import sys

    import pytest


    class Ctrf:
        def __init__(self):
            self.tests = {}

        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                self.tests[report.nodeid] = report.outcome


    plugin = Ctrf()
    code = pytest.main([sys.argv[1], "-q", "-p", "no:cacheprovider", "--rootdir=/tests"], plugins=[plugin])
    tests = [{"name": name, "status": status} for name, status in plugin.tests.items()]
    json.dump({"results": {"tool": {"name": "pytest"}, "tests": tests}}, open("/logs/verifier/ctrf.json", "w"))
    sys.exit(code)
""")
TB2_TESTS = textwrap.dedent(f"""\
    import os
    from pathlib import Path


    def test_page_published():
        assert Path("{TB2_WORKDIR}/page.txt").read_text().strip() == "published"


    def test_verifier_runs_in_the_workdir():
        assert os.getcwd() == "{TB2_WORKDIR}"
""")
TB2_IDS = ["test_outputs.py::test_page_published", "test_outputs.py::test_verifier_runs_in_the_workdir"]
# Relative to the WORKDIR, as Terminal-Bench's solve.sh files are written.
TB2_SOLVE_SH = "#!/bin/bash\necho published > page.txt\n"


def write_tb2_task(root: Path, name: str = "publish-page-tb2") -> Path:
    """The Terminal-Bench-shaped task under `root/name` with one machine-track Residual State
    (a predecessor that edited the page but did not publish it)."""
    task = root / name
    environment = task / "environment"
    environment.mkdir(parents=True)
    (environment / "setup.sh").write_text(TB2_SETUP_SH)
    (environment / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nWORKDIR /srv\nCOPY setup.sh ./\nRUN bash /srv/setup.sh\nWORKDIR {TB2_WORKDIR}\n")
    (task / "task.toml").write_text(textwrap.dedent("""\
        version = "1.0"

        [metadata]
        author_name = "conformance"
        difficulty = "easy"
        category = "system-administration"

        [verifier]
        timeout_sec = 120.0

        [agent]
        timeout_sec = 120.0

        [environment]
        build_timeout_sec = 300.0
        cpus = 1
        memory = "2G"
    """))
    (task / "instruction.md").write_text("Publish the page: page.txt must say `published`.\n")
    tests = task / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(TB2_TEST_SH)
    (tests / "run_ctrf.py").write_text(TB2_RUN_CTRF)
    (tests / "test_outputs.py").write_text(TB2_TESTS)
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text(TB2_SOLVE_SH)
    state = task / "residual" / "edited"
    state.mkdir(parents=True)
    (state / "state.toml").write_text('predecessor = "editor"\nsource_run = "conformance"\n')
    (state / "commands.jsonl").write_text(json.dumps({"command": "echo edited > page.txt"}) + "\n")
    return task

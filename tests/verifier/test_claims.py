"""A passing reward must be backed by the report, the suite's own reporter and the expected tests (issue 33)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from swe_residual.environments.verifier.channel import CHANNEL_VARIABLE, Reporter, aliases, junit_id, read_channel
from swe_residual.environments.docker.toolchain import TOOL_NAMES, Resolved, Toolchain, tool_names, toolchain_changes
from swe_residual.environments.verifier.claims import check_claim, patch_touches_pytest, pytest_machinery_note
from swe_residual.environments.verifier.expected import CLEAN_RUN, METADATA, REQUIRED, ExpectedTests
from swe_residual.environments.verifier.outputs import Verdict


def events(*rows: dict) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def passing(tests: dict[str, str]) -> Verdict:
    return Verdict(valid=True, reward=1.0, tests=tests, rewards={"reward": 1.0})


CLEAN = ExpectedTests(CLEAN_RUN, {"test_done.test_done": "failed", "test_done.test_slow": "skipped"}, complete=True,
                      reporter_seen=True)


@pytest.mark.unit
def test_channel_sessions_statuses_and_files() -> None:
    data = events(
        {"e": "start", "pid": 7, "pytest": "8.0"},
        {"e": "file", "pid": 7, "path": "/tests/test_a.py", "sha256": "aa"},
        {"e": "test", "pid": 7, "id": "test_a.py::test_x", "when": "setup", "outcome": "passed"},
        {"e": "test", "pid": 7, "id": "test_a.py::test_x", "when": "call", "outcome": "passed"},
        {"e": "test", "pid": 7, "id": "test_a.py::test_x", "when": "teardown", "outcome": "failed"},
        {"e": "test", "pid": 7, "id": "test_a.py::test_y", "when": "setup", "outcome": "skipped"},
        {"e": "start", "pid": 8},  # a second pytest at the same time
        {"e": "test", "pid": 8, "id": "test_a.py::test_y", "when": "call", "outcome": "passed"},
        {"e": "finish", "pid": 7, "exitstatus": 1},
    ) + b"not json\n"
    report = read_channel(data)
    first, second = report.sessions
    assert (first.finished, first.exit_status, first.tests) == (True, 1, {"test_a.py::test_x": "error",
                                                                        "test_a.py::test_y": "skipped"})
    assert (second.finished, second.tests) == (False, {"test_a.py::test_y": "passed"})
    assert report.unfinished == 1 and report.files == {"/tests/test_a.py": "aa"}
    assert report.problems == ("line 10 is not the reporter's",)


@pytest.mark.unit
def test_report_ids_of_a_node_id() -> None:
    # pytest's JUnit XML: the file path dotted without .py, the classes, the name with its parameters.
    assert junit_id("tests/test_a.py::TestB::test_c[x.y/z]") == "tests.test_a.TestB.test_c[x.y/z]"
    # A parametrized node also answers to its ids without parameters (a CTRF report may name it once).
    assert aliases("test_a.py::test_c[1]") == {"test_a.py::test_c[1]", "test_a.test_c[1]", "test_c[1]",
                                               "test_a.py::test_c", "test_a.test_c", "test_c"}
    assert aliases("test_a.py::test_c") == {"test_a.py::test_c", "test_a.test_c", "test_c"}


@pytest.mark.unit
def test_metadata_acceptance_tests_must_all_pass() -> None:
    expected = ExpectedTests(METADATA, {"t.a": REQUIRED, "t.b": REQUIRED})
    assert check_claim(passing({"t.a": "passed", "[f2p] t.b": "passed"}), expected, None).reward == 1.0
    verdict = check_claim(passing({"t.a": "passed", "t.b": "skipped"}), expected, None)
    assert (verdict.reward, verdict.claimed_reward, verdict.rewards) == (0.0, 1.0, {"reward": 1.0})
    assert "1 of 2 acceptance test(s) of tests/config.json did not pass in the report (t.b skipped)" in verdict.notes[-1]
    # Extra tests beside the required ones are the task's own business.
    assert check_claim(passing({"t.a": "passed", "t.b": "passed", "t.c": "passed"}), expected, None).reward == 1.0


@pytest.mark.unit
def test_expected_tests_from_the_clean_run() -> None:
    honest = {"test_done.test_done": "passed", "test_done.test_slow": "skipped"}
    assert check_claim(passing(honest), CLEAN, None).reward == 1.0
    cases = {
        "the report names no test": {},
        "names 1 test(s) the clean state's report does not (test_ok.test_ok)": {**honest, "test_ok.test_ok": "passed"},
        "leaves out 1 test(s) of the clean state's report (test_done.test_done)": {"test_done.test_slow": "skipped"},
        "1 test(s) did not pass in the report (test_done.test_done skipped)": {**honest, "test_done.test_done": "skipped"},
    }
    for phrase, tests in cases.items():
        verdict = check_claim(passing(tests), CLEAN, None)
        assert verdict.reward == 0.0 and phrase in verdict.notes[-1], (phrase, verdict.notes)
    # A clean state that failed to collect: its report is not the whole set, only the passes are checked.
    partial = ExpectedTests(CLEAN_RUN, {"tests.test_mod": "error"}, complete=False)
    assert check_claim(passing({"tests.test_mod.test_x": "passed"}), partial, None).reward == 1.0
    # A verifier that reports no test on its clean state (reward only): nothing to hold the reward to.
    assert check_claim(passing({}), ExpectedTests(CLEAN_RUN, {}, complete=False), None).reward == 1.0


@pytest.mark.unit
def test_the_suites_reporter_contradicts_a_forged_report() -> None:
    start = {"e": "start", "pid": 1}
    finished = read_channel(events(start, {"e": "test", "pid": 1, "id": "test_done.py::test_done", "when": "call",
                                           "outcome": "passed"}, {"e": "finish", "pid": 1, "exitstatus": 0}))
    assert check_claim(passing({"test_done.test_done": "passed"}), None, finished).reward == 1.0
    cases = {
        "1 pytest session(s) ended without finishing": read_channel(events(start)),
        "were not passed by pytest's own account (test_done.test_done failed)": read_channel(events(
            start, {"e": "test", "pid": 1, "id": "test_done.py::test_done", "when": "call", "outcome": "failed"},
            {"e": "finish", "pid": 1, "exitstatus": 1})),
        "no pytest ran under the suite's reporter, though one did on the clean state": read_channel(b""),
    }
    for phrase, channel in cases.items():
        verdict = check_claim(passing({"test_done.test_done": "passed"}), CLEAN, channel)
        assert verdict.reward == 0.0 and phrase in verdict.notes[-1], (phrase, verdict.notes)
    # Ids of another form: the counts must agree.
    other = check_claim(passing({"Done: done": "passed", "Done: twice": "passed"}), None, finished)
    assert other.reward == 0.0 and "2 passed test(s), pytest's own account at most 1" in other.notes[-1]
    # Two sessions (a DeepSWE verifier runs the tests on the base commit, then on the work): a
    # test passed in either stands.
    two = read_channel(events(
        start, {"e": "test", "pid": 1, "id": "t.py::a", "when": "call", "outcome": "failed"},
        {"e": "finish", "pid": 1, "exitstatus": 1},
        {"e": "start", "pid": 2}, {"e": "test", "pid": 2, "id": "t.py::a", "when": "call", "outcome": "passed"},
        {"e": "finish", "pid": 2, "exitstatus": 0}))
    assert check_claim(passing({"[f2p] t.a": "passed"}), None, two).reward == 1.0


@pytest.mark.unit
def test_a_report_naming_a_parametrized_test_once_stands_for_all_its_cases() -> None:
    """torch-tensor-parallelism's CTRF names `test_row_parallel_linear` once; pytest ran it for
    each world size. Passed only when every case passed in the session."""
    start = {"e": "start", "pid": 1}

    def run(*outcomes: str) -> object:
        cases = [{"e": "test", "pid": 1, "id": f"test_outputs.py::test_row_parallel_linear[{size}]", "when": "call",
                  "outcome": outcome} for size, outcome in enumerate(outcomes, start=1)]
        return read_channel(events(start, *cases, {"e": "finish", "pid": 1, "exitstatus": 0}))

    claim = passing({"test_outputs.py::test_row_parallel_linear": "passed"})
    assert check_claim(claim, None, run("passed", "passed", "passed")).reward == 1.0
    failed = check_claim(claim, None, run("passed", "failed", "passed"))
    assert failed.reward == 0.0 and "test_row_parallel_linear failed" in failed.notes[-1]


@pytest.mark.unit
def test_a_hidden_test_file_imported_with_other_bytes() -> None:
    channel = read_channel(events({"e": "start", "pid": 1}, {"e": "file", "pid": 1, "path": "/tests/test_done.py",
                                                               "sha256": "bb"}, {"e": "finish", "pid": 1, "exitstatus": 0}))
    verdict = check_claim(passing({}), None, channel, {"test_done.py": "aa"}, "/tests")
    assert verdict.reward == 0.0 and "/tests/test_done.py" in verdict.notes[-1]
    assert check_claim(passing({}), None, channel, {"test_done.py": "bb"}, "/tests").reward == 1.0


@pytest.mark.unit
def test_a_failing_reward_is_never_questioned() -> None:
    failing = Verdict(valid=True, reward=0.0, tests={}, rewards={"reward": 0.0})
    assert check_claim(failing, CLEAN, read_channel(b"")) is failing


@pytest.mark.slow
def test_the_reporter_loads_before_the_tests_even_under_isolated_mode(tmp_path: Path) -> None:
    """The real mechanism on this machine's Python: the module and its .pth in a site-packages
    that holds pytest (a fresh virtual environment sharing this interpreter's packages), a
    plain `python -I -m pytest` whose module under test exits with status 0 at import."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Run from a virtual environment, this interpreter's packages (pytest among them) are that
    # environment's, not its base's that `--system-site-packages` shares: a path file lists them.
    here = sysconfig.get_paths()
    (Path(purelib) / "outer_packages.pth").write_text("".join(f"{here[k]}\n" for k in ("purelib", "platlib")))
    (Path(purelib) / "_pytest").mkdir()  # the install looks for pytest's package beside it
    stage = tmp_path / "stage"
    reporter = Reporter(str(stage), "channel.jsonl")
    for path, data in reporter.files().items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    install = reporter.install_command().replace("for packages in /usr/lib/python3*/*-packages",
                                                 f"for packages in {venv}/lib/python3*/site-packages")
    subprocess.run(["sh", "-c", install], check=True)
    assert sorted(p.name for p in Path(purelib).glob("swe_residual_verdict*")) == ["swe_residual_verdict.pth",
                                                                                 "swe_residual_verdict.py"]
    (Path(purelib) / "_pytest").rmdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text("import os\nos._exit(0)\n")
    (work / "test_calc.py").write_text("import calc\n\ndef test_one():\n    pass\n")
    (work / "test_first.py").write_text("def test_zero():\n    pass\n")
    channel = tmp_path / reporter.channel_name
    env = {**os.environ, CHANNEL_VARIABLE: str(channel), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_PLUGINS", None)
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([str(python), "-I", "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_first.py",
                           "test_calc.py"], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0  # the forger's exit status, as the task's test.sh would see it
    logs = {"reports/x.xml": b"", reporter.channel_name: channel.read_bytes()}
    report = read_channel(reporter.take_channel(logs))
    assert logs == {"reports/x.xml": b""}  # the channel is not one of the task's log files
    (session,) = report.sessions
    assert not session.finished and report.unfinished == 1
    assert str(work / "test_calc.py") in report.files
    # A task that makes every warning an error still passes when it passes: the reporter gives
    # pytest nothing to warn about (it was imported before pytest could rewrite it).
    (work / "strict").mkdir()
    (work / "strict" / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    (work / "strict" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    strict = subprocess.run([str(python), "-I", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "error"],
                            cwd=work / "strict", env={**env, CHANNEL_VARIABLE: str(tmp_path / "strict.jsonl")},
                            capture_output=True, text=True)
    assert strict.returncode == 0 and "warning" not in strict.stdout, strict.stdout
    (finished,) = read_channel((tmp_path / "strict.jsonl").read_bytes()).sessions
    assert finished.finished and finished.tests == {"test_ok.py::test_ok": "passed"}
    # Any other Python process of the environment is untouched by the module (no variable set).
    quiet = subprocess.run([str(python), "-c", "import os; print(os.environ.get('PYTEST_PLUGINS'))"],
                           env={**env, CHANNEL_VARIABLE: str(tmp_path / "other.jsonl")}, capture_output=True, text=True)
    assert quiet.stdout.strip() == "None" and not (tmp_path / "other.jsonl").exists()


@pytest.mark.unit
def test_a_phase_that_raised_outranks_a_report_rewritten_in_process() -> None:
    """Issue 48: a makereport wrapper turned the failure into a pass; the phase's own result did not."""
    data = events(
        {"e": "start", "pid": 7},
        {"e": "raw", "pid": 7, "id": "test_done.py::test_done", "when": "call", "raised": True, "skip": False},
        {"e": "test", "pid": 7, "id": "test_done.py::test_done", "when": "call", "outcome": "passed"},
        {"e": "raw", "pid": 7, "id": "test_done.py::test_slow", "when": "call", "raised": True, "skip": True},
        {"e": "test", "pid": 7, "id": "test_done.py::test_slow", "when": "call", "outcome": "skipped"},
        {"e": "hook", "pid": 7, "hook": "pytest_runtest_makereport", "file": "/app/calc.py"},
        {"e": "finish", "pid": 7, "exitstatus": 0},
    )
    channel = read_channel(data)
    assert channel.sessions[0].raised == {"test_done.py::test_done": "failed"}  # a skip is no failure
    assert channel.hooks == (("pytest_runtest_makereport", "/app/calc.py"),)
    verdict = check_claim(passing({"test_done.test_done": "passed", "test_done.test_slow": "skipped"}), CLEAN, channel)
    assert verdict.reward == 0.0 and "not passed by pytest's own account (test_done.test_done failed)" in verdict.notes[-1]
    note = pytest_machinery_note(channel, "/tests", "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n+x = 1\n")
    assert note is not None and "pytest_runtest_makereport in /app/calc.py" in note and "patch" not in note
    # The task's own conftest and the image's installed plugins are not flagged.
    tasks_own = read_channel(events({"e": "start", "pid": 1},
                                    {"e": "hook", "pid": 1, "hook": "pytest_runtest_call", "file": "/tests/conftest.py"},
                                    {"e": "hook", "pid": 1, "hook": "pytest_runtest_call",
                                     "file": "/usr/lib/python3/dist-packages/pytest_cov/plugin.py"}))
    assert pytest_machinery_note(tasks_own, "/tests", None) is None


@pytest.mark.unit
def test_patches_touching_pytests_machinery_are_named() -> None:
    patch = ("--- a/conftest.py\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+x = 1\n"
             "--- a/lib/util.py\n+++ b/lib/util.py\n@@ -1 +1,2 @@\n+@pytest.hookimpl(hookwrapper=True)\n"
             "--- a/setup.cfg\n+++ b/setup.cfg\n@@ -1 +1,2 @@\n+pytest11 = forge = lib.util\n"
             "--- a/lib/calc.py\n+++ b/lib/calc.py\n@@ -1 +1 @@\n-    return value\n+    return max(value, low)\n")
    assert patch_touches_pytest(patch) == ["conftest.py", "lib/util.py", "setup.cfg"]
    assert patch_touches_pytest(None) == []


@pytest.mark.unit
def test_the_streamed_channel_wins_over_the_file() -> None:
    reporter = Reporter.new()
    forged = events({"e": "start", "pid": 9}, {"e": "test", "pid": 9, "id": "t.py::t", "when": "call", "outcome": "passed"})
    streamed = events({"e": "start", "pid": 3}, {"e": "test", "pid": 3, "id": "t.py::t", "when": "call", "outcome": "failed"})
    files = {reporter.channel_name: forged, "junit.xml": b"<x/>"}
    assert reporter.take_channel(dict(files), b"sh: 1: oops\n" + streamed).endswith(streamed)
    assert files[reporter.channel_name] == forged
    # Nothing streamed (pytest started where the descriptor did not reach): the file is read.
    left = dict(files)
    assert reporter.take_channel(left, b"") == forged and reporter.channel_name not in left


@pytest.mark.unit
def test_toolchain_differences_name_the_file() -> None:
    clean = Toolchain({"python3": Resolved("/usr/bin/python3", "/usr/bin/python3.11", "aa"),
                       "sh": Resolved("/bin/sh", "/usr/bin/dash", "bb")},
                      {"/usr/lib/python3/dist-packages/_pytest": {"runner.py": "cc", "__pycache__/runner.pyc": "dd"}})
    assert toolchain_changes(clean, clean) == []
    honest = Toolchain({**clean.commands, "uv": Resolved("/usr/local/bin/uv", "/usr/local/bin/uv", "ee")},
                       {"/usr/lib/python3/dist-packages/_pytest": {"runner.py": "cc", "__pycache__/runner.pyc": "dd",
                                                                    "__pycache__/x.cpython-311.pyc": "ff"}})
    assert toolchain_changes(clean, honest) == []  # a new command, a compiled file pytest wrote
    shadowed = Toolchain({**clean.commands, "python3": Resolved("/usr/local/bin/python3", "/usr/local/bin/python3", "99")},
                         {"/usr/lib/python3/dist-packages/_pytest": {"runner.py": "00", "forge.py": "11"},
                          "/usr/local/lib/python3.11/dist-packages/_pytest": {"runner.py": "22"}})
    assert toolchain_changes(clean, shadowed) == [
        "/usr/local/bin/python3 is the first python3 on the PATH (the clean image's: /usr/bin/python3)",
        "/usr/lib/python3/dist-packages/_pytest/__pycache__/runner.pyc is not the clean image's",
        "/usr/lib/python3/dist-packages/_pytest/runner.py is not the clean image's",
        "/usr/lib/python3/dist-packages/_pytest/forge.py was added",
        "/usr/local/lib/python3.11/dist-packages/_pytest was added (pytest's packages are the clean image's)",
    ]
    assert tool_names("uv run python3.12 -m pytest") == (*TOOL_NAMES, "python3.12")

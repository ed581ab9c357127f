"""The conventions of published tasks that need no engine: the track rule, the one per-test
report, DeepSWE's bucket-labelled acceptance ids, validate's grading warning."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from swe_residual.dataset.load import load_dataset
from swe_residual.residualize.check import dockerfile_workdir, grading_warnings
from swe_residual.environments.base import VerifierOutput
from swe_residual.dataset.task import load_task
from swe_residual.dataset.tracks import resolve_track
from swe_residual.environments.verifier.outputs import evaluate, read_test_reports

pytestmark = pytest.mark.unit

CTRF = b'{"results": {"tests": [{"name": "[f2p] tests.t.test_a", "status": "passed"}, ' \
       b'{"name": "[p2p] tests.t.test_b", "status": "failed"}]}}'
BASE_XML = b'<testsuite><testcase classname="tests.t" name="test_a"><failure/></testcase>' \
           b'<testcase classname="tests.t" name="test_b"/></testsuite>'
NEW_XML = b'<testsuite><testcase classname="tests.t" name="test_a"/><testcase classname="tests.t" name="test_b"/></testsuite>'


def _task(root: Path, name: str, toml: str, states: dict[str, str] | None = None) -> Path:
    task = root / name
    task.mkdir(parents=True)
    (task / "task.toml").write_text(textwrap.dedent(toml))
    (task / "instruction.md").write_text("Do it.\n")
    for state, payload in (states or {}).items():
        directory = task / "residual" / state
        directory.mkdir(parents=True)
        (directory / "state.toml").write_text('predecessor = "p"\n')
        (directory / payload).write_text("" if payload == "changes.patch" else '{"command": "true"}\n')
    return task


DEEPSWE_TOML = """\
    [metadata]
    base_commit_hash = "0123456789abcdef0123456789abcdef01234567"
    [verifier]
    environment_mode = "separate"
    [[verifier.collect]]
    command = "git diff > /logs/artifacts/model.patch"
"""
TB2_TOML = """\
    version = "1.0"
    [metadata]
    difficulty = "easy"
    [verifier]
    timeout_sec = 900.0
"""


def test_the_track_rule_places_published_tasks_without_editing_them(tmp_path: Path) -> None:
    deepswe = load_task(_task(tmp_path, "deep", DEEPSWE_TOML))
    tb2 = load_task(_task(tmp_path, "tb", TB2_TOML))
    assert (deepswe.track, tb2.track) == ("repo", "machine")
    assert deepswe.config.track_reason.startswith("a base commit and a separate verifier")
    assert tb2.config.track_reason.startswith("the verifier shares the agent's environment")
    assert deepswe.config.workdir is None and tb2.config.workdir is None


def test_states_and_the_task_itself_come_before_the_verifier_rule(tmp_path: Path) -> None:
    # Shared verifier, but the states are patches: repo.
    patched = load_task(_task(tmp_path, "patched", TB2_TOML, {"s1": "changes.patch"}))
    assert (patched.track, patched.config.track_reason) == ("repo", "its Residual States are patches (changes.patch)")
    explicit = load_task(_task(tmp_path, "explicit", '[metadata]\ntrack = "repo"\n', {"s1": "commands.jsonl"}))
    assert (explicit.track, explicit.config.track_reason) == ("repo", "task.toml [metadata] track")
    assert resolve_track(tmp_path / "x", None, None, "separate") == (
        "repo", "a separate verifier (only collected artifacts reach it)")


def test_a_dataset_override_places_what_the_rule_cannot_know(tmp_path: Path) -> None:
    _task(tmp_path, "tb", TB2_TOML)
    _task(tmp_path, "other", TB2_TOML)
    _task(tmp_path, "own", '[metadata]\ntrack = "machine"\n')
    (tmp_path / "swe-residual.toml").write_text('[tracks]\ndefault = "repo"\n[tracks.tasks]\n"other" = "machine"\n')
    dataset = load_dataset(tmp_path)
    tracks = {e.task.id: (e.task.track, e.task.config.track_reason) for e in dataset.entries}
    assert tracks["tb"][0] == "repo" and tracks["tb"][1].endswith("[tracks] default")
    assert tracks["other"][0] == "machine" and "[tracks.tasks] 'other'" in tracks["other"][1]
    assert tracks["own"] == ("machine", "task.toml [metadata] track")
    # One task given alone still reads its dataset's settings.
    assert load_dataset(tmp_path / "tb").entries[0].task.track == "repo"


def test_a_bad_override_is_an_error_naming_the_file_and_field(tmp_path: Path) -> None:
    _task(tmp_path, "tb", TB2_TOML)
    (tmp_path / "swe-residual.toml").write_text('[tracks]\ndefault = "desk"\n')
    dataset = load_dataset(tmp_path)
    assert len(dataset.task_errors) == 1
    assert "swe-residual.toml [tracks.default]: unknown track 'desk'" in str(dataset.task_errors[0][1])


def test_ctrf_is_the_one_report_and_reports_subdirectory_is_never_read() -> None:
    files = {"ctrf.json": CTRF, "reports/base.xml": BASE_XML, "reports/new.xml": NEW_XML, "reward.json": b'{"reward": 0}'}
    tests, problems = read_test_reports(files)
    assert tests == {"[f2p] tests.t.test_a": "passed", "[p2p] tests.t.test_b": "failed"} and problems == []


def test_top_level_junit_when_there_is_no_ctrf_and_never_reports() -> None:
    tests, _ = read_test_reports({"junit.xml": NEW_XML, "reports/base.xml": BASE_XML})
    assert tests == {"tests.t.test_a": "passed", "tests.t.test_b": "passed"}
    assert read_test_reports({"reports/base.xml": BASE_XML})[0] == {}


def test_deepswe_acceptance_ids_match_their_bucket_labels_and_are_not_counted_twice() -> None:
    output = VerifierOutput(exit_code=0, output="", timed_out=False,
                            files={"ctrf.json": CTRF, "reports/new.xml": NEW_XML, "reward.json": b'{"reward": 0}'})
    verdict = evaluate(output, ["tests.t.test_a", "tests.t.test_b"])
    assert len(verdict.tests) == 2
    assert verdict.tests == {"[f2p] tests.t.test_a": "passed", "[p2p] tests.t.test_b": "failed"}
    missing = evaluate(output, ["tests.t.test_a", "tests.t.test_c"])
    assert missing.tests["tests.t.test_c"] == "failed" and len(missing.tests) == 3


@pytest.mark.parametrize(("toml", "warned"), [
    ('[verifier]\nenvironment_mode = "separate"\n', True),
    ('artifacts = ["/logs/artifacts/x"]\n[verifier]\nenvironment_mode = "separate"\n', False),
    (TB2_TOML, False),
])
def test_validate_warns_of_a_separate_verifier_that_receives_nothing(tmp_path: Path, toml: str, warned: bool) -> None:
    task = load_task(_task(tmp_path, "t", toml))
    warnings = grading_warnings(task)
    assert bool(warnings) is warned
    if warned:
        assert "receives none of the agent's work" in warnings[0]


def test_the_images_workdir_is_read_from_its_dockerfile_as_written(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM a\nWORKDIR /app\nRUN true\nWORKDIR personal-site\n")
    assert dockerfile_workdir(dockerfile) == "/app/personal-site"
    dockerfile.write_text("FROM a AS build\nWORKDIR /src\nFROM b\nCOPY --from=build /src /x\n")
    assert dockerfile_workdir(dockerfile) is None  # the last stage's base decides: unknown here
    dockerfile.write_text("FROM a\nARG D=/w\nWORKDIR $D\n")
    assert dockerfile_workdir(dockerfile) is None
    assert dockerfile_workdir(tmp_path / "missing") is None

"""Reading the verifier's outputs as Harbor defines them (DESIGN §4, §7).

`test.sh` writes `reward.json` (flat numbers, `reward` primary) or `reward.txt`, and per-test
results as CTRF JSON or JUnit XML. No reward file, or a reward of -1, is no valid verdict:
never a task failure by itself; the runner decides whose failure it is (a verifier that works
on the task's clean state and not on the agent's final state is the agent's, DESIGN §7).
Hidden tests changed while they ran (shared mode) are tampering: a valid verdict of 0. The
task's reward is the verdict (DESIGN §7) as far as its per-test report backs it: a passing
reward that the report, the suite's own reporter or the expected tests contradict is a failure
(swe_residual/environments/verifier/claims.py, after this reading). Per-test results come from one report
(`report_source`): never several merged. They are kept as per-test statuses (an acceptance test
missing from every report is listed as failed).
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

from swe_residual.environments.base import VerifierOutput
from swe_residual.environments.verifier.inputs import tampering_note, toolchain_note

PASSED, FAILED, SKIPPED, ERROR = "passed", "failed", "skipped", "error"
CTRF_STATUS = {"passed": PASSED, "failed": FAILED, "skipped": SKIPPED, "pending": SKIPPED, "other": ERROR}


@dataclass(frozen=True)
class Verdict:
    valid: bool
    reward: float | None
    tests: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # why the verdict is not valid
    notes: tuple[str, ...] = ()
    # Every number reward.json held (DeepSWE writes f2p/p2p counts beside `reward`), or
    # {"reward": r} from reward.txt.
    rewards: dict[str, float] = field(default_factory=dict)
    # The reward file's figure when the per-test reports contradicted it (verifier/claims.py):
    # `reward` is then 0 and `rewards` still holds what the file said.
    claimed_reward: float | None = None

    @property
    def success(self) -> bool:
        return self.valid and self.reward is not None and self.reward >= 1.0


def parse_junit(data: bytes) -> dict[str, str]:
    """`classname.name` -> status, for every <testcase> in a JUnit XML report."""
    root = ElementTree.fromstring(data)
    statuses: dict[str, str] = {}
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        test_id = f"{classname}.{name}" if classname else name
        if case.find("error") is not None:
            status = ERROR
        elif case.find("failure") is not None:
            status = FAILED
        elif case.find("skipped") is not None:
            status = SKIPPED
        else:
            status = PASSED
        # A test reported twice (e.g. a teardown error after a pass) keeps its worst status.
        statuses[test_id] = _worst(statuses.get(test_id), status)
    return statuses


def parse_ctrf(data: bytes) -> dict[str, str]:
    """name -> status from a CTRF report (`results.tests[]`)."""
    document = json.loads(data)
    tests = document.get("results", {}).get("tests", [])
    if not isinstance(tests, list):
        raise ValueError("results.tests is not a list")
    statuses: dict[str, str] = {}
    for test in tests:
        name = test.get("name")
        if not isinstance(name, str):
            raise ValueError(f"a CTRF test has no name: {test!r}")
        suite = test.get("suite")
        test_id = f"{suite}.{name}" if isinstance(suite, str) and suite else name
        statuses[test_id] = _worst(statuses.get(test_id), CTRF_STATUS.get(test.get("status", "other"), ERROR))
    return statuses


_RANK = {PASSED: 0, SKIPPED: 1, FAILED: 2, ERROR: 3}


def _worst(previous: str | None, current: str) -> str:
    if previous is None:
        return current
    return previous if _RANK[previous] >= _RANK[current] else current


def read_reward(files: dict[str, bytes]) -> tuple[float | None, str | None]:
    """(reward, error). reward.json wins over reward.txt, as in Harbor."""
    rewards, error = read_rewards(files)
    return (None, error) if error is not None else (rewards["reward"], None)


def read_rewards(files: dict[str, bytes]) -> tuple[dict[str, float], str | None]:
    """(every reward number, error): `reward` is the primary one; other numeric keys are kept."""
    extra: dict[str, float] = {}
    if "reward.json" in files:
        try:
            document = json.loads(files["reward.json"])
            value = document["reward"] if isinstance(document, dict) else document
        except (ValueError, KeyError, TypeError) as exc:
            return {}, f"reward.json is unreadable: {exc}"
        if isinstance(document, dict):
            extra = {key: float(number) for key, number in document.items()
                     if key != "reward" and isinstance(number, (int, float)) and not isinstance(number, bool)}
    elif "reward.txt" in files:
        text = files["reward.txt"].decode("utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            return {}, f"reward.txt holds {text[:40]!r}, not a number"
    else:
        return {}, "the verifier wrote no reward file"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return {}, f"reward {value!r} is not a number"
    if value < 0:
        return {}, f"reward {value} marks a verifier error"
    return {"reward": float(value), **extra}, None


CTRF_REPORT = "ctrf.json"
# DeepSWE's grader names each test of its CTRF report by its bucket: `[f2p] tests.test_x` for a
# fail-to-pass test of tests/config.json, `[p2p] ...` for a pass-to-pass one.
ACCEPTANCE_BUCKETS = ("f2p", "p2p")


def report_source(files: dict[str, bytes]) -> list[str]:
    """The one report the per-test results come from, as Harbor reads them: `ctrf.json` at
    the top of /logs/verifier when present, else the JUnit XML files at its top. Nothing in a
    subdirectory counts (DeepSWE's `test.sh` moves its framework reports, `base.xml` being the
    run on the base commit, to `reports/`), so no test is ever counted from two reports."""
    if CTRF_REPORT in files:
        return [CTRF_REPORT]
    return sorted(name for name in files if "/" not in name and name.endswith(".xml"))


def read_test_reports(files: dict[str, bytes]) -> tuple[dict[str, str], list[str]]:
    """Per-test statuses from the verifier's one report (`report_source`); (statuses, problems).
    Ids are the report's own: CTRF `name` (prefixed by its `suite` when it has one), JUnit
    `classname.name`. Several top-level JUnit files are one report in parts (one per suite)."""
    statuses: dict[str, str] = {}
    problems: list[str] = []
    for name in report_source(files):
        try:
            found = parse_ctrf(files[name]) if name == CTRF_REPORT else parse_junit(files[name])
        except (ElementTree.ParseError, ValueError, AttributeError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        for test_id, status in found.items():
            statuses[test_id] = _worst(statuses.get(test_id), status)
    return statuses, problems


def reported_id(test_id: str, tests: dict[str, str]) -> str | None:
    """The report's id for an acceptance test of tests/config.json: the id itself, or the id
    under its DeepSWE bucket label; None when the report does not name it."""
    if test_id in tests:
        return test_id
    for bucket in ACCEPTANCE_BUCKETS:
        labelled = f"[{bucket}] {test_id}"
        if labelled in tests:
            return labelled
    return None


def evaluate(output: VerifierOutput, acceptance: list[str] | None = None) -> Verdict:
    """Turn raw verifier output into a verdict; an invalid verdict is an infra error."""
    if output.toolchain:
        # The interpreter, pytest or a command test.sh starts is not the clean image's: not run.
        return Verdict(valid=True, reward=0.0, notes=(*output.notes, toolchain_note(list(output.toolchain))),
                       rewards={"reward": 0.0})
    if output.tampered:
        # The hidden tests were not the task's when they ran: nothing they report counts.
        tests, _ = read_test_reports(output.files)
        return Verdict(valid=True, reward=0.0, tests=tests,
                       notes=(*output.notes, tampering_note(list(output.tampered))), rewards={"reward": 0.0})
    if output.error is not None:
        return Verdict(valid=False, reward=None, error=output.error)
    if output.timed_out:
        return Verdict(valid=False, reward=None, error="the verifier timed out")
    rewards, error = read_rewards(output.files)
    tests, problems = read_test_reports(output.files)
    if error is not None:
        tail = output.output.strip()[-300:]
        return Verdict(valid=False, reward=None, tests=tests, error=f"{error}; output: {tail}")
    notes = [*output.notes, *problems]
    reward = rewards["reward"]
    if acceptance is not None:
        for test_id in acceptance:
            if reported_id(test_id, tests) is None:  # missing from the report: counts as failed
                tests[test_id] = FAILED
    return Verdict(valid=True, reward=reward, tests=tests, notes=tuple(notes), rewards=rewards)

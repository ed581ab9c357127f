"""Which steps of a trajectory ran tests, and what their output said: for the `structured`
handoff (swe_residual/trial/handoff/views.py), which reports the tests a predecessor ran and their last
results as it saw them.

Read from text alone, so it recognizes the common runners by how they are invoked
(pytest, unittest, nose, tox, npm/yarn/pnpm test, jest, mocha, vitest, go test, cargo test,
make test/check, mvn/gradle test, rspec, ctest, phpunit, dotnet test) at the start of a shell
command segment. A runner's name elsewhere (`pip install pytest`, a heredoc writing a test
file) is not a test run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from swe_residual.agents.trajectory import Step

_RUNNER = re.compile(
    r"""^(?:\S*/)?(?:
        (?:python[0-9.]*\s+(?:-\S+\s+)*-m\s+)?(?:pytest|py\.test|unittest|nose2?|tox|nox)\b
      | (?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test\b
      | (?:npx\s+)?(?:jest|mocha|vitest)\b
      | go\s+test\b | cargo\s+(?:test|nextest)\b
      | make\s+(?:\S+\s+)*(?:test|check)\b
      | (?:mvn|gradle|gradlew)\s+(?:\S+\s+)*test\b
      | (?:bundle\s+exec\s+)?rspec\b | ctest\b | phpunit\b | dotnet\s+test\b
    )""",
    re.X,
)
# What may stand before a runner in a segment: variable assignments and wrapper commands.
_PREFIX = re.compile(r"^(?:(?:[A-Za-z_][A-Za-z0-9_]*=\S*|env|time|exec|sudo|nice|timeout\s+\S+"
                     r"|(?:uv|poetry|pipenv|hatch|pdm)\s+run)\s+)+")
_SEGMENT = re.compile(r"&&|\|\||[;|(){}]")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
# A pass/fail summary line of the runners above (the last one in an output is the result).
_SUMMARY = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|passing|failing)\b"
    r"|^(?:OK|FAILED)\b|^test result:|^(?:ok|FAIL|PASS)\b|^Tests:\s|no tests ran|^Ran \d+ tests?\b"
)
_FAILING = (
    re.compile(r"^(?:FAILED|ERROR) (\S+)"),  # pytest's short summary
    re.compile(r"^(\S+::\S+) (?:FAILED|ERROR)\b"),  # pytest -v
    re.compile(r"^(?:FAIL|ERROR): (\S+(?: \([^)]*\))?)"),  # unittest
    re.compile(r"^\s*--- FAIL: (\S+)"),  # go test
    re.compile(r"^test (\S+) \.\.\. FAILED"),  # cargo test
)
MAX_FAILING = 50


@dataclass(frozen=True)
class TestRun:
    """The last run of one test command: what the predecessor saw last."""

    __test__ = False  # not a pytest test class, whatever its name says

    command: str
    step: int  # 1-based index of that last run among the trajectory's steps
    exit_code: int | None
    summary: str | None
    failing: tuple[str, ...] = ()
    times: int = 1  # how often this command ran


def shell_lines(command: str) -> list[str]:
    """The command's lines without heredoc bodies (text written to files is not run)."""
    lines, terminator = [], None
    for line in command.splitlines():
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            continue
        lines.append(line)
        heredoc = _HEREDOC.search(line)
        if heredoc:
            terminator = heredoc.group(2)
    return lines


def runs_tests(command: str) -> bool:
    for line in shell_lines(command):
        for segment in _SEGMENT.split(line):
            text = _PREFIX.sub("", segment.strip())
            if _RUNNER.match(text):
                return True
    return False


def summary_line(output: str) -> str | None:
    """The last pass/fail summary line of an output, without pytest's `=` rulers."""
    for line in reversed(output.splitlines()):
        text = line.strip().strip("=").strip()
        if text and _SUMMARY.search(text):
            return text
    return None


def failing_tests(output: str) -> tuple[str, ...]:
    names = set()
    for line in output.splitlines():
        for pattern in _FAILING:
            match = pattern.match(line)
            if match:
                names.add(match.group(1))
                break
    return tuple(sorted(names)[:MAX_FAILING])


def find_test_runs(steps: list[Step]) -> list[TestRun]:
    """Every distinct test command, with its last run, in the order of those last runs."""
    last: dict[str, TestRun] = {}
    for index, step in enumerate(steps, start=1):
        if step.action != "command" or not step.command or not runs_tests(step.command):
            continue
        key = " ".join(step.command.split())
        times = last[key].times + 1 if key in last else 1
        last.pop(key, None)  # re-inserted: dict order is the order of last runs
        last[key] = TestRun(step.command, index, step.exit_code, summary_line(step.output),
                            failing_tests(step.output), times)
    return list(last.values())

"""The per-item watchdog (issue 16): an in-process agent that never returns and never calls the
environment ends as a time-limit failure at its budget, verified and recorded, its environment
removed; pytest-timeout stays the outer backstop of every item."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest
from taskfactory import make_task
from test_plugin import only_run_dir, records, run, suite  # noqa: F401  (the `suite` fixture)

from swe_residual.agents import AgentSession, Budget, BudgetExhausted
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import AGENT_GRACE_SEC, RunOptions, run_agent, run_item
from swe_residual.run.settings import WATCHDOG_MARGIN_SEC
from swe_residual.agents.trajectory import Trajectory

BUDGET_SEC = 2.0

HANGING_AGENTS = '''\
import time


class SleepsForever:
    """Never returns, never calls the environment: only a watchdog can end it."""

    name = "sleeps-forever"

    def run(self, session):
        while True:
            time.sleep(0.05)


class HangsBeforeItStarts:
    """Hangs in its constructor, outside the agent's budget: only pytest-timeout can end it."""

    def __init__(self):
        while True:
            time.sleep(0.05)

    def run(self, session):
        return None
'''


class WakesUpLate:
    """Sleeps past its budget, then tries to touch the environment: it must not get there."""

    name = "wakes-up-late"

    def __init__(self) -> None:
        self.late_call: BaseException | None = None
        self.done = threading.Event()

    def run(self, session: AgentSession) -> None:
        time.sleep(BUDGET_SEC + AGENT_GRACE_SEC + 0.5)
        try:
            session.write_file("late.txt", b"written after the deadline\n")
        except BaseException as exc:  # what the abandoned agent meets
            self.late_call = exc
        self.done.set()


@pytest.mark.slow
def test_an_agent_that_never_returns_is_a_time_limit_failure(tmp_path: Path) -> None:
    make_task(tmp_path / "data", agent_timeout_sec=BUDGET_SEC)
    entry = load_dataset(tmp_path / "data").entries[0]
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path / "work")
    (tmp_path / "work").mkdir()
    agent = WakesUpLate()
    started = time.monotonic()
    record = record_json(run_item(entry.task, entry.states[0], lambda: agent, backend,
                      RunOptions(run_id="r", run_dir=tmp_path / "run")))
    elapsed = time.monotonic() - started
    assert (record["outcome"], record["termination"], record["submitted"]) == ("failure", "time_limit", False)
    assert record["budget"]["timeout_sec"] == BUDGET_SEC
    assert "abandoned" in record["message"]
    assert record["tests"] is not None  # the final state was verified all the same
    assert len(record["attempts"]) == 1  # a budget failure is never retried
    assert BUDGET_SEC <= record["durations"]["agent_sec"] <= BUDGET_SEC + AGENT_GRACE_SEC + 1
    assert elapsed < BUDGET_SEC + AGENT_GRACE_SEC + 30
    assert list((tmp_path / "work").iterdir()) == []  # the workspace is gone
    assert agent.done.wait(10)
    assert isinstance(agent.late_call, BudgetExhausted)  # cut off from the environment


@pytest.mark.unit
def test_an_outer_watchdog_interrupt_ends_the_agent_as_a_time_limit() -> None:
    """pytest-timeout's signal method raises in the waiting thread: that is a budget failure too."""

    class Watchdog(BaseException):
        pass

    class Sleeps:
        name = "sleeps"

        def run(self, session: AgentSession) -> None:
            time.sleep(30)

    def fire(signum: int, frame: object) -> None:
        raise Watchdog("Timeout >1s")

    session = AgentSession("do it", Budget(timeout_sec=60), environment=None, trajectory=Trajectory("sleeps"))  # type: ignore[arg-type]
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(BudgetExhausted, match="watchdog") as raised:
            run_agent(Sleeps(), session, (Watchdog,))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert raised.value.termination == "time_limit"


@pytest.mark.unit
def test_what_the_agent_raises_is_raised_in_the_caller() -> None:
    class Crashes:
        name = "crashes"

        def run(self, session: AgentSession) -> None:
            raise RuntimeError("fell over")

    session = AgentSession("do it", Budget(timeout_sec=60), environment=None, trajectory=Trajectory("x"))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="fell over"):
        run_agent(Crashes(), session)


@pytest.mark.slow
def test_every_item_carries_its_watchdog(suite: pytest.Pytester) -> None:  # noqa: F811
    make_task(suite.path / "slow", "slow", agent_timeout_sec=30, verifier_timeout_sec=20, states={})
    with (suite.path / "conftest.py").open("a") as conftest:
        conftest.write(
            "\n\ndef pytest_collection_finish(session):\n"
            "    for item in session.items:\n"
            "        marker = item.get_closest_marker('timeout')\n"
            "        print('WATCHDOG', item.callspec.id, marker.args[0], marker.kwargs)\n"
        )
    result = suite.runpytest_subprocess("residual_tests", "--dataset=slow", "--backend=local", "--agent=noop",
                                        "--timeout-multiplier=2", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines([f"WATCHDOG noop/slow/clean {30 * 2 + 20 + WATCHDOG_MARGIN_SEC} {{'func_only': False}}"])
    result = suite.runpytest_subprocess("residual_tests", "--dataset=slow", "--backend=local", "--agent=noop",
                                        "--watchdog-margin=7", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["WATCHDOG noop/slow/clean 57.0 *"])
    result = suite.runpytest_subprocess("residual_tests", "--dataset=slow", "--backend=local", "--agent=noop",
                                        "--watchdog-margin=0", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*watchdog-margin: bad value '0' from the command line --watchdog-margin*"])
    suite.makeini("[pytest]\nresidual_watchdog_margin = 3\n")  # the ini, below the command line
    result = suite.runpytest_subprocess("residual_tests", "--dataset=slow", "--backend=local", "--agent=noop",
                                        "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["WATCHDOG noop/slow/clean 53.0 *"])
    result = suite.runpytest_subprocess("residual_tests", "--dataset=slow", "--backend=local", "--agent=noop",
                                        "--watchdog-margin=7", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["WATCHDOG noop/slow/clean 57.0 *"])


@pytest.mark.slow
def test_a_hanging_in_process_agent_ends_as_a_budget_failure_through_pytest(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,  # noqa: F811
) -> None:
    margin = 20.0
    make_task(suite.path / "tiny", "tiny", agent_timeout_sec=BUDGET_SEC, verifier_timeout_sec=30, states={})
    (suite.path / "hanging_agents.py").write_text(HANGING_AGENTS)
    workspaces = tmp_path / "workspaces"
    workspaces.mkdir()
    monkeypatch.setenv("TMPDIR", str(workspaces))  # where the local backend makes its workspaces
    started = time.monotonic()
    result = run(suite, "--dataset=tiny", "--agent=module:hanging_agents:SleepsForever",
                 f"--watchdog-margin={margin:g}", "-v")
    elapsed = time.monotonic() - started
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_start?module:hanging_agents:SleepsForever/tiny/clean? UNSOLVED*"])
    (record,) = records(only_run_dir(suite))
    assert (record["outcome"], record["termination"]) == ("failure", "time_limit")
    assert record["budget"]["timeout_sec"] == BUDGET_SEC
    assert record["durations"]["wall_sec"] < BUDGET_SEC + margin
    assert elapsed < BUDGET_SEC + margin + 15  # + the subprocess's own start-up and summary
    assert [p.name for p in workspaces.iterdir() if p.name.startswith("swe-residual-")] == []
    assert json.loads((only_run_dir(suite) / "summary.json").read_text())["infra"]["unresolved"] == 0


@pytest.mark.slow
def test_pytest_timeout_ends_an_item_hanging_outside_the_agent(suite: pytest.Pytester) -> None:  # noqa: F811
    """The outer backstop: the item fails (no valid measurement) and the run goes on."""
    make_task(suite.path / "tiny", "tiny", agent_timeout_sec=1, verifier_timeout_sec=1, states={})
    make_task(suite.path / "tiny", "tiny2", agent_timeout_sec=1, verifier_timeout_sec=1, states={})
    (suite.path / "hanging_agents.py").write_text(HANGING_AGENTS)
    started = time.monotonic()
    # A margin of 8 s, not 2: on a loaded CI machine a noop item once took over the 4 s that
    # 1 + 1 + 2 gave every item, and ended as a timeout itself.
    result = run(suite, "--dataset=tiny", "--agent=module:hanging_agents:HangsBeforeItStarts", "--agent=noop",
                 "--watchdog-margin=8")
    assert time.monotonic() - started < 2 * (1 + 1 + 8) + 30
    result.assert_outcomes(passed=2, errors=2)  # the work is in the fixture: an error at setup
    result.stdout.fnmatch_lines(["*Failed: Timeout (>10.0s) from pytest-timeout*"])
    assert sorted(r["agent"] for r in records(only_run_dir(suite))) == ["noop", "noop"]

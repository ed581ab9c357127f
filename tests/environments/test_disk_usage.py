"""The disk watcher, the session's stop and the record's `disk_limit`, without any environment."""

from __future__ import annotations

import threading
import time

import pytest

from swe_residual.agents.base import AgentSession, Budget, BudgetExhausted
from swe_residual.environments.base import ExecResult
from swe_residual.environments.disk_usage import MIB, DiskMeter, DiskWatcher, format_size, tree_bytes
from swe_residual.trial.record_model import DiskLimit
from swe_residual.trial.records import read_record, record_json
from swe_residual.trial.runner import run_agent
from swe_residual.agents.trajectory import Trajectory
from swe_residual.dataset.values import Termination

pytestmark = [pytest.mark.unit]


class Growing:
    """A meter whose reading grows by `step` bytes per reading."""

    def __init__(self, step: int, cost_sec: float = 0.0) -> None:
        self.step, self.cost_sec, self.value, self.stops = step, cost_sec, 0, 0

    def measure(self) -> int:
        time.sleep(self.cost_sec)
        self.value += self.step
        return self.value

    def stop(self) -> None:
        self.stops += 1

    def meter(self) -> DiskMeter:
        return DiskMeter(self.measure, self.stop, "a test meter")


def test_sizes_read_as_a_person_reads_them() -> None:
    assert format_size(int(2.3 * 1024 * MIB)) == "2.3 GiB"
    assert format_size(70 * MIB) == "70.0 MiB"
    assert format_size(512 * 1024) == "512 KiB"


def test_the_watcher_stops_the_agent_once_at_the_limit_with_the_figures() -> None:
    growing = Growing(20 * MIB)
    messages: list[str] = []
    watcher = DiskWatcher(growing.meter(), 64, messages.append, min_interval_sec=0.01).start()
    deadline = time.monotonic() + 5
    while not watcher.exceeded and time.monotonic() < deadline:
        time.sleep(0.01)
    watcher.stop()
    assert watcher.exceeded and growing.stops == 1 and len(messages) == 1
    assert messages[0] == watcher.message
    assert "wrote 80.0 MiB, limit 64 MiB" in messages[0]  # the first reading at or past 64 MiB
    report = watcher.report()
    assert (report.exceeded, report.peak_bytes, report.readings) == (True, 80 * MIB, 4)


def test_the_last_reading_after_the_agent_stopped_judges_a_writer_within_the_interval() -> None:
    growing = Growing(40 * MIB)
    messages: list[str] = []
    watcher = DiskWatcher(growing.meter(), 64, messages.append, min_interval_sec=60).start()
    time.sleep(0.05)  # one reading (40 MiB), then a pause longer than the test
    watcher.stop()  # the last reading: 80 MiB
    assert watcher.exceeded and growing.stops == 1 and watcher.report().readings == 2


def test_the_interval_grows_with_the_cost_of_a_reading() -> None:
    growing = Growing(1, cost_sec=0.02)
    watcher = DiskWatcher(growing.meter(), 64, lambda _: None, min_interval_sec=0.01).start()
    time.sleep(0.1)
    watcher.halt()
    # A reading of 20 ms may take at most MAX_SHARE (5%) of its interval: 0.4 s.
    assert watcher.report().interval_sec == pytest.approx(0.4, rel=0.5)
    assert watcher.report().readings <= 2


def test_a_meter_that_cannot_read_is_reported_not_raised() -> None:
    def broken() -> int:
        raise OSError("gone")

    watcher = DiskWatcher(DiskMeter(broken, lambda: None, "broken"), 64, lambda _: None).start()
    watcher.stop()
    assert not watcher.exceeded and watcher.report().error == "the disk meter could not read: gone"


def test_tree_bytes_counts_allocated_blocks_and_hard_links_once(tmp_path) -> None:
    (tmp_path / "a").write_bytes(b"x" * (1 * MIB))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").hardlink_to(tmp_path / "a")
    (tmp_path / "link").symlink_to("/usr")  # not followed
    assert 1 * MIB <= tree_bytes([str(tmp_path)]) < 1 * MIB + 64 * 1024
    assert tree_bytes([str(tmp_path / "missing")]) == 0


class Quiet:
    workdir = "/"

    def exec(self, command: str, **_: object) -> ExecResult:
        return ExecResult(137, "", "Killed")


def _session() -> AgentSession:
    return AgentSession("do it", Budget(timeout_sec=60), Quiet(), Trajectory(agent="a"))  # type: ignore[arg-type]


def test_a_stopped_session_ends_the_command_under_way_and_every_later_call() -> None:
    session = _session()
    session.stop(Termination.DISK_LIMIT, "disk limit: wrote 70.0 MiB, limit 64 MiB")
    session.stop(Termination.TIME_LIMIT, "second reason, ignored")
    with pytest.raises(BudgetExhausted) as raised:
        session.exec("true")
    assert raised.value.termination == Termination.DISK_LIMIT and "70.0 MiB" in str(raised.value)


def test_an_agent_that_ignores_the_stop_is_abandoned_after_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("swe_residual.trial.agent_run.AGENT_GRACE_SEC", 0.2)
    session = _session()
    release = threading.Event()

    class Sleeper:
        name = "sleeper"

        def run(self, session: AgentSession) -> None:
            release.wait(30)  # never calls the environment

    threading.Timer(0.1, session.stop, (Termination.DISK_LIMIT, "disk limit: wrote 1 GiB")).start()
    started = time.monotonic()
    with pytest.raises(BudgetExhausted) as raised:
        run_agent(Sleeper(), session)  # type: ignore[arg-type]
    release.set()
    assert raised.value.termination == Termination.DISK_LIMIT and "abandoned" in str(raised.value)
    assert time.monotonic() - started < 5  # the grace, not the 60 s budget


def test_the_record_writes_disk_limit_only_when_set_and_reads_it_back() -> None:
    base = {"schema": 1, "run_id": "r", "agent": "a", "task": "t", "track": "repo", "start": "clean", "state": None,
            "predecessor": None, "outcome": "failure", "reward": 0.0, "submitted": False,
            "termination": "disk_limit", "tests": None, "initial_tests": None, "steps": 1, "final_patch": None,
            "trajectory": None, "attempts": [], "durations": {}}
    assert "disk_limit" not in record_json(read_record(base))
    account = DiskLimit(storage_mb=64, enforcement="watched", how="walked", peak_bytes=70 * MIB, readings=5,
                        interval_sec=0.25, exceeded=True)
    written = record_json(read_record({**base, "disk_limit": account.model_dump(mode="json")}))
    assert written["disk_limit"] == account.model_dump(mode="json") and written["termination"] == "disk_limit"
    assert read_record(written).termination is Termination.DISK_LIMIT and read_record(written).disk_limit == account

import pytest

from jobq import CycleError, JobQueue, plan, run


def test_single_job():
    q = JobQueue()
    q.add("one")
    assert len(q) == 1
    assert q.pop().name == "one"
    assert len(q) == 0


def test_empty_pop_raises():
    with pytest.raises(IndexError):
        JobQueue().pop()


def test_higher_priority_first():
    q = JobQueue()
    q.add("low", priority=1)
    q.add("high", priority=9)
    q.add("mid", priority=5)
    assert [q.pop().name for _ in range(3)] == ["high", "mid", "low"]


def test_fifo_for_equal_priority():
    q = JobQueue()
    for name in ["zeta", "alpha", "mid"]:
        q.add(name, priority=2)
    q.add("urgent", priority=3)
    assert [q.pop().name for _ in range(4)] == ["urgent", "zeta", "alpha", "mid"]


def test_plan_respects_dependencies():
    q = JobQueue()
    q.add("deploy", deps=["build", "test"])
    q.add("build")
    q.add("test", deps=["build"])
    assert plan(q) == ["build", "test", "deploy"]


def test_plan_priority_among_ready_jobs():
    q = JobQueue()
    q.add("a", priority=1)
    q.add("b", priority=5)
    q.add("c", priority=5, deps=["a"])
    q.add("d", priority=1)
    assert plan(q) == ["b", "a", "c", "d"]


def test_cycle_detection():
    q = JobQueue()
    q.add("x", deps=["z"])
    q.add("y", deps=["x"])
    q.add("z", deps=["y"])
    with pytest.raises(CycleError):
        plan(q)


def test_failed_dependency_skips():
    def boom():
        raise RuntimeError("boom")

    q = JobQueue()
    q.add("compile", action=boom)
    q.add("package", deps=["compile"])
    q.add("lint")
    assert run(q) == {"compile": "failed", "package": "skipped", "lint": "ok"}

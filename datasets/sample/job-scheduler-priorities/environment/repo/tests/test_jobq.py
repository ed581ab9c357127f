import pytest

from jobq import CycleError, JobQueue, plan, run


def test_dependencies_first():
    q = JobQueue()
    q.add("deploy", deps=["build"])
    q.add("build")
    assert plan(q) == ["build", "deploy"]


def test_cycle():
    q = JobQueue()
    q.add("a", deps=["b"])
    q.add("b", deps=["a"])
    with pytest.raises(CycleError):
        plan(q)


def test_run_results():
    q = JobQueue()
    q.add("only")
    assert run(q) == {"only": "ok"}

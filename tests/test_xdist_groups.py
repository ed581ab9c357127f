"""`--dist worksteal` as `.ci/run` uses it keeps a module's shared set-up on one worker
(tests/xdist_groups.py): measured on a real xdist run, the module fixture is built once where
xdist's own stealing builds it on both workers."""

from __future__ import annotations

import pytest
from conftest import TESTS_DIR
from xdist_groups import boundary

# A module whose six tests share one costly set-up (each setup leaves a line in `setups`), first
# in the collection; then twelve quick tests. Worker 1 runs out of its quick share while worker 0
# is still in the module, and steals the second half of worker 0's queue.
SHARED = """
import os, time
import pytest

@pytest.fixture(scope="module")
def costly():
    with open(os.environ["SETUPS"], "a") as setups:
        setups.write(os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")

@pytest.mark.parametrize("n", range(6))
def test_shared(costly, n):
    time.sleep(0.5)
"""
QUICK = """
import pytest

@pytest.mark.parametrize("n", range(12))
def test_quick(n):
    pass
"""
PLUGIN = f"""
import sys
sys.path.insert(0, {str(TESTS_DIR)!r})
from xdist_groups import GroupedStealPlugin

def pytest_configure(config):
    config.pluginmanager.register(GroupedStealPlugin(), "xdist-groups")
"""


def _setups(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *, grouped: bool) -> list[str]:
    pytester.makepyfile(test_a_shared=SHARED, test_b_quick=QUICK)
    pytester.makeconftest(PLUGIN if grouped else "")
    setups = pytester.path / "setups"
    setups.unlink(missing_ok=True)
    monkeypatch.setenv("SETUPS", str(setups))
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "worksteal", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=18)
    return setups.read_text().split()


@pytest.mark.slow
def test_a_steal_never_cuts_a_module_fixture_across_workers(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # xdist's stealing cuts the module: its fixture is built on both workers (on the thief again
    # each time quick tests come between the stolen ones).
    assert {"gw0", "gw1"} <= set(_setups(pytester, monkeypatch, grouped=False))
    # Cut at the module's end instead: built once, and the quick tests still spread. On whichever
    # worker took the module first: under load that is gw1 as often as gw0 (a CI run saw ['gw1']).
    setups = _setups(pytester, monkeypatch, grouped=True)
    assert len(setups) == 1 and setups[0] in {"gw0", "gw1"}, setups


@pytest.mark.unit
def test_the_cut_moves_to_the_nearest_group_boundary() -> None:
    groups = ["m", "m", "m", None, None, "k", "k", None]
    assert boundary(groups, 1, 1) == 3  # inside m: the nearest end of it
    assert boundary(groups, 4, 2) == 4  # between free items: where asked
    assert boundary(groups, 5, 2) == 5  # at k's start
    assert boundary(groups, 6, 2) == 7  # inside k: its end (its start as near, looked at second)
    assert boundary(groups, 6, 6) == 7  # not below 6: after k
    assert boundary(["m", "m", "m"], 1, 1) == 0  # one group: no cut

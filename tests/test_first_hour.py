"""What a new user meets in a first run, through pytester in real subprocesses: both option
forms on the README's install, checks before anything runs, a header that names the run's
choices, skipped and interrupted runs that say so, and a summary that explains itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from suitecheckout import make_checkout
from taskfactory import make_task

# "Extra not installed", simulated: a sitecustomize on PYTHONPATH makes `import matplotlib` raise
# ImportError in the subprocess, as it does after `pip install -e .` without the report extra.
BLOCK_MATPLOTLIB = '''
import importlib.abc, sys

class _NoMatplotlib(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r} (blocked: the report extra is not installed)")
        return None

sys.meta_path.insert(0, _NoMatplotlib())
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    """A checkout-like directory: the suite's conftest and test module, and 3 items per agent."""
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    make_task(pytester.path / "data", "alpha")
    make_task(pytester.path / "data", "gamma", states={})
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess(
        "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out", "-p", "no:cacheprovider", *args,
    )


def only_run_dir(suite: pytest.Pytester) -> Path:
    (run_dir,) = (suite.path / "out").iterdir()
    return run_dir


# ---------------------------------------------------------------- 1. both option forms


def test_space_separated_options_work_without_the_extras(suite: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`--agent noop` makes pytest read `noop` as a path before the suite's options exist, and
    so load the checkout's tests/conftest.py: it must not need an extra to be imported."""
    (suite.path / "tests").mkdir()
    shutil.copy(REPO_ROOT / "tests" / "conftest.py", suite.path / "tests" / "conftest.py")
    suite.makeini("[pytest]\ntestpaths = residual_tests\n")
    blocker = suite.path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_MATPLOTLIB)
    import os
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(blocker), os.environ["PYTHONPATH"]]))
    blocked = suite.runpython_c("import matplotlib")
    assert blocked.ret != 0 and "report extra is not installed" in blocked.stderr.str()  # the simulation holds
    result = suite.runpytest_subprocess(
        # `--dataset=data`: a value naming an existing directory would be the anchor instead
        "--agent", "noop", "--agent-option", "env=HOME", "--model", "deterministic", "--backend", "local",
        "--dataset=data", "--results-dir=out", "-p", "no:cacheprovider",
    )
    out = result.stdout.str() + result.stderr.str()
    assert "ImportError" not in out and "matplotlib" not in out, out
    assert result.ret == 0, out
    result.assert_outcomes(passed=3)

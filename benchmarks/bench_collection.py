"""Collection time of the evaluation suite against bare pytest on the same item ids.

Builds a dataset of N tasks x S residual states (default 1,000 x 10: 11,000 items for one
agent) in a temporary directory, then times `pytest --collect-only -q` of the suite on it
(`--agent=noop --backend=local`) and of a bare pytest file parametrizing the same ids. Each
is the best of `--repeat` runs in a fresh process, so both pay interpreter and pytest start-up.
Run: python benchmarks/bench_collection.py [--tasks N] [--states S] [--repeat K]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TASK_TOML = textwrap.dedent(
    """\
    schema_version = "1.3"
    [task]
    name = "bench/{task_id}"
    [metadata]
    track = "repo"
    repo_dir = "environment/repo"
    [verifier]
    timeout_sec = 60.0
    [agent]
    timeout_sec = 600.0
    network_mode = "no-network"
    """
)

STATE_TOML = textwrap.dedent(
    """\
    schema = 1
    track = "repo"
    predecessor = "drafter"
    source_run = "bench"
    patch = "changes.patch"
    [validation]
    valid = true
    reward = 0.0
    [validation.tests]
    "test_calc.test_add" = "passed"
    "test_calc.test_clamp" = "failed"
    """
)

PATCH = textwrap.dedent(
    """\
    diff --git a/calc.py b/calc.py
    index 0000000..1111111 100644
    --- a/calc.py
    +++ b/calc.py
    @@ -1,2 +1,2 @@
     def clamp(value, low, high):
    -    return value
    +    return max(low, value)
    """
)


def task_ids(n_tasks: int) -> list[str]:
    return [f"task-{number:04d}" for number in range(n_tasks)]


def state_ids(n_states: int) -> list[str]:
    return [f"drafter-{number + 1}" for number in range(n_states)]


def build_dataset(root: Path, n_tasks: int, n_states: int) -> None:
    """Valid minimal repo-track tasks, each with `n_states` residual states."""
    for task_id in task_ids(n_tasks):
        task = root / task_id
        (task / "environment" / "repo").mkdir(parents=True)
        (task / "environment" / "repo" / "calc.py").write_text("def clamp(value, low, high):\n    return value\n")
        (task / "tests").mkdir()
        (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > \"$VERIFIER_LOGS_DIR/reward.txt\"\n")
        (task / "solution").mkdir()
        (task / "task.toml").write_text(TASK_TOML.format(task_id=task_id))
        (task / "instruction.md").write_text("Make `clamp` clamp.\n")
        for state_id in state_ids(n_states):
            state = task / "residual" / state_id
            state.mkdir(parents=True)
            (state / "state.toml").write_text(STATE_TOML)
            (state / "changes.patch").write_text(PATCH)


def write_suite(workdir: Path) -> None:
    """A checkout-like copy of the suite's pytest wiring (conftest and test module)."""
    shutil.copy(ROOT / "conftest.py", workdir / "conftest.py")
    (workdir / "residual_tests").mkdir()
    shutil.copy(ROOT / "residual_tests" / "test_starts.py", workdir / "residual_tests" / "test_starts.py")


def write_bare(workdir: Path, n_tasks: int, n_states: int, agent: str) -> Path:
    """The same ids, parametrized by bare pytest (the floor: what pytest itself costs)."""
    bare = workdir / "bare"
    bare.mkdir()
    (bare / "test_bare.py").write_text(textwrap.dedent(
        f"""\
        import pytest

        IDS = []
        for task in [f"task-{{n:04d}}" for n in range({n_tasks})]:
            IDS.append(f"{agent}/{{task}}/clean")
            IDS.extend(f"{agent}/{{task}}/residual:drafter-{{s + 1}}" for s in range({n_states}))


        @pytest.mark.parametrize("item", IDS, ids=IDS)
        def test_start(item):
            pass
        """
    ))
    return bare


def timed(args: list[str], cwd: Path, env: dict[str, str], expected: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    collected = sum("::test_start[" in line for line in done.stdout.splitlines())
    if done.returncode != 0 or collected != expected:
        sys.exit(f"{' '.join(args)} in {cwd}: exit {done.returncode}, {collected} items, expected {expected}\n"
                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--states", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    expected = args.tasks * (1 + args.states)
    with tempfile.TemporaryDirectory(prefix="swe-residual-bench-") as name:
        # Siblings, so the bare run never sees the suite's conftest.py.
        workdir = Path(name) / "suite"
        workdir.mkdir()
        build_dataset(workdir / "data", args.tasks, args.states)
        write_suite(workdir)
        bare = write_bare(Path(name), args.tasks, args.states, "noop")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        pytest_args = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        suite_args = pytest_args + ["residual_tests", "--agent=noop", "--dataset=data", "--backend=local",
                                    "--results-dir=out"]
        suite = min(timed(suite_args, workdir, env, expected) for _ in range(args.repeat))
        bare_sec = min(timed(pytest_args + ["test_bare.py"], bare, env, expected) for _ in range(args.repeat))
    print(f"items: {expected} ({args.tasks} tasks x (1 clean + {args.states} states), agent noop)")
    print(f"collection: suite {suite:.2f} s, bare pytest {bare_sec:.2f} s, ratio {suite / bare_sec:.1f} x")


if __name__ == "__main__":
    main()

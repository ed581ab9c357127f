"""Harness overhead per item on the local backend (noop agent, verifier excluded).

For each item: start the state (copy the cached base repository, apply the residual patch),
run the noop agent, capture the final diff, close. Printed beside the same work done by hand
with `cp -a` + `git apply` + `git add -A && git diff` + `rm -rf`, so the ratio says what the
harness itself costs. Run: python benchmarks/bench_local_overhead.py [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from swe_residual.agents import resolve_agent
from swe_residual.agents.base import AgentSession, Budget
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.local import LocalBackend
from swe_residual.environments.patches import capture_patch
from swe_residual.agents.trajectory import Trajectory

ROOT = Path(__file__).resolve().parent.parent


def harness_item(backend: LocalBackend, task, state) -> float:
    started = time.perf_counter()
    env = backend.start(task, state, StartSpec("bench", "item", 1))
    agent = resolve_agent("noop")()
    agent.run(AgentSession(task.instruction, Budget(600), env, Trajectory("noop")))
    capture_patch(env)
    env.close()
    return time.perf_counter() - started


def by_hand_item(base_repo: Path, patch: Path | None, scratch: Path) -> float:
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(dir=scratch))
    subprocess.run(["cp", "-a", f"{base_repo}/.", str(work)], check=True)
    if patch is not None:
        subprocess.run(["git", "apply", str(patch)], cwd=work, check=True)
    subprocess.run(
        "GIT_INDEX_FILE=../idx git add -A -f . && GIT_INDEX_FILE=../idx git diff --cached --binary HEAD >/dev/null",
        shell=True, cwd=work, check=True,
    )
    shutil.rmtree(work)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(ROOT / "datasets" / "sample"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    dataset = load_dataset(args.dataset)
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        backend = LocalBackend(cache_dir=scratch / "cache", work_dir=scratch)
        cold, warm, by_hand = [], [], []
        for entry in dataset.entries:
            if backend.unsupported_reason(entry.task):
                continue
            for state in [None, *entry.states]:
                started = time.perf_counter()
                backend.prepare(entry.task)  # cold: the base repository is built once per task
                first = harness_item(backend, entry.task, state)
                cold.append(time.perf_counter() - started if state is None else first)
                base_repo, _ = backend._base_repo(entry.task)
                for _ in range(args.repeat):
                    warm.append(harness_item(backend, entry.task, state))
                    by_hand.append(by_hand_item(base_repo, state.patch_path if state else None, scratch))
    med = statistics.median
    print(f"local backend, {len(cold)} items x {args.repeat} repeats (noop agent, verifier excluded)")
    print(f"  cold per item (first start, base repo built): median {med(cold) * 1000:7.1f} ms")
    print(f"  warm per item (harness):                      median {med(warm) * 1000:7.1f} ms")
    print(f"  by hand (cp -a, git apply, git diff, rm):     median {med(by_hand) * 1000:7.1f} ms")
    print(f"  warm / by hand: {med(warm) / med(by_hand):.2f}x")


if __name__ == "__main__":
    main()

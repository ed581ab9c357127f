"""Per-item overhead of the docker backend against the same work done by hand.

One item, verifier excluded, with the `noop` agent: start a Residual State, run nothing,
capture the final patch, close. The hand-made baseline does the same with plain commands:
`docker run`, `git apply` of the patch, `git diff` of the result, `docker rm`.

  cold  the first item of a task: the task image and the state snapshot are built (the Debian
        base image is not: it is built once per machine, see `swe-residual build-base`);
        beside it, by hand: `docker build --no-cache` then the hand-made item.
  warm  every later item: images and snapshot cached. Target: at most 1.3x the hand-made item.

Usage: PYTHONPATH=. python benchmarks/bench_docker_overhead.py [--items N] [--task DIR --state ID] [--json OUT]
Without --task a tiny built-in task is made in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from swe_residual.environment.base import StartSpec
from swe_residual.environment.docker import DockerBackend, remove_cached_images
from swe_residual.images import ensure_base_image
from swe_residual.patches import capture_patch
from swe_residual.state import ResidualState, load_state
from swe_residual.task import Task, load_task

DOCKERFILE = """\
ARG BASE_IMAGE=swe-residual-base:bookworm
FROM ${BASE_IMAGE}
COPY repo/ /app/
WORKDIR /app
RUN git init -q -b main . && git add -A \\
 && git -c user.name=b -c user.email=b@localhost -c commit.gpgsign=false commit -q -m "Base commit"
"""

PATCH = """\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,3 @@
 def add(a, b):
+    # TODO
     return a - b
diff --git a/NOTES.md b/NOTES.md
new file mode 100644
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1 @@
+predecessor was here
"""


def make_task(root: Path) -> Path:
    """A one-module task with one residual state (same shape as the sample tasks)."""
    task = root / f"bench-{secrets.token_hex(3)}"
    (task / "environment" / "repo").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text('schema_version = "1.1"\n[metadata]\nrepo_dir = "environment/repo"\n')
    (task / "instruction.md").write_text("Fix add().\n")
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "environment" / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\nexit 0\n")
    state = task / "residual" / "s1"
    state.mkdir(parents=True)
    (state / "state.toml").write_text('predecessor = "bench"\ntrack = "repo"\n')
    (state / "changes.patch").write_text(textwrap.dedent(PATCH))
    return task


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def docker(*args: str, input: bytes | None = None) -> bytes:
    done = subprocess.run(["docker", *args], input=input, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"docker {' '.join(args[:2])} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def backend_item(backend: DockerBackend, task: Task, state: ResidualState, number: int) -> None:
    environment = backend.start(task, state, StartSpec("bench", f"{task.id}/{state.id}", number))
    try:
        capture_patch(environment)  # noop agent: nothing runs in between
    finally:
        environment.close()


def hand_item(image: str, patch: bytes) -> None:
    container = docker("run", "-d", "--network", "none", image, "sleep", "infinity").decode().strip()
    try:
        docker("exec", "-i", container, "git", "apply", "-", input=patch)
        docker("exec", container, "sh", "-c", "git add -A && git diff --cached --binary HEAD")
    finally:
        docker("rm", "-f", container)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10, help="warm items to time (default 10)")
    parser.add_argument("--task", type=Path, help="a task directory (default: a built-in tiny task)")
    parser.add_argument("--state", help="the residual state id to start from (with --task)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if not DockerBackend.available():
        print("no Docker engine answers", file=sys.stderr)
        return 2
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))

    with tempfile.TemporaryDirectory(prefix="swe-residual-bench-") as scratch:
        root = Path(scratch)
        task = load_task(args.task) if args.task else load_task(make_task(root))
        state_dir = task.path / "residual" / (args.state or "s1")
        state = load_state(task, state_dir)
        patch = state.patch_path.read_bytes() if state.patch_path else b""
        remove_cached_images(task.id)  # cold means cold

        backend = DockerBackend(cache_dir=root / "cache", progress=lambda _: None)
        try:
            def cold_item() -> None:
                backend.prepare(task)
                backend_item(backend, task, state, 0)

            cold = timed(cold_item)
            backend_item(backend, task, state, 1)  # settle the engine before timing warm items
            warm = [timed(lambda: backend_item(backend, task, state, n)) for n in range(2, 2 + args.items)]
        finally:
            backend.close()

        hand_tag = f"swe-residual-bench-hand:{secrets.token_hex(4)}"
        try:
            def hand_cold() -> None:
                docker("build", "-q", "--no-cache", "-t", hand_tag, str(task.environment_dir))
                hand_item(hand_tag, patch)

            cold_hand = timed(hand_cold)
            hand_item(hand_tag, patch)
            warm_hand = [timed(lambda: hand_item(hand_tag, patch)) for _ in range(args.items)]
        finally:
            subprocess.run(["docker", "image", "rm", hand_tag], capture_output=True, check=False)
        remove_cached_images(task.id)

    figures = {
        "items": args.items,
        "cold_sec": cold,
        "cold_hand_sec": cold_hand,
        "cold_ratio": cold / cold_hand,
        "warm_median_sec": statistics.median(warm),
        "warm_mean_sec": statistics.fmean(warm),
        "warm_hand_median_sec": statistics.median(warm_hand),
        "warm_hand_mean_sec": statistics.fmean(warm_hand),
        "warm_ratio": statistics.median(warm) / statistics.median(warm_hand),
    }
    print(f"docker backend, per item (noop agent, verifier excluded), task {task.id}, {args.items} warm items")
    print(f"{'':6}{'backend':>10}{'by hand':>10}{'ratio':>8}")
    print(f"{'cold':6}{cold:>9.2f}s{cold_hand:>9.2f}s{figures['cold_ratio']:>7.2f}x")
    print(f"{'warm':6}{figures['warm_median_sec']:>9.2f}s{figures['warm_hand_median_sec']:>9.2f}s"
          f"{figures['warm_ratio']:>7.2f}x   (medians; target <= 1.30x: "
          f"{'met' if figures['warm_ratio'] <= 1.3 else 'NOT met'})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

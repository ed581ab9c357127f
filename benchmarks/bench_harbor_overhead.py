"""Per-item time a Harbor agent spends outside its setup() and run(), on the docker backend.

Runs `--agent=harbor:terminus-2` on the sample task `backup-retention-config` (clean start)
against a scripted OpenAI-compatible model on 127.0.0.1 (tests/model_server.py: two turns, no
model network), item after item as the suite does: the agent resolved for the item (Harbor's
`--check`: once per run), the item run. For each item it prints

  resolve   resolving the agent (the check; cached after the first)
  outside   the agent's time beyond setup() and run(): the helper's start-up, the trial's
            directories, the copy of /logs/agent, reading what it left
            (durations.agent_sec - agent_setup_sec - agent_run_sec)

Target: resolve + outside <= 1 s per item once the run is under way (the first item's helper
starts with the run). The verifier and the container's start are not counted (they are the
suite's for every agent).

Usage: PYTHONPATH=. python benchmarks/bench_harbor_overhead.py [--items N] [--json OUT]
Needs Harbor's virtual environment (scripts/setup-tests) and a Docker engine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted model server the Harbor tests use

from model_server import ModelServer, Reply  # noqa: E402

from swe_residual.agents import resolve_agent  # noqa: E402
from swe_residual.dataset.load import load_dataset  # noqa: E402
from swe_residual.environments.docker import DockerBackend  # noqa: E402
from swe_residual.environments.docker.base_image import ensure_base_image  # noqa: E402
from swe_residual.trial.runner import RunOptions, run_item  # noqa: E402

TASK = ROOT / "datasets" / "sample" / "backup-retention-config"
TARGET_SEC = 1.0


def turn(keystrokes: str | None, done: bool = False) -> Reply:
    commands = [{"keystrokes": keystrokes + "\n", "duration": 0.1}] if keystrokes else []
    return Reply(content=json.dumps({"analysis": "a", "plan": "p", "commands": commands, "task_complete": done}))


SCRIPT = [turn("backupctl check"), turn(None, done=True), turn(None, done=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5, help="items to run (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if not DockerBackend.available():
        print("no Docker engine answers", file=sys.stderr)
        return 2
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")  # the scripted server takes any
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="swe-residual-bench-") as scratch:
        root = Path(scratch)
        shutil.copytree(TASK, root / "data" / TASK.name)
        task = load_dataset(root / "data").entry(TASK.name).task
        with DockerBackend(cache_dir=root / "cache", progress=lambda line: print(line, file=sys.stderr)) as backend, \
                ModelServer(SCRIPT * args.items, max_requests=len(SCRIPT) * args.items) as server:
            for number in range(args.items):
                started = time.perf_counter()
                factory = resolve_agent("harbor:terminus-2", {"api_base": server.url, "record_terminal_session": "true"},
                                        "openai/served-model")
                resolve = time.perf_counter() - started
                options = RunOptions(run_id="bench", run_dir=root / f"run-{number}")
                record = run_item(task, None, factory, backend, options)
                durations = record.durations
                if record.termination != "submitted" or durations.agent_run_sec is None:
                    print(f"item {number}: {record.termination}: {record.message or record.error}", file=sys.stderr)
                    return 1
                setup = durations.agent_setup_sec or 0.0
                outside = (durations.agent_sec or 0.0) - setup - durations.agent_run_sec
                rows.append({"resolve_sec": resolve, "outside_sec": outside, "setup_sec": setup,
                             "run_sec": durations.agent_run_sec})
                print(f"item {number}: resolve {resolve:.2f}s  outside {outside:.2f}s  "
                      f"(setup() {rows[-1]['setup_sec']:.2f}s, run() {rows[-1]['run_sec']:.2f}s)")
    later = rows[1:] or rows
    per_item = [row["resolve_sec"] + row["outside_sec"] for row in later]
    median, worst = statistics.median(per_item), max(per_item)
    verdict = "ok" if median <= TARGET_SEC else "over"
    print(f"after the first item: resolve + outside median {median:.2f}s, max {worst:.2f}s "
          f"(target <= {TARGET_SEC:.0f}s): {verdict}")
    if args.json:
        args.json.write_text(json.dumps({"items": rows, "median_sec": median, "max_sec": worst,
                                         "target_sec": TARGET_SEC}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

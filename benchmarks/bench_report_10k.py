"""`swe-residual report` end to end on 10,000 run records, for two checkouts of the code.

Builds N records (default 10,000) from a real run's `results.jsonl` (default: the newest under
reports/): each record is repeated under other agent names, task names and rollouts, its outcome
drawn (seeded) so that the figures, intervals and comparisons have something to say; they are
written to one `results.jsonl` in a temporary directory. Then `swe-residual report` (summary,
summary.md, the terminal lines, report.html with one page and diff per item) runs on it in a
fresh process for each checkout given (`--tree`, default: this one), best of `--repeat`: the
wall time, and the CPU time (user + system) of the process, which another load on the machine
changes less.

Run: python benchmarks/bench_report_10k.py [--records N] [--results FILE] [--tree DIR ...] [--repeat K]
e.g. `--tree /path/to/main --tree .` prints main's time, then this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AGENTS = 4  # agent names per agent of the source run
SEED = 0


def newest_results() -> Path:
    found = sorted(ROOT.glob("reports/*/results.jsonl"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit("no reports/*/results.jsonl: run the suite once (e.g. pytest --agent=oracle --agent=noop "
                         "--backend=local), or give --results")
    return found[-1]


def varied_records(source: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """`n` records: copies of `source` under `AGENTS` names per agent and more task names (one
    copy of a task keeps its clean start and its states together), outcomes drawn per start."""
    rng = random.Random(SEED)
    out: list[dict[str, Any]] = []
    copy = 0
    while len(out) < n:
        for variant in range(AGENTS):
            skill = 0.2 + 0.6 * variant / max(1, AGENTS - 1)  # agents that differ, so pairs and ranks do
            for record in source:
                if len(out) == n:
                    return out
                success = rng.random() < (skill if record.get("state") is None else skill * 0.7)
                out.append({**record, "agent": f"{record['agent']}-{variant}", "task": f"{record['task']}-{copy}",
                            "run_id": "bench", "outcome": "success" if success else "failure",
                            "reward": 1.0 if success else 0.0})
        copy += 1
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_report(tree: Path, results: Path, out: Path, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds of `swe-residual report RESULTS --out OUT` with `tree`'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-m", "swe_residual.cli.main", "report", str(results), "--out", str(out)],
                              env=env, cwd=tree, capture_output=True, text=True)
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, _children_cpu() - start_cpu)
        if done.returncode not in (0, 1):  # 1: a gate or a broken agent, still a whole report
            raise SystemExit(f"report with {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--results", type=Path, default=None, help="a run's results.jsonl (default: the newest)")
    parser.add_argument("--tree", type=Path, action="append", default=None,
                        help="a checkout whose code runs the report (repeat for several; default: this one)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source_path = args.results or newest_results()
    source = [json.loads(line) for line in source_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = varied_records(source, args.records)
    trees = [tree.resolve() for tree in (args.tree or [ROOT])]
    with tempfile.TemporaryDirectory(prefix="swe-residual-bench-report-") as scratch:
        results = Path(scratch) / "results.jsonl"
        results.write_text("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records), encoding="utf-8")
        agents = len({r["agent"] for r in records})
        tasks = len({r["task"] for r in records})
        print(f"{len(records)} records ({agents} agents, {tasks} tasks) from {source_path}; best of {args.repeat}")
        for index, tree in enumerate(trees):
            wall, cpu = time_report(tree, results, Path(scratch) / f"out-{index}", args.repeat)
            print(f"  {tree}: swe-residual report {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()

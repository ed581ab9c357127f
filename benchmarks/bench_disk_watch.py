"""What watching `[environment] storage_mb` costs on the docker backend, and how far a writer
overshoots it (docs/faults.md, "Disk").

  reading   one reading of a container's writes, by the file count of its writable layer:
            the upper directory walked on the engine's host (what the watcher uses when it
            can) and the engine's SizeRw (the fallback for an engine whose host is out of sight).
  fixed     what the watcher adds to every item whatever the agent does: the meter made (one
            inspect of the container), the thread started, stopped, and the last reading.
  item      the same `cmd:` item (a CPU-bound command that also writes a few hundred files),
            with and without `storage_mb`, alternated: wall and agent seconds, median.
            Target: no difference beyond the noise (the watcher must cost no speed).
  overshoot a writer as fast as the engine's storage allows (`head -c` of zeros into /root)
            against a 64 MiB limit: what the record says it wrote, and the write rate.

Usage: PYTHONPATH=.:tests python benchmarks/bench_disk_watch.py [--items N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

from taskfactory import make_task  # tests/ on the path: the project's own small task

from swe_residual.agents.builtin import CommandAgent
from swe_residual.dataset.task import Task, load_task
from swe_residual.environments.base import StartSpec
from swe_residual.environments.disk_usage import DiskWatcher
from swe_residual.environments.docker import DockerBackend, disk, remove_cached_images
from swe_residual.trial.runner import RunOptions, run_item

WORK = ("python3 -c 'sum(i * i for i in range(6_000_000))' && mkdir -p /root/w && "
        "for i in $(seq 300); do echo $i > /root/w/f$i; done")


def _task(root: Path, storage_mb: int | None, task_id: str) -> Task:
    path = make_task(root / f"data-{storage_mb}", task_id, states={}, environment_mode="shared")
    if storage_mb is not None:
        (path / "task.toml").write_text((path / "task.toml").read_text() + f"storage_mb = {storage_mb}\n")
    return load_task(path)


def _readings(backend: DockerBackend, task: Task) -> list[dict]:
    rows = []
    environment = backend.start(task, None, StartSpec("bench", "bench-readings", 1))
    try:
        made = 0
        for files in (0, 1000, 10000, 50000):
            if files > made:
                environment.exec(f"mkdir -p /root/many && cd /root/many && seq {made + 1} {files} | xargs touch",
                                 timeout_sec=600)
                made = files
            meter = environment.disk_meter()
            assert not isinstance(meter, str)
            times = []
            for _ in range(10):
                started = time.perf_counter()
                meter.measure()
                times.append(time.perf_counter() - started)
            original = disk._host_view
            disk._host_view = lambda *args: None  # type: ignore[assignment]
            try:
                engine_meter = environment.disk_meter()
            finally:
                disk._host_view = original  # type: ignore[assignment]
            assert not isinstance(engine_meter, str)
            started = time.perf_counter()
            engine_meter.measure()
            engine_sec = time.perf_counter() - started
            rows.append({"files": files, "host_walk_ms": round(statistics.median(times) * 1000, 2),
                         "engine_sizerw_ms": round(engine_sec * 1000, 1)})
    finally:
        environment.close()
    return rows


def _fixed(backend: DockerBackend, task: Task) -> dict:
    environment = backend.start(task, None, StartSpec("bench", "bench-fixed", 1))
    try:
        times = []
        for _ in range(20):
            started = time.perf_counter()
            meter = environment.disk_meter()
            assert not isinstance(meter, str)
            DiskWatcher(meter, 4096, lambda _: None).start().stop()
            times.append(time.perf_counter() - started)
    finally:
        environment.close()
    return {"per_item_ms": round(statistics.median(times) * 1000, 2), "max_ms": round(max(times) * 1000, 2)}


def _items(backend: DockerBackend, watched: Task, unwatched: Task, count: int, run_dir: Path) -> dict:
    options = RunOptions(run_id="bench", run_dir=run_dir, infra_retries=0)
    figures: dict[str, dict[str, list[float]]] = {"watched": {"wall": [], "agent": []},
                                                  "unwatched": {"wall": [], "agent": []}}
    run_item(unwatched, None, lambda: CommandAgent(WORK), backend, options)  # warm: images built
    run_item(watched, None, lambda: CommandAgent(WORK), backend, options)
    for _ in range(count):
        for name, task in (("unwatched", unwatched), ("watched", watched)):
            record = run_item(task, None, lambda: CommandAgent(WORK), backend, options)
            assert record.termination == "submitted", record
            figures[name]["wall"].append(record.durations.wall_sec)
            figures[name]["agent"].append(record.durations.agent_sec)
    return {name: {key: round(statistics.median(values), 3) for key, values in kinds.items()}
            for name, kinds in figures.items()}


def _overshoot(backend: DockerBackend, limited: Task, run_dir: Path) -> dict:
    options = RunOptions(run_id="bench", run_dir=run_dir, infra_retries=0)
    rows = []
    for _ in range(3):
        record = run_item(limited, None, lambda: CommandAgent("head -c 1G /dev/zero > /root/big; sleep 30"),
                          backend, options)
        written = re.search(r"wrote ([\d.]+) MiB", record.message or "")
        rows.append(float(written.group(1)) if written else None)
    environment = backend.start(limited, None, StartSpec("bench", "bench-rate", 1))
    try:
        started = time.perf_counter()
        environment.exec("head -c 48M /dev/zero > /root/rate", timeout_sec=300)
        rate = 48 / (time.perf_counter() - started)
    finally:
        environment.close()
    return {"limit_mib": 64, "written_mib": rows, "write_rate_mib_s": round(rate, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-disk-"))
    tag = secrets.token_hex(3)
    ids = [f"bench-disk-{tag}-{name}" for name in ("w", "u", "l")]
    watched, unwatched, limited = _task(root, 4096, ids[0]), _task(root, None, ids[1]), _task(root, 64, ids[2])
    try:
        with DockerBackend(run_id="bench", cache_dir=root / "cache", progress=lambda _: None) as backend:
            result = {"fixed": _fixed(backend, watched), "reading": _readings(backend, watched),
                      "item": _items(backend, watched, unwatched, args.items, root / "run"),
                      "overshoot": _overshoot(backend, limited, root / "run")}
    finally:
        for task_id in ids:
            remove_cached_images(task_id)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())

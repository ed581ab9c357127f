"""Reading and writing run records: N copies of a real record through the JSON edges.

Takes the largest record of a results file (a local run: `pytest --agent=oracle --agent=noop
--backend=local`), makes N copies of it as `RunRecord`s, then times writing them to a results
file (`record_line` each, one write) and reading that file back (`read_records`: each line
parsed, checked and validated into a `RunRecord`). Each time is the process's CPU time (so other
load on the machine does not count), the best of --repeat rounds.
Run: python benchmarks/bench_records_io.py reports/<run-id>/results.jsonl [--count N] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from swe_residual.trial.records import read_record, read_records, record_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a results.jsonl to take the record from")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    line = max(args.results.read_text(encoding="utf-8").splitlines(), key=len)
    records = [read_record(json.loads(line)) for _ in range(args.count)]
    write_sec = read_sec = float("inf")
    with tempfile.TemporaryDirectory(prefix="swe-residual-bench-") as scratch:
        path = Path(scratch) / "results.jsonl"
        for _ in range(args.repeat):
            started = time.process_time()
            path.write_text("".join(record_line(record) + "\n" for record in records), encoding="ascii")
            write_sec = min(write_sec, time.process_time() - started)
            started = time.process_time()
            loaded = read_records([path])
            read_sec = min(read_sec, time.process_time() - started)
            assert len(loaded.records) == args.count and not loaded.problems
        assert record_line(loaded.records[-1]) == line  # the same bytes back
    size = path.stat().st_size if path.exists() else len(line) * args.count
    print(f"{args.count} records of {len(line)} bytes ({size / 2**20:.0f} MiB): "
          f"write {write_sec:.3f} s ({args.count / write_sec:,.0f}/s), read {read_sec:.3f} s ({args.count / read_sec:,.0f}/s)")


if __name__ == "__main__":
    main()

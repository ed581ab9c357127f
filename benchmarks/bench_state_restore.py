"""Per-start restore time of a dataset's Residual States against the clean start, on this engine.

Every state is started the way the docker backend starts it for a rollout:

  patch     repository track: a container of the task image, the state's patch applied;
  snapshot  machine track, no live process left by the replay: a container of the state's
            snapshot (committed once per state);
  replay    machine track, live processes (a server, a program in the terminal's foreground):
            a container of the task image with the interactions replayed into it.

For each state, with its task image built first (its cost is the same for every start, the
clean one included): the one-time cost (the snapshot's replay and commit, or the patch's
check; built here from nothing, then removed), the mean time of `--starts` clean starts and of
`--starts` starts of the state (container start to a first command answered, and removal), and,
for a state that starts from its snapshot, what one full replay costs instead (how it started
before snapshots were used for it), so the saving is stated.

Usage: PYTHONPATH=. python benchmarks/bench_state_restore.py [--dataset DIR] [--states N] [--starts K] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.task import Task
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import DockerBackend, states
from swe_residual.environments.docker.engine import inspect_image, remove_images
from swe_residual.dataset.states.state import ResidualState

ROOT = Path(__file__).resolve().parent.parent


def _start_sec(backend: DockerBackend, task: Task, state: ResidualState | None, item: str) -> tuple[float, str]:
    """Seconds from asking for a start to its first command answered and the container gone."""
    started = time.monotonic()
    with backend.start(task, state, StartSpec(backend.run_id, item, 1)) as environment:
        if environment.exec("true", timeout_sec=60).exit_code != 0:
            raise SystemExit(f"{item}: the instance does not answer")
        fidelity = "clean" if state is None else (environment.fidelity or "patch")
    return time.monotonic() - started, fidelity


def _replay_sec(backend: DockerBackend, task: Task, state: ResidualState, item: str) -> float:
    started = time.monotonic()
    prepared = backend.agent_image(task)
    with states.replayed_instance(backend, task, state, StartSpec(backend.run_id, item, 1), prepared) as environment:
        environment.exec("true", timeout_sec=60)
    return time.monotonic() - started


def measure(backend: DockerBackend, task: Task, state: ResidualState, starts: int) -> dict[str, Any]:
    name = f"{task.id}/{state.id}"
    print(f"{name}: task image", file=sys.stderr, flush=True)
    backend.task_image(task)  # built (or found) before any timing
    tag = backend.state_tag(task, state)
    if inspect_image(backend.client, tag) is not None:
        remove_images(backend.client, [tag])  # time the one-time cost from nothing
    began = time.monotonic()
    if backend.patches_at_start(state):
        backend.check_repo_state(task, state)
    else:
        backend.state_image(task, state)
    once = time.monotonic() - began
    clean = [_start_sec(backend, task, None, f"clean-{n}")[0] for n in range(starts)]
    timed = [_start_sec(backend, task, state, f"state-{n}") for n in range(starts)]
    fidelity = timed[0][1]
    row: dict[str, Any] = {"state": name, "track": state.track, "fidelity": fidelity, "once_sec": once,
                           "clean_sec": statistics.mean(clean), "start_sec": statistics.mean(t for t, _ in timed),
                           "replay_sec": None}
    if fidelity == states.FIDELITY_SNAPSHOT:
        row["replay_sec"] = _replay_sec(backend, task, state, "replay")
    if state.track == "machine":
        labels = (inspect_image(backend.client, tag) or {}).get("Config", {}).get("Labels") or {}
        row["live_processes"] = json.loads(labels.get(states.LIVE_LIST_LABEL) or "[]")
    if inspect_image(backend.client, tag) is not None:
        remove_images(backend.client, [tag])  # made here: not left in the image cache
    return row


def report(rows: list[dict[str, Any]], starts: int) -> None:
    print(f"Restore time per start on this engine (mean of {starts} start(s); seconds)")
    print(f"{'state':46} {'fidelity':>9} {'clean':>7} {'start':>7} {'over clean':>11} {'replay':>8} {'once':>7}")
    for row in rows:
        replay = f"{row['replay_sec']:8.2f}" if row["replay_sec"] is not None else f"{'-':>8}"
        print(f"{row['state'][:46]:46} {row['fidelity']:>9} {row['clean_sec']:7.2f} {row['start_sec']:7.2f} "
              f"{row['start_sec'] - row['clean_sec']:+11.2f} {replay} {row['once_sec']:7.2f}")
    for fidelity in sorted({row["fidelity"] for row in rows}):
        chosen = [row for row in rows if row["fidelity"] == fidelity]
        over = statistics.mean(row["start_sec"] - row["clean_sec"] for row in chosen)
        line = f"{fidelity}: {len(chosen)} state(s), {over:+.2f}s per start over the clean start"
        replays = [row["replay_sec"] - row["start_sec"] for row in chosen if row["replay_sec"] is not None]
        if replays:
            line += f"; a full replay would add {statistics.mean(replays):.2f}s more per start"
        print(line)
    for row in rows:
        if row.get("live_processes"):
            print(f"{row['state']}: replayed, live: {'; '.join(row['live_processes'])[:200]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT / "datasets" / "sample")
    parser.add_argument("--states", type=int, default=0, help="at most this many states (default: all)")
    parser.add_argument("--starts", type=int, default=2, help="starts timed per state and for the clean start")
    parser.add_argument("--track", choices=("repo", "machine"), help="only this track's states")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.starts < 1:
        parser.error("--starts must be at least 1")
    dataset = load_dataset(args.dataset)
    pairs = [(entry.task, state) for entry in dataset.entries for state in entry.states
             if args.track in (None, state.track)]
    pairs = pairs[: args.states] if args.states else pairs
    if not pairs:
        parser.error(f"{args.dataset} has no Residual State" + (f" on the {args.track} track" if args.track else ""))
    rows = []
    with DockerBackend(run_id=f"bench-restore-{secrets.token_hex(4)}", progress=lambda _: None) as backend:
        for task, state in pairs:
            rows.append(measure(backend, task, state, args.starts))
    report(rows, args.starts)
    if args.json:
        args.json.write_text(json.dumps({"starts": args.starts, "states": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

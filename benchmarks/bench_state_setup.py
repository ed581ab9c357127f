"""Set-up cost of a repository-track Residual State, both ways, on this engine.

  snapshot  the state's patch applied once in a build container, committed as an image
            (`swe-residual-state:...`), every instance a container of that snapshot;
  patch     every instance a container of the task image into which the patch is applied
            before the agent starts (the docker backend's default).

For each repo-track state of a dataset (default: the bundled sample), with the task image
already built (its cost is the same either way): the one-time cost (the commit of the
snapshot; the patch way has none without a validation hook, which costs the same in both ways
and is left out here) and the cost of each instance (container start to a running shell with
the state in its working tree, and its removal), over `--rollouts` instances. Then the total
per state for those rollouts, and the whole dataset's set-up both ways.

Every snapshot made here is removed at the end; the containers are labelled with this run id
and removed as they close.

Usage: PYTHONPATH=. python benchmarks/bench_state_setup.py [--dataset DIR] [--states N] [--rollouts R] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import time
from pathlib import Path

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import DockerBackend
from swe_residual.environments.docker.engine import inspect_image, remove_images

ROOT = Path(__file__).resolve().parent.parent


def _instance_sec(backend: DockerBackend, task, state, run_id: str, item: str) -> float:
    started = time.monotonic()
    with backend.start(task, state, StartSpec(run_id=run_id, item_id=item, attempt=1)) as environment:
        # The state is there: what an agent's first command would see.
        if environment.exec("git status --porcelain", timeout_sec=60).exit_code != 0:
            raise SystemExit(f"{task.id}/{state.id}: no repository in the instance")
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT / "datasets" / "sample")
    parser.add_argument("--states", type=int, default=6, help="at most this many repo-track states (default 6)")
    parser.add_argument("--rollouts", type=int, default=2, help="instances per state (default 2: two agents, one rollout)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.states < 1 or args.rollouts < 1:
        parser.error("--states and --rollouts must be at least 1")

    dataset = load_dataset(args.dataset)
    pairs = [(entry.task, state) for entry in dataset.entries for state in entry.states if state.track == "repo"]
    pairs = pairs[: args.states]
    if not pairs:
        parser.error(f"{args.dataset} has no repository-track state")
    run_id = f"bench-states-{secrets.token_hex(4)}"
    quiet = lambda _message: None  # noqa: E731 - progress lines would drown the table
    rows = []
    with DockerBackend(run_id=run_id, progress=quiet, snapshot_repo_states=True) as snapshots, \
            DockerBackend(run_id=run_id, progress=quiet) as patches:
        for task, state in pairs:
            print(f"{task.id}/{state.id}: task image", file=sys.stderr, flush=True)
            patches.task_image(task)  # built (or found) before any timing: the same in both ways
            tag = snapshots.state_tag(task, state)
            if inspect_image(snapshots.client, tag) is not None:
                remove_images(snapshots.client, [tag])  # time a real commit, not a cached one
            started = time.monotonic()
            snapshots.state_image(task, state)
            commit_sec = time.monotonic() - started
            snapshot_instances = [_instance_sec(snapshots, task, state, run_id, f"snap-{n}") for n in range(args.rollouts)]
            patch_instances = [_instance_sec(patches, task, state, run_id, f"patch-{n}") for n in range(args.rollouts)]
            remove_images(snapshots.client, [tag])
            rows.append({
                "state": f"{task.id}/{state.id}",
                "snapshot_once_sec": commit_sec,
                "snapshot_instance_sec": statistics.mean(snapshot_instances),
                "patch_once_sec": 0.0,
                "patch_instance_sec": statistics.mean(patch_instances),
            })

    rollouts = args.rollouts
    print(f"Set-up of a repository-track state on this engine ({rollouts} instance(s) per state; seconds)")
    print(f"{'state':44} {'snapshot: once':>15} {'per instance':>13} {'patch: per instance':>20} "
          f"{'total snapshot':>15} {'total patch':>12}")
    for row in rows:
        snapshot_total = row["snapshot_once_sec"] + rollouts * row["snapshot_instance_sec"]
        patch_total = rollouts * row["patch_instance_sec"]
        print(f"{row['state'][:44]:44} {row['snapshot_once_sec']:15.2f} {row['snapshot_instance_sec']:13.2f} "
              f"{row['patch_instance_sec']:20.2f} {snapshot_total:15.2f} {patch_total:12.2f}")
    mean = {key: statistics.mean(row[key] for row in rows) for key in rows[0] if key != "state"}
    snapshot_state = mean["snapshot_once_sec"] + rollouts * mean["snapshot_instance_sec"]
    patch_state = rollouts * mean["patch_instance_sec"]
    print(f"mean per state: snapshot {snapshot_state:.2f}s (commit {mean['snapshot_once_sec']:.2f}s + "
          f"{rollouts} x {mean['snapshot_instance_sec']:.2f}s), patch {patch_state:.2f}s "
          f"({rollouts} x {mean['patch_instance_sec']:.2f}s): {snapshot_state - patch_state:+.2f}s per state for snapshots")
    all_states = sum(1 for entry in dataset.entries for state in entry.states if state.track == "repo")
    print(f"the dataset's {all_states} repository-track states: snapshot ~{all_states * snapshot_state:.0f}s, "
          f"patch ~{all_states * patch_state:.0f}s")
    if args.json:
        args.json.write_text(json.dumps({"rollouts": rollouts, "states": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

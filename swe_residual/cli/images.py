"""`swe-residual images list|prune`: the docker backend's cached images on this engine.

    swe-residual images list [--task ID] [--json]
    swe-residual images prune [--all] [--dry-run] [--task ID]

Which images count as the suite's, and what prune removes with and without `--all`, is
decided in swe_residual/environments/docker/inventory.py; this module only talks to the user.
Exit status: 0 done, 2 when no Docker engine answers (or the engine fails on the way).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import docker

    from swe_residual.environments.docker.inventory import CachedImage, PruneResult

MB = 1_000_000


def add_parser(sub: Any) -> None:
    """Register `images list` and `images prune` on the top-level subparsers."""
    images = sub.add_parser(
        "images", help="list or prune the docker backend's cached images",
        description="List or prune the docker backend's cached images (they live in the engine). Beside them, "
                    "on the host, the suite keeps its build locks and the local backend's base repositories "
                    "under ~/.cache/swe-residual (or $SWE_RESIDUAL_CACHE); removing that directory is safe "
                    "between runs.")
    actions = images.add_subparsers(dest="images_command", required=True)
    listing = actions.add_parser("list", help="the suite's cached images: kind, task, tag, size, created")
    listing.add_argument("--task", metavar="ID", help="only the images of this task")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(func=cmd_list)
    prune = actions.add_parser(
        "prune", help="remove superseded builds and dead processes' temporary images (--all: every suite image)")
    prune.add_argument("--all", dest="all_images", action="store_true",
                       help="remove every image the suite made, not only superseded and stale ones")
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    prune.add_argument("--task", metavar="ID", help="only the images of this task")
    prune.set_defaults(func=cmd_prune)


def _connect() -> docker.DockerClient | None:
    # Imported here: `swe-residual --help` and the other commands never load the Docker SDK.
    from swe_residual.environments.docker.engine import available, connect

    if not available():
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        print(f"error: no Docker engine answers (DOCKER_HOST: {where}); `images` reads the engine's "
              "image store and needs one", file=sys.stderr)
        return None
    return connect()


def _mb(size: int) -> str:
    return f"{size / MB:.1f}"


def _table(rows: Iterable[list[str]], header: list[str], right: set[int]) -> list[str]:
    lines = [header, *rows]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    return ["  ".join(cell.rjust(width) if column in right else cell.ljust(width)
                      for column, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in lines]


def cmd_list(args: argparse.Namespace) -> int:
    from swe_residual.environments.docker.ancestry import ImageGraph
    from swe_residual.environments.docker.inventory import list_suite_images

    client = _connect()
    if client is None:
        return 2
    try:
        images = list_suite_images(client, task=args.task)
        disk = ImageGraph.load(client).disk_bytes({image.image_id for image in images})
    finally:
        client.close()
    distinct = len({image.image_id for image in images})
    if args.json:
        print(json.dumps({"images": [image.as_json() for image in images], "names": len(images),
                          "distinct_images": distinct, "disk_bytes": disk}, indent=2))
        return 0
    if not images:
        print("no cached swe-residual images" + (f" of task {args.task}" if args.task else ""))
        return 0
    rows = [[image.kind, image.task or "-", image.tag, _mb(image.size), image.created.strftime("%Y-%m-%d %H:%M")]
            for image in images]
    for line in _table(rows, ["KIND", "TASK", "TAG", "SIZE MB", "CREATED (UTC)"], right={3}):
        print(line)
    print(f"{len(images)} name(s) on {distinct} image(s), {_mb(disk)} MB on disk "
          "(layers shared between images, the base image's above all, counted once)")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from swe_residual.environments.docker.inventory import prune_suite_images

    client = _connect()
    if client is None:
        return 2
    try:
        result = prune_suite_images(client, all_images=args.all_images, task=args.task, dry_run=args.dry_run)
    finally:
        client.close()
    for line in describe_prune(result):
        print(line)
    return 0


def _label(image: CachedImage) -> str:
    return f"{image.kind} {image.task}" if image.task else image.kind


def describe_prune(result: PruneResult) -> list[str]:
    """What a prune removed (or would remove), what it kept and why, and the space freed."""
    verb = "would remove" if result.dry_run else "removed"
    lines = []
    for removal in result.removed:
        names = ", ".join(removal.references)
        what = "" if removal.deleted else " (name only: a container, child image or other name holds the image)"
        lines.append(f"{verb} {names} [{_label(removal.image)}]: {removal.reason}{what}")
    for kept in result.kept:
        lines.append(f"kept {kept.image.tag} [{_label(kept.image)}]: {kept.reason}")
    if not result.removed:
        lines.append("nothing to remove" if not result.dry_run else "nothing would be removed")
    freed = "would free" if result.dry_run else "freed"
    lines.append(f"{freed} {_mb(result.freed_bytes)} MB: {len(result.removed)} name(s), "
                 f"{result.deleted_images} image(s) deleted (build layers included)")
    return lines

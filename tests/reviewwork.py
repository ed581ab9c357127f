"""A Stage II work directory for the review tests: one repo-track task, `calc`, and one scripted
predecessor per tag, each clamping differently (so none is a duplicate), generated on the local
backend and filtered."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from taskfactory import make_task

from swe_residual.environments.local import LocalBackend
from swe_residual.residualize import filter as stage_ii
from swe_residual.residualize.generate import generate
from swe_residual.residualize.predecessors import parse_predecessor

FIX = "sed -i 's/    return value$/    return max(low, value)  # {tag}/' calc.py\n"


def make_review_work(root: Path, tags: Sequence[str]) -> Path:
    """`root/work`, with one candidate `<tag>-a1` per tag of task `calc`."""
    make_task(root / "dataset", "calc")
    predecessors = []
    for tag in tags:
        (root / "pred" / tag).mkdir(parents=True)
        (root / "pred" / tag / "calc.sh").write_text(FIX.format(tag=tag))
        predecessors.append(parse_predecessor(f"{tag}=script:{root / 'pred' / tag}"))
    generate(root / "dataset", predecessors, root / "work", backend=LocalBackend(cache_dir=root / "cache"),
             timeout_sec=60, progress=lambda _: None)
    stage_ii.filter_runs(root / "work", progress=lambda _: None)
    return root / "work"

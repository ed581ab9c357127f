"""Which items ``report.html`` shows and where each item's files are, relative to the report.

An item is the last record of its key (as the summary counts it), paired with the directory
its record's own relative paths (trajectory, verifier log, artifacts) resolve against: the
directory of the results file it came from. Everything the report writes per item sits under
the report directory (``diffs/``, ``items/``), named by agent, task and start, so the
directory can be copied or archived as a whole; links into a run directory are relative too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from swe_residual.trial.handoff.views import view_suffix
from swe_residual.metrics.summary.model import Summary
from swe_residual.trial.record_model import RunRecord
from swe_residual.trial.records import agent_slug, record_key
from swe_residual.report.html_tables import e

__all__ = ["Item", "agent_order", "diff_href", "href", "item_href", "latest_items", "link", "start_label"]


@dataclass(frozen=True)
class Item:
    record: RunRecord
    source: Path  # where the record's relative paths resolve (its results file's directory)

    def file(self, field: str) -> Path | None:
        """The file a record field names (``trajectory``, ``verifier_log``), or None when the
        record names none or it is not there."""
        value = getattr(self.record, field)
        if not value:
            return None
        path = Path(str(value))
        target = path if path.is_absolute() else self.source / path
        return target if target.is_file() else None


def href(path: str) -> str:
    """A relative path as an attribute value: each character a browser would misread (space,
    '#', '?', '%') quoted, then escaped."""
    return e(quote(path, safe="/._-~:"))


def link(target: Path, page_dir: Path, text: str) -> str:
    """``<a>`` from a page in ``page_dir`` to ``target``, relative (both are on this machine)."""
    return f'<a href="{href(Path(os.path.relpath(target, page_dir)).as_posix())}">{e(text)}</a>'


def _slug(text: Any) -> str:
    return agent_slug(str(text))


def _leaf(record: RunRecord) -> str:
    # A rollout after the first adds `.rN`: two rollouts of one start get two pages and diffs.
    rollout = f".r{record.rollout}" if record.rollout else ""
    if record.state is None:
        return "clean" + rollout
    return "residual-" + _slug(f"{record.state}{view_suffix(record.handoff)}") + rollout


def diff_href(record: RunRecord) -> str:
    """Where an item's final diff is written, relative to the report:
    ``diffs/<agent>/<task>/<state or clean>.diff`` (names made file-safe)."""
    return f"diffs/{_slug(record.agent)}/{_slug(record.task)}/{_leaf(record)}.diff"


def item_href(record: RunRecord) -> str:
    """Where an item's page is written, relative to the report:
    ``items/<agent>/<track>/<task>/<state or clean>.html`` (a task name can be on two tracks)."""
    return f"items/{_slug(record.agent)}/{_slug(record.track)}/{_slug(record.task)}/{_leaf(record)}.html"


def start_label(state: str | None, handoff: str | None = None) -> str:
    """``Clean Start`` or ``Residual: <state>`` (``@view`` for a non-blind handoff view)."""
    if state is None:
        return "Clean Start"
    return f"Residual: {state}{view_suffix(handoff)}"


def agent_order(summary: Summary, records: Sequence[RunRecord]) -> list[str]:
    """The summary's agent order (every table's), then any agent only the records name."""
    order = list(summary.agents)
    return order + sorted({str(r.agent) for r in records} - set(order))


def latest_items(records: Sequence[RunRecord], record_dirs: Sequence[Path] | None, run_dir: Path,
                 agents: Sequence[str]) -> list[Item]:
    """One item per key, the last record winning (as in the summary), in ``agents`` order, then
    by track, task, Clean Start first, state and view."""
    latest: dict[Any, Item] = {}
    for index, r in enumerate(records):
        latest[record_key(r)] = Item(r, Path(record_dirs[index]) if record_dirs is not None else Path(run_dir))
    rank = {agent: n for n, agent in enumerate(agents)}

    def order(item: Item) -> tuple[Any, ...]:
        r = item.record
        return (rank.get(str(r.agent), len(rank)), str(r.agent), str(r.track),
                str(r.task), r.state is not None, str(r.state), str(r.handoff or ""))

    return sorted(latest.values(), key=order)

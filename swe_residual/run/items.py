"""The items of a run: one per (agent, task, Clean Start) and per (agent, task, Residual State,
handoff view); with only the `blind` view (the default) that is one per Residual State.

The list is a pure function of the dataset and the agent names, sorted, so every xdist
worker collects exactly the same items. A malformed task or state becomes one error item
that names the file and field; it never removes the other items.
"""

from __future__ import annotations

from dataclasses import dataclass

from swe_residual.dataset.load import Dataset
from swe_residual.errors import DatasetError
from swe_residual.trial.records import item_id
from swe_residual.trial.values import Start


@dataclass(frozen=True)
class ItemSpec:
    agent: str
    task_id: str
    state_id: str | None
    track: str
    error: DatasetError | None = None
    skip_reason: str | None = None
    handoff: str = "blind"  # the view a Residual State item hands the agent (swe_residual/handoff/views.py)

    @property
    def start(self) -> Start:
        return Start.CLEAN if self.state_id is None else Start.RESIDUAL

    @property
    def id(self) -> str:
        if self.error is not None:
            return f"invalid/{self.task_id}" + (f"/{self.state_id}" if self.state_id else "")
        return item_id(self.agent, self.task_id, self.state_id, self.handoff)


def build_items(dataset: Dataset, agents: list[str], skip_reason_for_track: dict[str, str] | None = None,
                views: tuple[str, ...] = ("blind",)) -> list[ItemSpec]:
    skips = skip_reason_for_track or {}
    items: list[ItemSpec] = []
    for task_name, error in dataset.task_errors:
        items.append(ItemSpec(agent="-", task_id=task_name, state_id=None, track="-", error=error))
    for entry in dataset.entries:
        for state_name, error in entry.state_errors:
            items.append(ItemSpec(agent="-", task_id=entry.task.id, state_id=state_name, track=entry.task.track, error=error))
    for agent in agents:
        for entry in dataset.entries:
            task = entry.task
            skip = skips.get(task.track)
            items.append(ItemSpec(agent, task.id, None, task.track, skip_reason=skip))
            for state in entry.states:
                items.extend(ItemSpec(agent, task.id, state.id, task.track, skip_reason=skip, handoff=view)
                             for view in views)
    return items

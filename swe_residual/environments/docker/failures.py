"""States whose apply or replay failed, remembered for the rest of the run.

Building a state's snapshot can be slow (a machine-track replay waits through every recorded
interaction) and a state that failed once fails again: its payload and the task image are what
its snapshot tag is made of. So the first failure is kept and every later item of the state in
the same run gets the same error at once, never a rebuild.

"The run" is the process that owns it: this process, or under pytest-xdist the controller
whose workers all run items of it (they share the run id). The failure is held in memory and
written as a marker file `<cache>/docker/failed-states/<run id>/<tag>.json` naming that owner,
so the other workers read it; a marker of another owner (an earlier run with the same run id)
is ignored, so a rerun always tries again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from swe_residual.environments.docker.images import slug
from swe_residual.dataset.errors import DatasetError


def run_owner() -> int:
    """The pid of the process that owns this run (xdist workers: their controller)."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


class StateFailures:
    def __init__(self, root: Path, run_id: str) -> None:
        self.directory = root / slug(run_id or "no-run-id", 120)
        self.run_id = run_id
        self.owner = run_owner()
        self._known: dict[str, DatasetError] = {}

    def _marker(self, tag: str) -> Path:
        return self.directory / f"{slug(tag, 200)}.json"

    def read(self, tag: str) -> DatasetError | None:
        if tag in self._known:
            return self._known[tag]
        if not self.run_id:
            return None  # no run to share it with: this process's memory only
        try:
            data = json.loads(self._marker(tag).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("owner") != self.owner or data.get("tag") != tag:
            return None
        error = DatasetError(str(data.get("path", "")), str(data.get("message", "")), data.get("field"))
        self._known[tag] = error
        return error

    def remember(self, tag: str, error: DatasetError) -> None:
        self._known[tag] = error
        if not self.run_id:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        marker = self._marker(tag)
        temporary = marker.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"tag": tag, "owner": self.owner, "path": str(error.path),
                                         "message": error.message, "field": error.field}), encoding="utf-8")
        temporary.replace(marker)

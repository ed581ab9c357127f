"""How the run's machine-track states were restored (fidelity), for the summary (the report's
section is `FIDELITY_SECTION`, swe_residual/report/sections.py).

A machine-track state's instance is a container of its committed snapshot (`snapshot`: files
only), a fresh container with its interactions replayed into it (`replay`: the state's live
processes, a terminal session among them, run again in every instance) or a CRIU restore
(`criu`, not implemented). Every record carries its `fidelity`; this says it per state, so a
reader of the summary knows what the machine-track numbers were measured on.

`summary["infra"]["fidelity"]`, present only when the run has machine-track items on a Residual State:

    {"counts": {"replay": 1, "snapshot": 2}, "states": [{"task", "state", "fidelity"}, ...]}

A state none of whose items got an instance (its replay failed, say) has fidelity null.
"""

from __future__ import annotations

from collections.abc import Sequence

from swe_residual.metrics.summary.model import Fidelity, FidelityState
from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.values import Track

def fidelity_summary(records: Sequence[RunRecord]) -> Fidelity | None:
    states: dict[tuple[str, str], str | None] = {}
    for record in records:
        # A record without the field (written elsewhere, e.g. imported) says nothing of it.
        if record.track != Track.MACHINE or record.state is None or not record.has("fidelity"):
            continue
        key = (str(record.task), str(record.state))
        states[key] = states.get(key) or record.fidelity
    if not states:
        return None
    listed = [FidelityState(task=task, state=state, fidelity=states[(task, state)]) for task, state in sorted(states)]
    counts: dict[str, int] = {}
    for entry in listed:
        name = str(entry.fidelity) if entry.fidelity is not None else "none"
        counts[name] = counts.get(name, 0) + 1
    return Fidelity(counts=dict(sorted(counts.items())), states=tuple(listed))

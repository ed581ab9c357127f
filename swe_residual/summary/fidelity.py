"""How the run's machine-track states were restored (fidelity), for the summary and the report.

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

from swe_residual.summary.model import Fidelity, FidelityState, Summary
from swe_residual.summary.tables import Align, Column, Layout, Part, Section, Table, key_column
from swe_residual.trial.record_model import RunRecord
from swe_residual.trial.values import Track

MEANING = {
    "snapshot": "a container of the committed snapshot (files only)",
    "replay": "the interactions replayed into every instance (live processes run again)",
    "criu": "a CRIU checkpoint restored (files and live processes)",
    None: "no instance started (the replay or the apply failed)",
}


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


def _counts_text(block: Fidelity) -> str:
    return ", ".join(f"{count} {name}" for name, count in block.counts.items())


#: Every restored state, with how its instances are made; the terminal lists only the ones not
#: restored from a snapshot (the usual way, counted in the line above the table).
FIDELITY = Table(
    "fidelity", "Fidelity of each machine-track state",
    (key_column("Task", "task", terminal="task"), key_column("State", "state", terminal="state"),
     Column("Fidelity", lambda entry: entry.fidelity or "-", align=Align.LEFT, terminal="fidelity"),
     Column("How an instance is made", lambda entry: MEANING.get(entry.fidelity, ""), align=Align.LEFT,
            terminal="how")),
    layout=Layout.UNPADDED,
    terminal_rows=lambda entry: entry.fidelity != "snapshot",
)  # fmt: skip


def _fidelity_parts(summary: Summary) -> list[Part]:
    block = summary.infra.fidelity
    if not block:
        return []
    return [Part(f"States restored by: {_counts_text(block)}.", FIDELITY, list(block.states))]


FIDELITY_SECTION = Section("fidelity", "Machine-track fidelity", _fidelity_parts)

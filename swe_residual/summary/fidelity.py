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

from collections.abc import Callable, Sequence
from html import escape

from swe_residual.trial.record_model import RunRecord
from swe_residual.trial.values import Track
from swe_residual.summary.model import Fidelity, FidelityState, Summary

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


def fidelity_terminal(summary: Summary, clip: Callable[[str, int], str]) -> list[str]:
    block = summary.infra.fidelity
    if not block:
        return []
    lines = [f"machine-track states restored by: {_counts_text(block)}"]
    for entry in block.states:
        if entry.fidelity != "snapshot":
            lines.append(f"  {entry.task} [{entry.state}]: {entry.fidelity or 'not started'}")
    return lines


def fidelity_markdown(summary: Summary) -> list[str]:
    block = summary.infra.fidelity
    if not block:
        return []
    out = ["", "## Machine-track fidelity", "", f"States restored by: {_counts_text(block)}.", "",
           "| Task | State | Fidelity | How an instance is made |", "|---|---|---|---|"]
    out += [f"| {e.task} | {e.state} | {e.fidelity or '-'} | {MEANING.get(e.fidelity, '')} |" for e in block.states]
    return out


def fidelity_html(summary: Summary) -> list[str]:
    from swe_residual.report.tables import heading, table

    block = summary.infra.fidelity
    if not block:
        return []
    rows = [[e.task, e.state, str(e.fidelity or "-"), MEANING.get(e.fidelity, "")] for e in block.states]
    return [
        heading(2, "fidelity", "Machine-track fidelity: how each Residual State was restored"),
        f'<p class="note">States restored by: {escape(_counts_text(block))}.</p>',
        table(["Task", "State", "Fidelity", "How an instance is made"], rows, left=4),
    ]

"""The sections a run adds to every output when it has something to say: how its machine-track
states were restored, the starts the reference solution did not solve, and the figures by handoff
view. Each is declared once (its title, its text, its table) and drawn by the shared renderers
(swe_residual/report/render.py, swe_residual/report/html_tables.py); the figures they show are
computed with the summary (`fidelity_summary`, `oracle_summary`, `handoff_summary`)."""

from __future__ import annotations

from collections.abc import Callable

from swe_residual.report import meanings
from swe_residual.metrics.summary.model import Fidelity, OracleMiss, Summary
from swe_residual.report.tables import (
    HANDOFF_ACCEPTANCE, HANDOFF_VIEWS, TAKEOVER, Align, Column, Layout, Part, Section, Table, key_column, text_over,
)  # fmt: skip

__all__ = ["FIDELITY_SECTION", "HANDOFF_SECTIONS", "MEANING", "ORACLE_SECTION"]

# --------------------------------------------------------------------------- machine-track fidelity

MEANING = {
    "snapshot": "a container of the committed snapshot (files only)",
    "replay": "the interactions replayed into every instance (live processes run again)",
    "criu": "a CRIU checkpoint restored (files and live processes)",
    None: "no instance started (the replay or the apply failed)",
}


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


# --------------------------------------------------------------------------- the oracle's misses


def _miss(entry: OracleMiss) -> str:
    why = str(entry.message or "").replace("\n", " ")
    return f"{entry.task} [{entry.state or 'clean'}]: {entry.outcome} ({entry.termination}) {why}".rstrip()


#: Each start the oracle did not solve, with what it ended in and why.
ORACLE_MISSES = Table(
    "oracle_misses", "Starts the reference solution did not solve",
    (Column("Start", _miss, align=Align.LEFT, terminal="start"),),
    layout=Layout.LIST,
)  # fmt: skip


def _oracle_parts(summary: Summary) -> list[Part]:
    oracle = summary.oracle
    if oracle is None or not oracle.unsolved:  # it solved every start (or did not run): nothing to say
        return []
    return [Part(f"oracle did not solve {len(oracle.unsolved)} of {oracle.starts} starts "
                 "(a task, state or set-up fault, not a score):", ORACLE_MISSES, list(oracle.unsolved))]


ORACLE_SECTION = Section("oracle", "Reference solution", _oracle_parts)


# --------------------------------------------------------------------------- by handoff view


def _parts(text: str, table: Table) -> Callable[[Summary], list[Part]]:
    return text_over(text, table, shown=lambda summary: bool(summary.by_handoff))  # only with several views


VIEWS_SECTION = Section("by-handoff", HANDOFF_VIEWS.title, _parts(
    "What the agent was told of its predecessor (blind: nothing, the paper's protocol). Each view's\n"
    "Residual States against the same Clean Starts, on that view's tasks; success in %, Gap in points;\n"
    f"R/C = {meanings.TAKEOVER_RATIO}.", HANDOFF_VIEWS))
TAKEOVER_SECTION = Section("takeover-cost", TAKEOVER.title, _parts(
    "Steps, tokens (prompt + completion) and cost where known; every outcome counts, infra errors do not.",
    TAKEOVER), level=3)
ACCEPTANCE_SECTION = Section("acceptance-by-handoff", HANDOFF_ACCEPTANCE.title, _parts(
    "Normally submitted runs, per track as in the acceptance-bias table above.", HANDOFF_ACCEPTANCE), level=3)
#: In every output's order; the terminal shows the first (the by-view figures) alone.
HANDOFF_SECTIONS = (VIEWS_SECTION, TAKEOVER_SECTION, ACCEPTANCE_SECTION)

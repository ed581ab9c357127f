"""What a run's records cannot say about the run itself: the items it skipped (with the reason)
and whether it was interrupted (with the command that continues it).

The plugin adds these to the summary as extra keys (`skipped`, `interrupted`, `resume_command`;
the figures' keys are unchanged, and a summary recomputed from results files has none of them),
and every output shows them: the notices (:data:`STATUS`) first, the skipped items
(:data:`SKIPPED_SECTION`) after the figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from shlex import quote

from swe_residual.metrics.summary.model import Skipped, Summary
from swe_residual.report.render import terminal_table
from swe_residual.report.tables import Align, Column, Format, Layout, Part, Section, Table


def with_run_status(summary: Summary, skipped: Iterable[tuple[str, str]], *, interrupted: str | None,
                    resume_command: str | None, warnings: Iterable[str] = ()) -> Summary:
    """`summary` plus `skipped` (by item) when items were skipped, `interrupted`,
    `interrupted_reason` and `resume_command` when the run stopped early, and
    `dataset_warnings` (run/preflight.py: tasks not loaded, grading that receives nothing)."""
    update: dict[str, object] = {}
    warnings = tuple(warnings)
    if warnings:
        update["dataset_warnings"] = warnings
    entries = sorted({item: reason for item, reason in skipped}.items())
    if entries:
        update["skipped"] = tuple(Skipped(item=item, reason=reason) for item, reason in entries)
    if interrupted is not None:
        update.update(interrupted=True, interrupted_reason=interrupted, resume_command=resume_command or None)
    return summary.model_copy(update=update)


def with_never_worked(summary: Summary, broken: Iterable[str]) -> Summary:
    """`summary` plus `never_worked`: the agents that failed on every item with their own error
    (the terminations' lines, without their "error: "), which every output shows as a banner:
    such an agent's 0% measures its start-up, not the tasks."""
    lines = tuple(line.removeprefix("error: ") for line in broken)
    return summary.model_copy(update={"never_worked": lines}) if lines else summary


def partial_text(summary: Summary) -> str | None:
    """What a partial merge covers, in words (None for a complete one)."""
    partial = summary.partial
    if partial is None:
        return None
    n = partial.shards
    merged = ", ".join(f"{k}/{n}" for k in partial.merged)
    missing = ", ".join(f"{k}/{n}" for k in partial.missing)
    return f"PARTIAL: shard(s) {missing} missing (--allow-partial); the figures cover shard(s) {merged} only"


@dataclass(frozen=True)
class Notice:
    """One thing a reader must know before the figures: ``label`` in bold, then ``text``, then
    ``command`` as code (each optional)."""

    kind: str
    label: str | None = None
    text: str | None = None
    command: str | None = None


#: the kinds of notice (report.html's classes of their banners)
PARTIAL, NEVER_WORKED, DATASET, INTERRUPTED, CONTINUE = (
    "partial", "never-worked", "dataset-warning", "interrupted", "continue")


def notices(summary: Summary) -> list[Notice]:
    """The notices of a run, in the order every output shows them: a partial merge, the agents
    that never worked, the dataset's warnings, an interruption and the command that continues it."""
    s = summary
    partial = partial_text(s)
    found = [Notice(PARTIAL, partial)] if partial is not None else []
    found += [Notice(NEVER_WORKED, "Never worked:", f" {line}: its figures measure nothing") for line in s.never_worked]
    found += [Notice(DATASET, "Dataset:", f" {warning}") for warning in s.dataset_warnings]
    if s.interrupted:
        found.append(Notice(INTERRUPTED, "Interrupted",
                            f" ({s.interrupted_reason}): the figures cover only the items that finished."))
        if s.resume_command:
            found.append(Notice(CONTINUE, text="Continue with: ", command=s.resume_command))
    return found


#: The notices at the top of summary.md and report.html; the terminal says the partial merge
#: first and the interruption first and last (the plugin), the others where it says them anyway
#: (the agents that never worked under the terminations, the dataset's warnings in the header).
STATUS = Table(
    "status", "Run status",
    (Column("Label", lambda n: n.label, align=Align.LEFT, terminal="label", emphasis=True),
     Column("Text", lambda n: n.text, align=Align.LEFT, terminal="text"),
     Column("Command", lambda n: n.command, Format.CODE, Align.LEFT, terminal="command")),
    lambda summary, scopes: notices(summary),
    layout=Layout.NOTICES, html_class=lambda notice: notice.kind,
)  # fmt: skip


def interrupted_lines(summary: Summary) -> list[str]:
    """The interruption and the command that continues the run, as terminal lines."""
    return terminal_table(STATUS, [n for n in notices(summary) if n.kind in (INTERRUPTED, CONTINUE)])


def partial_lines(summary: Summary) -> list[str]:
    """The partial merge, as a terminal line (none for a complete one)."""
    return terminal_table(STATUS, [n for n in notices(summary) if n.kind == PARTIAL])


#: The items of one reason (rows: item ids); the terminal names them on one line, cut at its width.
SKIPPED_ITEMS = Table(
    "skipped_items", "Skipped items",
    (Column("Item", lambda item: item, Format.CODE, Align.LEFT, terminal="item"),),
    layout=Layout.LIST, terminal_inline=True,
)  # fmt: skip


def _skipped_parts(summary: Summary) -> list[Part]:
    grouped: dict[str, list[str]] = {}
    for entry in summary.skipped or ():
        grouped.setdefault(entry.reason, []).append(entry.item)
    return [Part(f"{len(items)} item(s): {reason}", SKIPPED_ITEMS, items) for reason, items in grouped.items()]


SKIPPED_SECTION = Section("skipped", "Skipped items", _skipped_parts)


def resume_command(invocation_args: Sequence[str], run_dir: str) -> str:
    """The command that continues a run: pytest with `--resume=RUN_DIR` and the options the run
    was given (the agents, dataset and selection a resumed run needs today), without the ones
    `--resume` replaces (`--resume`, `--run-id`, `--results-dir`)."""
    replaced = ("--resume", "--run-id", "--results-dir")
    kept: list[str] = []
    skip_next = False
    for arg in invocation_args:
        if skip_next:
            skip_next = False
            continue
        if arg in replaced:
            skip_next = True
            continue
        if arg.startswith(tuple(f"{flag}=" for flag in replaced)):
            continue
        kept.append(arg)
    return " ".join(["pytest", quote(f"--resume={run_dir}"), *(quote(arg) for arg in kept)])

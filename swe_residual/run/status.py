"""What a run's records cannot say about the run itself: the items it skipped (with the reason)
and whether it was interrupted (with the command that continues it).

The plugin adds these to the summary as extra keys (`skipped`, `interrupted`, `resume_command`;
the figures' keys are unchanged, and a summary recomputed from results files has none of them),
and each renderer shows them: the terminal, summary.md and report.html.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from shlex import quote

from swe_residual.summary.model import Skipped, Summary

MAX_ITEMS_PER_REASON = 6  # on the terminal; summary.md, summary.json and report.html list all


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


def _by_reason(summary: Summary) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for entry in summary.skipped:
        grouped.setdefault(entry.reason, []).append(entry.item)
    return grouped


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


def interrupted_lines(summary: Summary) -> list[str]:
    s = summary
    if not s.interrupted:
        return []
    lines = [f"INTERRUPTED ({s.interrupted_reason}): the figures cover only the items that finished"]
    if s.resume_command:
        lines.append(f"continue with: {s.resume_command}")
    return lines


def skipped_terminal(summary: Summary) -> list[str]:
    lines = []
    for reason, items in _by_reason(summary).items():
        shown = ", ".join(items[:MAX_ITEMS_PER_REASON]) + (", ..." if len(items) > MAX_ITEMS_PER_REASON else "")
        lines += [f"skipped {len(items)} item(s), because:", f"  {reason}", f"  {shown}"]
    return lines


def status_markdown(summary: Summary) -> list[str]:
    """Lines for summary.md: the interruption first, the skipped items after the figures."""
    s = summary
    out: list[str] = []
    partial = partial_text(s)
    if partial is not None:
        out += [f"**{partial}**", ""]
    for line in s.never_worked:
        out += [f"**Never worked:** {line}: its figures measure nothing", ""]
    for warning in s.dataset_warnings:
        out += [f"**Dataset:** {warning}", ""]
    if s.interrupted:
        out += [f"**Interrupted** ({s.interrupted_reason}): the figures cover only the items "
                "that finished."]
        if s.resume_command:
            out += ["", f"Continue with: `{s.resume_command}`"]
        out += [""]
    return out


def skipped_markdown(summary: Summary) -> list[str]:
    grouped = _by_reason(summary)
    if not grouped:
        return []
    out = ["## Skipped items", ""]
    for reason, items in grouped.items():
        out += [f"{len(items)} item(s): {reason}", ""] + [f"- `{item}`" for item in items] + [""]
    return out


def status_html(summary: Summary) -> str:
    """The interruption banner and the skipped items, for report.html (empty when neither)."""
    s = summary
    parts: list[str] = []
    partial = partial_text(s)
    if partial is not None:
        parts.append(f'<p class="note banner" id="partial"><strong>{html.escape(partial)}</strong></p>')
    for line in s.never_worked:
        parts.append(f'<p class="note banner never-worked"><strong>Never worked:</strong> {html.escape(line)}: '
                     "its figures measure nothing</p>")
    for warning in s.dataset_warnings:
        parts.append(f'<p class="note banner dataset-warning"><strong>Dataset:</strong> {html.escape(warning)}</p>')
    if s.interrupted:
        parts.append(f'<p class="note" id="interrupted"><strong>Interrupted</strong> '
                     f"({html.escape(str(s.interrupted_reason))}): the figures cover only the "
                     "items that finished.")
        if s.resume_command:
            parts.append(f" Continue with: <code>{html.escape(str(s.resume_command))}</code>")
        parts.append("</p>")
    grouped = _by_reason(s)
    if grouped:
        parts.append('<h2 id="skipped">Skipped items</h2>')
        for reason, items in grouped.items():
            parts.append(f'<p class="note">{len(items)} item(s): {html.escape(reason)}</p><ul>')
            parts += [f"<li><code>{html.escape(item)}</code></li>" for item in items]
            parts.append("</ul>")
    return "".join(parts)


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

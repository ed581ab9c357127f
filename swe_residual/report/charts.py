"""The charts of ``report.html``, drawn by matplotlib (Agg) as inline SVG, from the summary dict.

matplotlib is the optional extra ``report`` (``pip install 'swe-residual[report]'``): it is
imported only when a chart is drawn, and without it :func:`missing_dependency` says so in one
line and the page keeps its tables. Every number drawn is read from the summary; nothing is
computed here from run records.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from swe_residual.metrics.summary.model import ScopeMetrics, Summary

__all__ = ["chart_clean_vs_residual", "chart_conditional", "missing_dependency"]

# Colour-blind-safe pair (Okabe-Ito blue and vermillion) for Clean vs Residual / success vs fail.
CLEAN_COLOUR = "#0072B2"
RESIDUAL_COLOUR = "#D55E00"
SUCCESS_COLOUR = "#009E73"
FAIL_COLOUR = "#D55E00"
TEXT_COLOUR = "#1b1f24"
MUTED_COLOUR = "#57606a"
BAND_COLOUR = "#f3f5f7"
INSTALL_HINT = "pip install 'swe-residual[report]'"

# Text sizes, in points. The SVG is shown at its natural size (1 pt = 4/3 px), so the smallest,
# VALUE_SIZE, is 12 px on screen: the page's rule is no chart text under 10 px.
BASE_SIZE = 10
VALUE_SIZE = 9
TITLE_SIZE = 11
# Figure 1's bars: two per agent row (row pitch 1), centred BAR_OFFSET above and below the row.
BAR_HEIGHT = 0.36
BAR_OFFSET = 0.19
INSIDE_FROM = 80.0  # a value this large is printed inside its bar, where there is room
MAX_PANELS_PER_LINE = 3  # repo, machine, overall: a line of three still fits the page column
LABEL_WIDTH = 24  # characters per line of an agent's label; longer names wrap onto more lines
LINE_HEIGHT = 0.19  # inches per line of a label (BASE_SIZE text), so a row grows with its label
# Figure 1 is drawn at most this wide (inches, before the tight crop): shown shrunk to an 800 px
# window's column (~750 px), its smallest text (VALUE_SIZE, 12 px at natural size) stays >= 10 px.
FIGURE_1_MAX_WIDTH = 9.0


def missing_dependency() -> str | None:
    """None when the charts can be drawn; else the one line the report shows instead."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"Charts are not drawn: matplotlib is not installed ({INSTALL_HINT})."
    return None


def _figure_class() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display: render to SVG only
    from matplotlib.figure import Figure

    return Figure


def _rc() -> Any:  # matplotlib types rc keys as Literals; these are valid ones
    return {
        "svg.fonttype": "none",  # text stays text: smaller, selectable, measurable, no embedded glyphs
        "svg.hashsalt": "swe-residual",  # stable element ids: the same data gives the same file
        # matplotlib lays text out with its bundled DejaVu Sans; the SVG names it first and ends
        # the list with the generic family, so a browser without it falls back to its sans-serif
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
        "font.size": BASE_SIZE,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }


def _svg(fig: Any) -> str:
    """The figure as inline SVG: no XML prolog or DOCTYPE (invalid inside HTML), no metadata."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.DOTALL)


def _label(name: str, width: int = LABEL_WIDTH) -> str:
    """The whole name, on lines of at most ``width`` characters, broken after a separator
    (``:/.-`` or a space) where there is one: an agent spec is never cut (two specs often
    differ only at one end: module:pkg.mod:Class, cmd:... --model X)."""
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^:/.\s-]*[:/.\s-]?", name):
        while len(piece) > width:  # no separator for a whole line: broken where it must be
            if line:
                lines.append(line)
                line = ""
            lines.append(piece[:width])
            piece = piece[width:]
        if len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
    return "\n".join(text.rstrip() for text in ([*lines, line] if line else lines))


def _label_lines(names: Sequence[str]) -> int:
    return max((_label(n).count("\n") + 1 for n in names), default=1)


def _value_label(ax: Any, value: float, y: float, beyond: float | None = None) -> None:
    """The bar's value at its end: inside a long bar (white), just past a short one (and past
    its error bar, ``beyond``)."""
    if value >= INSIDE_FROM:
        ax.text(value - 1.5, y, f"{value:.1f}", ha="right", va="center", color="white",
                fontsize=VALUE_SIZE, fontweight="bold")  # fmt: skip
    else:
        end = max(value, beyond) if beyond is not None else value
        ax.text(end + 1.5, y, f"{value:.1f}", ha="left", va="center", color=TEXT_COLOUR, fontsize=VALUE_SIZE)


def _xerr(value: float, bound: tuple[float, float] | None) -> list[list[float]] | None:
    """matplotlib's ``xerr`` of one bar from its interval: distances below and above the value
    (never negative: an interval from an older summary, a percentile bootstrap, may not straddle the point)."""
    if bound is None:
        return None
    return [[max(0.0, value - bound[0])], [max(0.0, bound[1] - value)]]


def chart_clean_vs_residual(summary: Summary, scopes: Sequence[str]) -> str | None:
    """Clean and Residual success per agent (the paper's Figure 1, right panel): one row per
    agent, labelled with its whole name (wrapped, never cut), holding its Ref. Clean success
    (upper bar) and its Residual success (lower bar), the value printed on each; one panel per
    scope, side by side (at most three to a line, the whole at most ``FIGURE_1_MAX_WIDTH`` wide).

    Each agent's label is an SVG group ``figure-1-agent-<i>`` (the first panel's; a further
    line of panels repeats them as ``figure-1-agent-<i>-<line>``) and each bar is
    ``figure-1-bar-<panel>-<i>-clean|residual``, so a browser test can find the rows. A bar with
    an interval in the summary carries it as an error bar, ``figure-1-interval-<panel>-<i>-<rate>``."""
    agents = summary.agents
    if not agents or not scopes:
        return None
    import matplotlib
    from matplotlib.patches import Patch

    figure = _figure_class()
    with matplotlib.rc_context(_rc()):
        names = list(agents)  # the summary's agent order, as in the tables
        ncols = min(MAX_PANELS_PER_LINE, len(scopes))
        lines = -(-len(scopes) // ncols)
        label_width = 2.0  # inches: LABEL_WIDTH characters of BASE_SIZE text
        panel_width = min(4.6, (FIGURE_1_MAX_WIDTH - label_width) / ncols)
        # inches per agent: two bars tall enough for their values, or the label's lines
        row_height = max(0.62, LINE_HEIGHT * _label_lines(names) + 0.1)
        fig = figure(figsize=(label_width + panel_width * ncols, lines * (row_height * len(names) + 1.0) + 0.45),
                     layout="constrained")  # fmt: skip
        grid = fig.subplots(lines, ncols, sharey=True, squeeze=False)
        for index, scope in enumerate(scopes):
            line, column = divmod(index, ncols)
            ax = grid[line][column]
            for y, agent in enumerate(names):
                if y % 2:  # a faint band behind every other row: a row is read across the panels
                    ax.axhspan(y - 0.5, y + 0.5, color=BAND_COLOUR, zorder=0, linewidth=0)
                m = agents[agent].scope(scope) or ScopeMetrics()
                for rate, offset, colour in (("clean", -BAR_OFFSET, CLEAN_COLOUR),
                                             ("residual", BAR_OFFSET, RESIDUAL_COLOUR)):  # fmt: skip
                    value = m.clean if rate == "clean" else m.residual
                    if value is None:  # no qualifying run: say so rather than draw a zero bar
                        ax.text(1.5, y + offset, "no run", va="center", color=MUTED_COLOUR, fontsize=VALUE_SIZE)
                        continue
                    # the interval (summary.json's intervals) as an error bar
                    bound = m.interval(rate)
                    bars = ax.barh(y + offset, value, height=BAR_HEIGHT, color=colour, xerr=_xerr(value, bound),
                                   error_kw={"ecolor": TEXT_COLOUR, "elinewidth": 1.0, "capsize": 2.5})
                    bars[0].set_gid(f"figure-1-bar-{index}-{y}-{rate}")
                    if bars.errorbar is not None:
                        for part in bars.errorbar.lines[2]:
                            part.set_gid(f"figure-1-interval-{index}-{y}-{rate}")
                    _value_label(ax, value, y + offset, bound[1] if bound is not None else None)
            ax.set_xlim(0, 100)
            ax.set_ylim(len(names) - 0.5, -0.5)  # first agent on top
            ax.set_yticks(range(len(names)), [_label(n) for n in names])
            ax.tick_params(axis="y", length=0)
            ax.set_xlabel("success (%)")
            ax.set_title(scope, fontsize=TITLE_SIZE)
            ax.grid(axis="x", color="#eaeef2")
            ax.set_axisbelow(True)
            if column == 0:
                suffix = "" if line == 0 else f"-{line}"
                for y, tick in enumerate(ax.get_yticklabels()):
                    tick.set_gid(f"figure-1-agent-{y}{suffix}")
        for index in range(len(scopes), lines * ncols):  # an incomplete last line of panels
            grid[-1][index % ncols].set_visible(False)
        # legend entries drawn for their own sake: the first agent may have no bar to borrow one from
        keys = [Patch(color=CLEAN_COLOUR, label="Ref. Clean"), Patch(color=RESIDUAL_COLOUR, label="Residual")]
        fig.legend(handles=keys, loc="outside lower center", ncols=2, frameon=False)
        return _svg(fig)


def chart_conditional(summary: Summary) -> str | None:
    """CondFail per agent (the paper's Figure 2): per agent (all tracks pooled, the ``overall``
    block), a stacked bar of its Residual Starts on the tasks it solves from Clean Start: failed
    (= CondFail) and solved, with the tasks and states behind them; each agent's label (its
    whole name, wrapped) is the group ``figure-2-agent-<i>``.
    None when no agent has a CondFail."""
    overall = {agent: block.overall or ScopeMetrics() for agent, block in summary.agents.items()}
    if not any(m.cond_fail is not None for m in overall.values()):
        return None
    import matplotlib

    figure = _figure_class()
    with matplotlib.rc_context(_rc()):
        names = list(overall)  # the summary's agent order, as in the tables
        row_height = max(0.55, LINE_HEIGHT * _label_lines(names) + 0.1)
        fig = figure(figsize=(6.4, row_height * len(names) + 1.6), layout="constrained")
        ax = fig.subplots()
        labelled = False  # label the first drawn bar only, so the legend has one entry each
        for y, agent in enumerate(names):
            m = overall[agent]
            fail = m.cond_fail
            if fail is None:
                ax.text(1, y, "solves no task from Clean Start", va="center", fontsize=VALUE_SIZE, color=MUTED_COLOUR)
                continue
            solved = 100.0 - fail  # the rest of the bar: the shares add up to 100 by definition
            ax.barh(y, fail, color=FAIL_COLOUR, label=None if labelled else "Residual fails")
            ax.barh(y, solved, left=fail, color=SUCCESS_COLOUR, label=None if labelled else "Residual succeeds")
            labelled = True
            if fail >= 8:
                ax.text(fail / 2, y, f"{fail:.1f}", ha="center", va="center", color="white", fontsize=VALUE_SIZE)
            if solved >= 8:
                ax.text(fail + solved / 2, y, f"{solved:.1f}", ha="center", va="center", color="white", fontsize=VALUE_SIZE)
            counts = f"{m.cond_fail_tasks} tasks, {m.cond_fail_states} states"
            ax.text(101, y, counts, va="center", fontsize=VALUE_SIZE, color=MUTED_COLOUR)
        ax.set_xlim(0, 100)
        ax.set_ylim(-0.7, len(names) - 0.3)
        ax.set_yticks(range(len(names)), [_label(n) for n in names])
        for y, tick in enumerate(ax.get_yticklabels()):
            tick.set_gid(f"figure-2-agent-{y}")  # one row per agent, findable in the page
        ax.invert_yaxis()
        ax.set_xlabel("Residual Starts on tasks solved from Clean Start (%)")
        if labelled:
            fig.legend(loc="outside lower center", ncols=2, frameon=False)
        return _svg(fig)

"""The charts of ``report.html``, drawn by matplotlib (Agg) as inline SVG, from the summary dict.

matplotlib is the optional extra ``report`` (``pip install 'swe-residual[report]'``): it is
imported only when a chart is drawn, and without it :func:`missing_dependency` says so in one
line and the page keeps its tables. Every number drawn is read from the summary; nothing is
computed here from run records.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["chart_clean_vs_residual", "chart_conditional", "missing_dependency"]

# Colour-blind-safe pair (Okabe-Ito blue and vermillion) for Clean vs Residual / success vs fail.
CLEAN_COLOUR = "#0072B2"
RESIDUAL_COLOUR = "#D55E00"
SUCCESS_COLOUR = "#009E73"
FAIL_COLOUR = "#D55E00"
INSTALL_HINT = "pip install 'swe-residual[report]'"


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
        "svg.fonttype": "none",  # text stays text: smaller, selectable, no embedded glyphs
        "svg.hashsalt": "swe-residual",  # stable element ids: the same data gives the same file
        "font.size": 10,
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


def _label(name: str, width: int = 26) -> str:
    # Keep the end: agent specs differ at the end (module:pkg.mod:Class, cmd:... --model X).
    return name if len(name) <= width else "..." + name[-(width - 3) :]


def _metrics(agent_block: Mapping[str, Any], scope: str) -> Mapping[str, Any]:
    if scope == "overall":
        return agent_block.get("overall") or {}
    return agent_block.get("tracks", {}).get(scope) or {}


def chart_clean_vs_residual(summary: Mapping[str, Any], scopes: Sequence[str]) -> str | None:
    """Figure 1 (right): per agent, the Clean success (circle) and the Residual success
    (diamond), joined by a line whose length is the Gap; one panel per scope."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    if not agents or not scopes:
        return None
    import matplotlib

    figure = _figure_class()
    with matplotlib.rc_context(_rc()):
        names = sorted(agents)
        fig = figure(figsize=(4.8 * len(scopes), 0.55 * len(names) + 1.6), layout="constrained")
        axes = fig.subplots(1, len(scopes), sharey=True, squeeze=False)[0]
        for ax, scope in zip(axes, scopes):
            for y, agent in enumerate(names):
                m = _metrics(agents[agent], scope)
                clean, residual = m.get("clean"), m.get("residual")
                if clean is not None and residual is not None:
                    ax.plot([clean, residual], [y, y], color="#8c959f", linewidth=2, zorder=1)
                if clean is not None:
                    ax.scatter([clean], [y], color=CLEAN_COLOUR, s=60, zorder=2, label="Clean" if y == 0 else None)
                    ax.annotate(f"{clean:.1f}", (clean, y), xytext=(0, 7), textcoords="offset points",
                                ha="center", fontsize=8, color=CLEAN_COLOUR)  # fmt: skip
                if residual is not None:
                    ax.scatter([residual], [y], color=RESIDUAL_COLOUR, marker="D", s=50, zorder=3,
                               label="Residual" if y == 0 else None)  # fmt: skip
                    ax.annotate(f"{residual:.1f}", (residual, y), xytext=(0, -13), textcoords="offset points",
                                ha="center", fontsize=8, color=RESIDUAL_COLOUR)  # fmt: skip
            ax.set_xlim(-5, 105)
            ax.set_ylim(-0.7, len(names) - 0.3)
            ax.set_yticks(range(len(names)), [_label(n) for n in names])
            ax.set_xlabel("success (%)")
            ax.set_title(scope)
            ax.grid(axis="x", color="#eaeef2")
            ax.invert_yaxis()
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
        return _svg(fig)


def chart_conditional(summary: Mapping[str, Any]) -> str | None:
    """Figure 2: per agent (all tracks pooled, the ``overall`` block), a stacked bar of its
    Residual Starts on the tasks it solves from Clean Start: failed (= CondFail) and solved,
    with the tasks and states behind them. None when no agent has a CondFail."""
    agents: Mapping[str, Any] = summary.get("agents", {})
    overall = {agent: block.get("overall") or {} for agent, block in agents.items()}
    if not any(m.get("cond_fail") is not None for m in overall.values()):
        return None
    import matplotlib

    figure = _figure_class()
    with matplotlib.rc_context(_rc()):
        names = sorted(overall)
        fig = figure(figsize=(5.0, 0.55 * len(names) + 1.6), layout="constrained")
        ax = fig.subplots()
        labelled = False  # label the first drawn bar only, so the legend has one entry each
        for y, agent in enumerate(names):
            m = overall[agent]
            fail = m.get("cond_fail")
            if fail is None:
                ax.text(1, y, "solves no task from Clean Start", va="center", fontsize=8, color="#57606a")
                continue
            solved = 100.0 - fail  # the rest of the bar: the shares add up to 100 by definition
            ax.barh(y, fail, color=FAIL_COLOUR, label=None if labelled else "Residual fails")
            ax.barh(y, solved, left=fail, color=SUCCESS_COLOUR, label=None if labelled else "Residual succeeds")
            labelled = True
            if fail >= 8:
                ax.text(fail / 2, y, f"{fail:.1f}", ha="center", va="center", color="white", fontsize=8)
            if solved >= 8:
                ax.text(fail + solved / 2, y, f"{solved:.1f}", ha="center", va="center", color="white", fontsize=8)
            counts = f"{m.get('cond_fail_tasks', 0)} tasks, {m.get('cond_fail_states', 0)} states"
            ax.text(101, y, counts, va="center", fontsize=8, color="#57606a")
        ax.set_xlim(0, 100)
        ax.set_ylim(-0.7, len(names) - 0.3)
        ax.set_yticks(range(len(names)), [_label(n) for n in names])
        ax.invert_yaxis()
        ax.set_xlabel("Residual Starts on tasks solved from Clean Start (%)")
        if labelled:
            fig.legend(loc="outside lower center", ncols=2, frameon=False)
        return _svg(fig)

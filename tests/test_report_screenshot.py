"""report.html's charts as a reader sees them: headless chromium at a 1400 px wide window.

One real run of the suite with five agents (repo track, local backend), merged by
`swe-residual report` with machine-track records for the same agents, so Figure 1 has its
widest layout (three panels: machine, repo, overall). The page is screenshotted as it is, and a
copy of it carrying a small measuring script is loaded to read back, from the DOM chromium
builds, each chart's rendered box, the page's scroll width, the agent rows and the smallest
text size on screen. The measuring is itself tested: a copy whose chart is shrunk, and one
whose chart is widened, must be caught.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread
from recordfactory import make_record
from test_report_html import (
    ACCEPTS,
    FINISHES,
    console_messages,
    png_size,
    run_chromium,
    run_suite,
    suite_checkout,
)

from swe_residual.cli import main as cli_main

WINDOW = (1400, 2400)  # wide enough for the page's column, tall enough to hold both figures
MIN_TEXT_PX = 10.0
AGENTS = ("oracle", "noop", ACCEPTS, FINISHES, "module:scripted_agents:DiscardsInherited")
CLEAN_RGB = (0x00, 0x72, 0xB2)  # report_charts.CLEAN_COLOUR
RESIDUAL_RGB = (0xD5, 0x5E, 0x00)  # report_charts.RESIDUAL_COLOUR

# Runs after load and appends its findings to the page as JSON. A text's size on screen is its
# font size (in SVG user units) times the SVG's scale: computed both from the text's own
# screen matrix (which also covers any transform on it) and as rendered width / viewBox width.
MEASURE = """
<script>
addEventListener("load", () => {
  const out = {innerWidth: innerWidth, scrollWidth: document.documentElement.scrollWidth, figures: {}};
  for (const id of ["figure-1", "figure-2"]) {
    const figure = document.getElementById(id);
    if (!figure) continue;
    const svg = figure.querySelector("svg");
    const box = svg.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    const texts = [];
    for (const t of svg.querySelectorAll("text, tspan")) {
      if (!t.textContent.trim()) continue;
      const size = parseFloat(getComputedStyle(t).fontSize);
      const m = t.getScreenCTM();
      texts.push({text: t.textContent.trim(), ctm_px: size * Math.hypot(m.a, m.b), scaled_px: size * scale});
    }
    const centre = (g) => { const r = g.getBoundingClientRect(); return (r.top + r.bottom) / 2 + scrollY; };
    const labels = [...svg.querySelectorAll("g[id]")].filter((g) => new RegExp(`^${id}-agent-\\\\d+$`).test(g.id))
      .map((g) => ({id: g.id, y: centre(g)}));
    const bars = [...svg.querySelectorAll("g[id]")].filter((g) => g.id.startsWith(`${id}-bar-`))
      .map((g) => ({id: g.id, y: centre(g)}));
    const frame = figure.getBoundingClientRect();
    out.figures[id] = {
      left: box.left + scrollX, top: box.top + scrollY, width: box.width, height: box.height,
      frame_width: frame.width, frame_scroll_width: figure.scrollWidth, texts: texts, labels: labels, bars: bars,
    };
  }
  const pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
});
</script>
"""


def measure(tmp: Path, page: Path, extra_css: str = "") -> dict[str, Any]:
    """Load a copy of ``page`` (plus ``extra_css``) with the measuring script; its findings."""
    copy = page.with_name(f"measured-{len(list(page.parent.glob('measured-*')))}.html")
    text = page.read_text().replace("</body>", MEASURE + "</body>")
    copy.write_text(text.replace("</head>", f"<style>{extra_css}</style></head>") if extra_css else text)
    result = run_chromium(tmp, copy, "--dump-dom", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert console_messages(result.stderr) == [], console_messages(result.stderr)
    found = re.search(r'<pre id="measure">(.*?)</pre>', result.stdout, flags=re.DOTALL)
    assert found, "the measuring script wrote nothing: " + result.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def rows(labels: list[dict[str, Any]], bars: list[dict[str, Any]]) -> list[str]:
    """What breaks one-row-per-agent: labels out of order, or a bar outside its agent's row
    (the band half-way to the neighbouring labels), or Clean not above Residual."""
    found: list[str] = []
    ys = [label["y"] for label in sorted(labels, key=lambda label: int(label["id"].rsplit("-", 1)[1]))]
    if ys != sorted(ys) or len(set(ys)) != len(ys):
        found.append(f"agent labels are not one above the other: {ys}")
        return found
    pitch = min((b - a for a, b in zip(ys, ys[1:])), default=float("inf"))
    by_row: dict[tuple[str, int], dict[str, float]] = {}
    for bar in bars:  # figure-1-bar-<panel>-<row>-<rate>
        _, _, panel, row, rate = bar["id"].rsplit("-", 4)
        by_row.setdefault((panel, int(row)), {})[rate] = bar["y"]
        if abs(bar["y"] - ys[int(row)]) >= pitch / 2:
            found.append(f"{bar['id']} at y={bar['y']:.1f} is outside the row of its agent (y={ys[int(row)]:.1f})")
    found += [f"panel {p} row {r}: Clean is not above Residual" for (p, r), v in by_row.items()
              if {"clean", "residual"} <= v.keys() and not v["clean"] < v["residual"]]  # fmt: skip
    return found


def problems(measured: dict[str, Any], n_agents: int) -> list[str]:
    """Every way the charts break the page's rules at this window width."""
    found = []
    if measured["scrollWidth"] > WINDOW[0]:
        found.append(f"the page scrolls horizontally: scrollWidth {measured['scrollWidth']}")
    for id, fig in measured["figures"].items():
        if fig["width"] > WINDOW[0] or fig["width"] > fig["frame_width"] + 0.5:
            found.append(f"{id} is {fig['width']:.0f} px wide, its frame {fig['frame_width']:.0f} px")
        sizes = [min(t["ctm_px"], t["scaled_px"]) for t in fig["texts"]]
        small = [t["text"] for t in fig["texts"] if min(t["ctm_px"], t["scaled_px"]) < MIN_TEXT_PX]
        if not sizes or small:
            found.append(f"{id}: text under {MIN_TEXT_PX} px ({min(sizes, default=0):.1f} px): {small[:5]}")
        if len(fig["labels"]) != n_agents:
            found.append(f"{id}: {len(fig['labels'])} agent rows for {n_agents} agents")
        found += [f"{id}: {p}" for p in rows(fig["labels"], fig["bars"])]
    return found


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.html of a real five-agent run merged with the same agents' machine-track records."""
    root = tmp_path_factory.mktemp("agents")
    run = run_suite(root, suite_checkout(root), "five-agents", AGENTS)
    machine = root / "machine" / "results.jsonl"
    machine.parent.mkdir()
    records = []
    for n, agent in enumerate(AGENTS):  # a different success per agent, so bars differ in length
        records += [make_record("gamma", None, "success" if n % 2 == 0 else "failure", agent=agent, track="machine"),
                    make_record("gamma", "s1", "success" if n % 3 == 0 else "failure", agent=agent, track="machine")]
    machine.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli_main(["report", str(run), str(machine), "--out", str(root / "merged")]) == 0
    return root / "merged" / "report.html"


def test_figures_are_readable_at_1400px(report: Path, tmp_path: Path) -> None:
    measured = measure(tmp_path, report)
    assert measured["innerWidth"] == WINDOW[0]
    assert set(measured["figures"]) == {"figure-1", "figure-2"}
    assert problems(measured, len(AGENTS)) == []
    fig1 = measured["figures"]["figure-1"]
    # five agents in three panels: two bars per agent per panel, one row per agent across them
    assert len(fig1["bars"]) == 2 * 3 * len(AGENTS)
    smallest = min(min(t["ctm_px"], t["scaled_px"]) for t in fig1["texts"])
    print(f"figure 1: {fig1['width']:.0f} x {fig1['height']:.0f} px, {len(fig1['labels'])} rows, "
          f"smallest text {smallest:.1f} px; page scrollWidth {measured['scrollWidth']}")  # fmt: skip

    # the page as it is (no script), as people see it: Figure 1's region holds both bar colours
    shot = tmp_path / "agents.png"
    drawn = run_chromium(tmp_path, report, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    assert drawn.returncode == 0 and shot.is_file(), drawn.stderr[-2000:]
    assert console_messages(drawn.stderr) == []
    assert png_size(shot) == WINDOW
    top, left = round(fig1["top"]), round(fig1["left"])
    assert top + fig1["height"] <= WINDOW[1], "Figure 1 is below the screenshot"
    region = imread(shot)[top : top + round(fig1["height"]), left : left + round(fig1["width"]), :3]
    pixels = (region * 255).round().astype(int).reshape(-1, 3)
    drawn_share = (pixels.min(axis=1) < 200).mean()
    assert drawn_share > 0.05, f"Figure 1's region is nearly blank ({drawn_share:.1%} drawn)"
    for name, rgb in (("Clean", CLEAN_RGB), ("Residual", RESIDUAL_RGB)):
        assert (abs(pixels - rgb).max(axis=1) <= 8).sum() > 2000, f"no {name} bars in Figure 1's region"


def test_measurement_catches_shrunk_and_overwide_charts(report: Path, tmp_path: Path) -> None:
    """The checks above can fail: Figure 1 shrunk to 400 px has text under 10 px; forced to
    1800 px, it no longer fits its frame."""
    shrunk = measure(tmp_path, report, "#figure-1 svg { width: 400px; height: auto; }")
    found = problems(shrunk, len(AGENTS))
    assert any(p.startswith("figure-1: text under") for p in found), found
    assert not any(p.startswith("figure-2") for p in found), found
    assert min(min(t["ctm_px"], t["scaled_px"]) for t in shrunk["figures"]["figure-1"]["texts"]) < MIN_TEXT_PX

    wide = measure(tmp_path, report, "#figure-1 svg { width: 1800px; height: auto; }")
    found = problems(wide, len(AGENTS))
    assert any(p.startswith("figure-1 is 1800 px wide") for p in found), found

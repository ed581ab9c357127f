"""report.html as a reader sees it: headless chromium at 800 and 1400 px wide windows.

One real run of the suite with five agents (repo track, local backend), merged by
`swe-residual report` with machine-track records for the same agents, so Figure 1 has its
widest layout (three panels: machine, repo, overall). The page is screenshotted as it is, and a
copy of it carrying a small measuring script is loaded to read back, from the DOM chromium
builds, each chart's rendered box, the page's scroll width, the agent rows and the smallest
text size on screen; every element that reaches past the window outside a box that scrolls by
itself, every text cut short (clipped or ellipsed); the matrix's cells and where the contents'
and the page's links lead. The measuring is itself tested: a copy whose chart is shrunk, one
whose chart is widened, and one whose tables may not scroll and whose agent names are cut,
must be caught.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from recordfactory import make_record
from test_report_html import (
    ACCEPTS,
    FINISHES,
    broken_links,
    console_messages,
    png_size,
    run_chromium,
    run_suite,
    suite_checkout,
)

from swe_residual.cli.main import main as cli_main

pytestmark = pytest.mark.slow

WINDOW = (1400, 3000)  # wide enough for the page's column, tall enough to hold both figures
NARROW = 800  # a laptop's half screen: the page must still read without scrolling sideways
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
  // Layout: every element (closed <details> opened, so their content counts) whose box reaches
  // past the window while no ancestor scrolls it by itself, and every text cut short.
  for (const d of document.querySelectorAll("details")) d.open = true;
  const width = document.documentElement.clientWidth;
  const scrolled = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") return true;
    }
    return false;
  };
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.getAttribute("class") ? "." + el.getAttribute("class").trim().split(/\\s+/).join(".") : "");
  out.clientWidth = width;
  out.height = document.documentElement.scrollHeight;
  out.offscreen = [];
  out.clipped = [];
  out.widest = 0;
  for (const el of document.body.querySelectorAll("*")) {
    if (el.id === "measure") continue;
    const r = el.getBoundingClientRect();
    if (!r.width && !r.height) continue;
    if (!scrolled(el)) {
      out.widest = Math.max(out.widest, r.right);
      if (r.right > width + 0.5 || r.left < -0.5)
        out.offscreen.push(`${describe(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} px`);
    }
    const s = getComputedStyle(el);
    const cuts = ["hidden", "clip"].includes(s.overflowX) || s.textOverflow === "ellipsis";
    if (cuts && el.scrollWidth > el.clientWidth + 1)
      out.clipped.push(`${describe(el)}: ${el.textContent.trim().slice(0, 80)}`);
  }
  out.chart_labels = [...document.querySelectorAll("svg g[id]")].filter((g) => /^figure-\\d-agent-\\d+$/.test(g.id))
    .map((g) => ({id: g.id, text: [...g.querySelectorAll("text")].map((x) => x.textContent).join(" ")}));
  out.matrix = [...document.querySelectorAll("table.matrix td.cell")].map((td) => ({
    outcome: td.dataset.outcome, css: td.className, agent: td.dataset.agent, track: td.dataset.track,
    task: td.dataset.task, state: td.dataset.state, href: td.querySelector("a")?.getAttribute("href") || null,
    text: td.textContent.trim()}));
  out.matrix_agents = [...document.querySelectorAll("table.matrix th.agent")].map((th) => th.textContent);
  const target = (a) => document.getElementById(decodeURIComponent(a.getAttribute("href").slice(1)));
  out.contents = [...document.querySelectorAll("nav#contents a")].map((a) => ({
    href: a.getAttribute("href"), found: a.getAttribute("href").startsWith("#") && !!target(a)}));
  out.anchors_missing = [...document.querySelectorAll('a[href^="#"]')].filter((a) => !target(a))
    .map((a) => a.getAttribute("href"));
  // Where people look first, in this window (its viewport's coordinates): the overall group of
  // the headline, and the matrix's task column before and after its box is scrolled to its end
  // (left there, so a screenshot shows it).
  const view = (el) => {
    const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: el.textContent.trim().slice(0, 40)};
  };
  out.innerHeight = innerHeight;
  out.location = location.pathname.split("/").pop() + location.hash;
  out.overall = [...document.querySelectorAll('table.grouped tr[data-track="overall"] > *')].map(view);
  const tasks = () => [...document.querySelectorAll("table.matrix th.task")].map(view);
  out.matrix_tasks = tasks();
  const box = document.querySelector("table.matrix")?.closest(".scroll");
  if (box) {
    out.matrix_box = {client: box.clientWidth, scroll: box.scrollWidth};
    box.scrollLeft = box.scrollWidth;
    out.matrix_scrolled = box.scrollLeft;
    out.matrix_tasks_scrolled = tasks();
    out.matrix_last_scrolled = [...document.querySelectorAll("table.matrix tbody tr > td.cell:last-child")].map(view);
  }
  const pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
  if (window.parent !== window) parent.postMessage(pre.textContent, "*");  // in a frame of a given width
});
</script>
"""


def measured_copy(page: Path, extra_css: str = "") -> Path:
    """A copy of ``page`` (plus ``extra_css``) with the measuring script. The copy sits beside
    the page, so its links lead where the page's do."""
    copy = page.with_name(f"measured-{len(list(page.parent.glob('measured-*')))}.html")
    text = page.read_text().replace("</body>", MEASURE + "</body>")
    copy.write_text(text.replace("</head>", f"<style>{extra_css}</style></head>") if extra_css else text)
    return copy


def measure(tmp: Path, page: Path, extra_css: str = "", width: int = WINDOW[0]) -> dict[str, Any]:
    """Load a copy of ``page`` (plus ``extra_css``) with the measuring script in a window
    ``width`` px wide; its findings."""
    copy = measured_copy(page, extra_css)
    result = run_chromium(tmp, copy, "--dump-dom", f"--window-size={width},{WINDOW[1]}")
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
    if measured["scrollWidth"] > measured["innerWidth"]:
        found.append(f"the page scrolls horizontally: scrollWidth {measured['scrollWidth']}")
    for id, fig in measured["figures"].items():
        if fig["width"] > measured["innerWidth"] or fig["width"] > fig["frame_width"] + 0.5:
            found.append(f"{id} is {fig['width']:.0f} px wide, its frame {fig['frame_width']:.0f} px")
        sizes = [min(t["ctm_px"], t["scaled_px"]) for t in fig["texts"]]
        small = [t["text"] for t in fig["texts"] if min(t["ctm_px"], t["scaled_px"]) < MIN_TEXT_PX]
        if not sizes or small:
            found.append(f"{id}: text under {MIN_TEXT_PX} px ({min(sizes, default=0):.1f} px): {small[:5]}")
        if len(fig["labels"]) != n_agents:
            found.append(f"{id}: {len(fig['labels'])} agent rows for {n_agents} agents")
        found += [f"{id}: {p}" for p in rows(fig["labels"], fig["bars"])]
    return found


def layout_problems(measured: dict[str, Any], agents: Sequence[str] = AGENTS) -> list[str]:
    """What makes the page unreadable at this width, beyond the charts: an element past the
    window (outside a box that scrolls by itself), a text cut short, a chart label that is not
    a whole agent name."""
    found = [f"past the {measured['clientWidth']} px window: {o}" for o in measured["offscreen"]]
    found += [f"cut short: {c}" for c in measured["clipped"]]
    found += [f"{label['id']} is not a whole agent name: {label['text']!r}" for label in measured["chart_labels"]
              if label["text"].replace(" ", "") not in {a.replace(" ", "") for a in agents}]
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


@pytest.fixture(scope="module")
def measured(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    """The report measured once at each window width the tests read."""
    tmp = tmp_path_factory.mktemp("measure")
    return {width: measure(tmp, report, width=width) for width in (NARROW, WINDOW[0])}


def expected_cells(report: Path) -> dict[tuple[str, str, str, str], str]:
    """(agent, track, task, state or "") -> outcome of every item behind the report."""
    root = report.parent.parent
    records = []
    for results in (root / "out" / "five-agents" / "results.jsonl", root / "machine" / "results.jsonl"):
        records += [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return {(r["agent"], r["track"], r["task"], r["state"] or ""): r["outcome"] for r in records}


@pytest.mark.parametrize("width", [NARROW, WINDOW[0]])
def test_page_reads_at_800_and_1400px(report: Path, measured: dict[int, dict[str, Any]], width: int) -> None:
    """Nothing past the window outside a box that scrolls by itself, no text cut, every chart label
    a whole agent name, chart text at least 10 px; the contents and every in-page link lead to an
    element; the matrix has one cell per agent and start, of its item's outcome, linking to the
    item's page."""
    m = measured[width]
    assert m["innerWidth"] == width
    assert layout_problems(m) == []
    assert problems(m, len(AGENTS)) == []
    assert len(m["chart_labels"]) == 2 * len(AGENTS)
    assert m["widest"] <= m["clientWidth"]
    assert [c["found"] for c in m["contents"]] == [True] * len(m["contents"]) and len(m["contents"]) >= 7
    assert "#matrix" in {c["href"] for c in m["contents"]}
    assert m["anchors_missing"] == []
    expected = expected_cells(report)
    cells = {(c["agent"], c["track"], c["task"], c["state"]): c for c in m["matrix"]}
    assert len(m["matrix"]) == len(cells) == len(expected) == len(AGENTS) * 7  # alpha 2, beta 3, gamma 2 starts
    assert {k: c["outcome"] for k, c in cells.items()} == expected
    assert all(c["css"] == f"cell o-{c['outcome']}" and c["text"].split()[1] in ("pass", "fail") for c in cells.values())
    assert sorted(m["matrix_agents"]) == sorted(AGENTS)  # whole names in the header
    for c in cells.values():
        assert c["href"] and (report.parent / unquote(c["href"])).is_file(), c
    print(f"{width} px: page {m['height']} px tall, widest element outside a scroll box ends at "
          f"{m['widest']:.0f} px of {m['clientWidth']}")


def test_an_item_page_reads_at_800px(report: Path, tmp_path: Path) -> None:
    """The page of an item with steps, a diff and a verifier log, every part opened: nothing past
    the window, nothing cut, every link leads somewhere."""
    agent_dir = next((report.parent / "items").glob("module_scripted_agents_FinishesInheritedOnly*"))
    page = agent_dir / "repo" / "beta" / "residual-patcher-1.html"
    m = measure(tmp_path, page, width=NARROW)
    assert layout_problems(m) == [] and m["anchors_missing"] == []
    assert broken_links(page) == []
    text = page.read_text()
    assert "<details><summary>0: command git status" in text and "test-stdout.txt</a>" in text


def test_figures_are_readable_at_1400px(report: Path, measured: dict[int, dict[str, Any]], tmp_path: Path) -> None:
    measured = measured[WINDOW[0]]
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
    from matplotlib.image import imread  # the report extra: imported here so `-m unit` collects without it

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

    wide = measure(tmp_path, report, "#figure-1 svg { width: 1800px; max-width: none; height: auto; }")
    found = problems(wide, len(AGENTS))
    assert any(p.startswith("figure-1 is 1800 px wide") for p in found), found


def test_layout_measurement_catches_overflow_and_cut_names(report: Path, tmp_path: Path) -> None:
    """The layout checks can fail: at 800 px, tables that may not scroll in their own box push
    past the window, and agent names in the matrix's header cut with an ellipsis are found."""
    css = (".scroll { overflow-x: visible !important; } table.matrix th.agent span { writing-mode: horizontal-tb; "
           "transform: none; display: block; max-width: 4em; overflow: hidden; text-overflow: ellipsis; "
           "white-space: nowrap; }")
    found = layout_problems(measure(tmp_path, report, css, width=NARROW))
    assert any(p.startswith("past the") and "table" in p for p in found), found
    assert any(p.startswith("cut short: span") and "scripted" in p for p in found), found

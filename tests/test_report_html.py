"""report.html from really running the suite, checked in a real headless browser (chromium).

Two agents with opposite acceptance behaviour run as two shards (separate pytest runs, as CI
shards would); each run writes its own report.html, and `swe-residual report` merges the
shards into one. Chromium then renders the merged page: it must draw (a screenshot is
written, and copied to reports/screenshots/report.png for people to look at), its charts must
be in the DOM, it must log no console message and fetch nothing from the network, and every
relative link (trajectories, diffs) must point at a file that exists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Sequence
from functools import partial
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from recordfactory import make_record
from taskfactory import make_task

from conftest import REPO_ROOT, TESTS_DIR
from swe_residual.cli import main as cli_main
from swe_residual.report_html import render_html
from swe_residual.summary import build_summary

INSTALL = "apt-get update && apt-get install -y chromium"
SCREENSHOT_COPY = REPO_ROOT / "reports" / "screenshots" / "report.png"
ACCEPTS = "module:scripted_agents:AcceptsInherited"
FINISHES = "module:scripted_agents:FinishesInheritedOnly"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(f"chromium is needed to test report.html in a real browser; install it with: {INSTALL}")


def run_chromium(tmp: Path, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"chromium-profile-{len(list(tmp.glob('chromium-profile-*')))}"  # no shared state
    command = [
        chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
        f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, page.as_uri(),
    ]  # fmt: skip
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=180)


def console_messages(stderr: str) -> list[str]:
    """Every page console message chromium logged (errors, uncaught exceptions, failed loads)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.urls += [v for k, v in attrs if k in ("href", "src") and v]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def suite_checkout(root: Path) -> dict[str, str]:
    """Lay out the evaluation suite and a small dataset in ``root`` (task alpha: a Clean
    Start only; beta: two Residual States, one with a hostile file name); return the
    environment to run it with."""
    shutil.copy(REPO_ROOT / "conftest.py", root / "conftest.py")
    (root / "residual_tests").mkdir()
    shutil.copy(REPO_ROOT / "residual_tests" / "test_starts.py", root / "residual_tests")
    data = root / "data"
    make_task(data, "alpha")
    make_task(data, "beta", states={
        "drafter-1": {"calc.py": "def add(a, b):\n    return a + b\n\ndef clamp(v, lo, hi):\n    return min(v, hi)\n"},
        "patcher-1": {"calc.py": "def add(a, b):\n    return a + b\n\ndef clamp(v, lo, hi):\n    return max(v, lo)\n",
                      "notes <draft>.md": "# <script>alert('x')</script> & more\n"},
    })  # fmt: skip
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)]),
        "SWE_RESIDUAL_CACHE": str(root / "cache"),
    }


def run_suite(root: Path, env: dict[str, str], run_id: str, agents: Sequence[str]) -> Path:
    """One real run of the suite (local backend) with ``agents``; return its run directory."""
    result = subprocess.run(
        ["python", "-m", "pytest", "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out",
         f"--run-id={run_id}", *(f"--agent={a}" for a in agents), "-p", "no:cacheprovider", "-q"],
        check=False, cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "report.html" in result.stdout, result.stdout + result.stderr
    return root / "out" / run_id


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run the suite twice (one agent per shard) on a small dataset; return the results dir."""
    root = tmp_path_factory.mktemp("report")
    env = suite_checkout(root)
    for shard, agent in (("shard-1", ACCEPTS), ("shard-2", FINISHES)):
        run_suite(root, env, shard, [agent])
    return root / "out"


def test_each_run_writes_its_report(shards: Path) -> None:
    for shard in ("shard-1", "shard-2"):
        page = (shards / shard / "report.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and page.count("<svg") >= 1
        assert (shards / shard / "diffs").is_dir()


def test_merged_report_renders_in_chromium(shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    merged = tmp_path / "merged"
    assert cli_main(["report", str(shards / "shard-1"), str(shards / "shard-2" / "results.jsonl"), "--out", str(merged)]) == 0
    printed = capsys.readouterr().out
    # the two agents' rankings reverse: accepts-inherited solves clean starts only
    # (agent specs are long: the terminal line names each once, clipped from the left)
    assert "ranking reversed: ...nts:AcceptsInherited vs ...inishesInheritedOnly: clean +100.0, residual -100.0" in printed
    page_path = merged / "report.html"
    page = page_path.read_text()

    # self-contained: no script, no stylesheet or font to fetch, no absolute URL anywhere
    links = Links()
    links.feed(page)
    assert not {"script", "link", "iframe", "img"} & links.tags
    assert not [u for u in links.urls if re.match(r"^([a-z]+:)?//", u)], links.urls
    assert "@import" not in page and not re.findall(r"url\((?!#)", page)  # url(#clip) is in-page
    # untrusted text (file names, agent specs) is escaped, never markup
    assert "<script>alert" not in page
    # every relative link resolves: 5 items per agent, each with its trajectory; diffs where
    # the final state differs from the base
    trajectories = [u for u in links.urls if "trajectories/" in u]
    diffs = [u for u in links.urls if u.startswith("diffs/")]
    assert len(trajectories) == 10 and len(diffs) >= 6
    for url in links.urls:
        assert (merged / unquote(url)).is_file(), url
    # trajectories stay where the shards wrote them, linked relative to the merged report
    assert all(u.startswith("../") for u in trajectories)

    # the DOM chromium builds: both charts present as SVG, every section there
    dom = run_chromium(tmp_path, page_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") >= 2, "charts missing from the DOM"
    for anchor in ('id="figure-1"', 'id="figure-2"', "Success from Residual and matched Clean starts, per agent",
                   "Tasks and states behind each figure", "Ranks from Clean and Residual starts: repo",
                   "Reversed pairs", "Residual States no agent solved", "Acceptance bias: how each agent treats",
                   "Success by predecessor agent", "Infrastructure", "Attempts and median seconds per item",
                   "Items: outcome, trajectory and final diff"):  # fmt: skip
        assert anchor in dom.stdout, anchor
    # a table that is one of the paper's says which, in a note right under its heading
    for anchor, paper in (("success", "Table 3"), ("acceptance-bias", "Table 4 (Appendix D)"),
                          ("by-predecessor", "Table 8")):  # fmt: skip
        assert re.search(rf'<h2 id="{anchor}">[^<]*</h2><p class="paper-ref">the paper\'s {re.escape(paper)}</p>',
                         page), anchor  # fmt: skip
    assert "<h2>Table" not in page  # tables are named by what they show, not numbered
    assert console_messages(dom.stderr) == []

    # the screenshot people look at
    shot = tmp_path / "report.png"
    drawn = run_chromium(tmp_path, page_path, f"--screenshot={shot}", "--window-size=1280,2000")
    assert drawn.returncode == 0 and shot.is_file(), drawn.stderr[-2000:]
    assert png_size(shot) == (1280, 2000)
    assert shot.stat().st_size > 50_000, "the screenshot is nearly blank"
    assert console_messages(drawn.stderr) == []
    SCREENSHOT_COPY.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SCREENSHOT_COPY)


def test_console_error_detection_works(tmp_path: Path) -> None:
    """The console check above can fail: a page with a broken script and a missing image is caught."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><img src="missing.png"><script>undefinedFunction();</script></body></html>')
    result = run_chromium(tmp_path, page, "--dump-dom")
    messages = console_messages(result.stderr)
    assert any("undefinedFunction" in m for m in messages), result.stderr[-2000:]


def test_render_html_escapes_and_handles_no_records(tmp_path: Path) -> None:
    empty = render_html(build_summary([], compare=True), [], tmp_path)
    assert "<svg" not in empty and "no ranking" in empty
    record = {
        "schema": 1, "run_id": "r<1>", "agent": "cmd:echo '<b>&'", "task": "t", "track": "repo", "start": "clean",
        "state": None, "predecessor": None, "outcome": "success", "reward": 1.0, "submitted": True,
        "termination": "submitted", "tests": {"a": "passed"}, "initial_tests": None, "steps": 1,
        "final_patch": "diff --git a/x b/x\n", "trajectory": "trajectories/nowhere.json", "attempts": [],
        "durations": {},
    }  # fmt: skip
    page = render_html(build_summary([record], compare=True), [record], tmp_path)
    assert "cmd:echo &#x27;&lt;b&gt;&amp;&#x27;" in page and "<b>&'" not in page
    assert "r&lt;1&gt;" in page
    assert ">missing<" in page  # a trajectory that is not there is not linked


def _figure(page: str, figure_id: str) -> str:
    start = page.index(f'<figure id="{figure_id}">')
    return page[start : page.index("</figure>", start)]


def test_report_shows_the_figures_of_summary_json_with_duplicate_records(tmp_path: Path) -> None:
    """Records that repeat an item (same agent, track, task, start, state) count once, the last
    one winning: report.html must show exactly the figures summary.json holds, never its own."""
    agent = "dup-agent"
    rec = partial(make_record, agent=agent, trajectory=None)
    records = [
        rec("t1", None, "success"),
        rec("t1", "s1", "failure"),
        rec("t1", "s1", "failure"),  # the same item recorded twice (a results file merged twice)
        rec("t1", "s2", "success"),
        rec("t2", None, "success"),
        rec("t2", "s1", "failure"),
        rec("t2", "s1", "success"),  # a later record of the item replaces the earlier one
        rec("t3", None, "success"),
        rec("t3", "s1", "failure"),
        rec("t3", "s1", "infra_error"),  # ... also when it ends in an infra error: t3 leaves T
    ]
    results = tmp_path / "run" / "results.jsonl"
    results.parent.mkdir()
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    assert cli_main(["report", str(results), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    m = summary["agents"][agent]["tracks"]["repo"]
    # T = {t1, t2}: Res = (1/2 + 1)/2 = 75%, Clean 100%, Gap 25; C = {t1, t2}: (1/2 + 0)/2 = 25%
    # (counting t3's failed state as the records alone would gives CondFail 50, Res 50: wrong)
    assert (m["residual"], m["clean"], m["gap"], m["cond_fail"]) == (75.0, 100.0, 25.0, 25.0)
    assert (m["cond_fail_tasks"], m["cond_fail_states"]) == (2, 3)

    page = (out / "report.html").read_text()
    # the success table (the paper's Table 3): the summary's figures, cell for cell
    assert (
        f'<td title="{m["n_tasks"]} tasks, {m["n_states"]} states">{m["residual"]:.1f}</td>'
        f"<td>{m['clean']:.1f}</td><td><b>{m['gap']:.1f}</b></td><td>{m['cond_fail']:.1f}</td>"
    ) in page
    # Figure 1: Clean and Residual as in the summary
    figure_1 = _figure(page, "figure-1")
    assert f">{m['clean']:.1f}<" in figure_1 and f">{m['residual']:.1f}<" in figure_1
    # Figure 2: CondFail (the failed share), its complement, the tasks and states behind it
    overall = summary["agents"][agent]["overall"]
    figure_2 = _figure(page, "figure-2")
    assert f">{overall['cond_fail']:.1f}<" in figure_2 and f">{100 - overall['cond_fail']:.1f}<" in figure_2
    assert "2 tasks, 3 states" in figure_2
    assert ">50.0<" not in figure_2
    # the items table lists each item once (the last record), the infra table the summary's count
    assert page.count("<td class=\"l\">dup-agent</td><td class=\"l\">t1</td>") == 3
    assert f"<li>items: {summary['infra']['items']}</li>" in page and summary["infra"]["items"] == 7


def test_report_without_matplotlib_says_so_and_keeps_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # "import matplotlib" raises ImportError
    records = [make_record("t", None, "success"), make_record("t", "s", "failure")]
    page = render_html(build_summary(records, compare=True), records, tmp_path)
    assert "<svg" not in page and "Traceback" not in page
    notes = [line for line in page.splitlines() if "matplotlib" in line]
    assert notes == [
        '<p class="note" id="charts-missing">Charts are not drawn: matplotlib is not installed '
        "(pip install &#x27;swe-residual[report]&#x27;).</p>"
    ]
    assert 'id="success"' in page and "<td>100.0</td><td><b>100.0</b></td><td>100.0</td>" in page

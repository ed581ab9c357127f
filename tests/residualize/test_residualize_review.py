"""Stage III: packets a person edits, decisions read back, disagreements, undecided packets block."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from reviewwork import make_review_work

from swe_residual.residualize import review


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_review_work(tmp_path_factory.mktemp("review"), ("alpha", "beta", "gamma"))


@pytest.fixture()
def work(generated: Path, tmp_path: Path) -> Path:
    """A private copy of the generated work directory: each test reviews from scratch."""
    shutil.copytree(generated, tmp_path / "work")
    return tmp_path / "work"


def _decide(path: Path, values: dict[str, dict[str, str]]) -> None:
    path.write_text(review.set_decisions(path.read_text(), values))


def test_packet_contents_and_summarizer(work: Path) -> None:
    written = review.write_packets(work, summarizer="python3 -c \"import json,sys; d=json.load(sys.stdin); "
                                                 "print('SUMMARY:', len(d['steps']), 'steps')\"", progress=lambda _: None)
    assert len(written) == 3
    text = (work / "review" / "calc" / "alpha-a1.md").read_text()
    for part in ("## Decisions", "reviewer_1: task_directed = ?", "reviewer_2: consistent = ?", "## Request",
                 "Make it clamp", "## Changes from the clean state", "+    return max(low, value)  # alpha",
                 "## Trajectory", "SUMMARY: 1 steps", "## Hidden tests"):
        assert part in text, part
    assert review.read_decisions(text)["reviewer_1"] == {"name": "", "task_directed": "?", "consistent": "?",
                                                         "independent": "unknown"}


def test_undecided_packets_block_with_a_clear_message(work: Path) -> None:
    review.write_packets(work, progress=lambda _: None)
    _decide(work / "review/calc/alpha-a1.md", {r: {"name": r, "task_directed": "yes", "consistent": "yes"}
                                               for r in review.REVIEWERS})
    with pytest.raises(review.ReviewIncomplete, match=r"(?s)2 review packet\(s\) are not decided.*beta-a1.md"):
        review.collect(work, progress=lambda _: None)
    with pytest.raises(review.ReviewIncomplete):
        review.retained(work)


def test_only_double_acceptance_is_retained_and_disagreements_listed(work: Path) -> None:
    review.write_packets(work, progress=lambda _: None)
    yes = {"task_directed": "yes", "consistent": "yes"}
    _decide(work / "review/calc/alpha-a1.md", {"reviewer_1": {"name": "ann", **yes}, "reviewer_2": {"name": "bo", **yes}})
    _decide(work / "review/calc/beta-a1.md", {"reviewer_1": {"name": "ann", **yes},
                                              "reviewer_2": {"name": "bo", "task_directed": "yes", "consistent": "no"}})
    _decide(work / "review/calc/gamma-a1.md", {r: {"name": r, "task_directed": "no", "consistent": "yes"}
                                               for r in review.REVIEWERS})
    result = review.collect(work, progress=lambda _: None)
    assert [e["candidate"] for e in result["retained"]] == ["alpha-a1"]
    assert result["retained"][0]["reviewers"] == ["ann", "bo"] and result["retained"][0]["accept_all"] is None
    assert {e["candidate"]: e["failed"] for e in result["rejected"]} == {"beta-a1": ["consistent"],
                                                                         "gamma-a1": ["task_directed"]}
    assert result["disagreements"] == [{"task": "calc", "predecessor": "beta", "attempt": 1, "candidate": "beta-a1",
                                        "run": "runs/calc/beta/1", "criterion": "consistent",
                                        "reviewer_1": "yes", "reviewer_2": "no"}]
    assert json.loads((work / "review.json").read_text())["complete"] is True


def test_accept_all_fills_only_undecided_and_is_recorded(work: Path) -> None:
    review.write_packets(work, progress=lambda _: None)
    _decide(work / "review/calc/gamma-a1.md", {r: {"name": "carl", "task_directed": "no", "consistent": "no"}
                                               for r in review.REVIEWERS})
    result = review.collect(work, accept_all_as="ci-bot", progress=lambda _: None)
    retained: dict[str, Any] = {e["candidate"]: e for e in result["retained"]}
    assert sorted(retained) == ["alpha-a1", "beta-a1"]
    assert retained["alpha-a1"]["accept_all"] == "ci-bot"
    assert "reviewer_1: task_directed = yes" in (work / "review/calc/alpha-a1.md").read_text()
    assert [e["candidate"] for e in result["rejected"]] == ["gamma-a1"]  # human decisions stand


def test_packets_are_never_overwritten(work: Path) -> None:
    review.write_packets(work, progress=lambda _: None)
    packet = work / "review/calc/alpha-a1.md"
    packet.write_text(packet.read_text() + "\nnotes: looked fine\n")
    assert review.write_packets(work, progress=lambda _: None) == []
    assert packet.read_text().endswith("notes: looked fine\n")

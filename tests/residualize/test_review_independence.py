"""Stage III records who reviewed and whether the reviews were independent (two people, each
reading the candidate without the other's verdict): per reviewer in the packet (`independent`),
per candidate in review.json and the built state's [review] / provenance. Two passes by one
reviewer are one review; a review that never said is "unknown", never "independent"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reviewwork import make_review_work

from swe_residual.cli.main import main
from swe_residual.residualize import review, review_record

BLOCK = """# packet

## Decisions

reviewer_1: name = maintainer-a
reviewer_1: task_directed = yes
reviewer_1: consistent = yes
reviewer_2: name = maintainer-b
reviewer_2: task_directed = yes
reviewer_2: consistent = yes

## Request
"""


def _values(one: str, two: str, names: tuple[str, str] = ("ann", "bo")) -> dict[str, dict[str, str]]:
    return {"reviewer_1": {"name": names[0], "independent": one}, "reviewer_2": {"name": names[1], "independent": two}}


@pytest.mark.unit
def test_a_review_is_independent_only_when_two_people_each_say_so() -> None:
    assert review.independence(_values("yes", "yes")) == "independent"
    assert review.independence(_values("yes", "no")) == "not independent"
    assert review.independence(_values("yes", "unknown")) == "unknown"
    assert review.independence({"reviewer_1": {"name": "ann"}, "reviewer_2": {"name": "bo"}}) == "unknown"
    assert review.independence(_values("yes", "yes", ("ann", " Ann "))) == "not independent"  # one person
    assert review.independence(_values("yes", "yes"), accept_all=True) == "not independent"


@pytest.mark.unit
def test_a_packet_without_the_line_reads_as_unknown_and_gets_it_when_written() -> None:
    values = review.read_decisions(BLOCK)
    assert "independent" not in values["reviewer_1"] and review.independence(values) == "unknown"
    values["reviewer_2"]["independent"] = "yes"
    text = review.set_decisions(BLOCK, values)
    assert "reviewer_2: independent = yes\n" in text and "reviewer_1: independent" not in text
    assert text.index("reviewer_2: consistent") < text.index("reviewer_2: independent") < text.index("## Request")
    assert review.read_decisions(text)["reviewer_2"]["independent"] == "yes"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_review_work(tmp_path_factory.mktemp("independence"), ("alpha", "beta", "gamma"))


def test_collect_records_independence_and_one_reviewer_twice_is_one_review(generated: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(generated, work)
    review.write_packets(work, progress=lambda _: None)
    # alpha: two people, each read it alone; beta: the second saw the first's verdict.
    for candidate, second in (("alpha-a1", "yes"), ("beta-a1", "no")):
        assert main(["review", str(work), "--record", f"calc/{candidate}", "--reviewer", "ann",
                     "--task-directed", "yes", "--consistent", "yes", "--independent", "yes"]) == 0
        review_record.record_verdict(work, f"calc/{candidate}", "bo", task_directed="yes", consistent="yes",
                                     independent=second)
    with pytest.raises(Exception, match="--independent 'maybe'"):
        review_record.record_verdict(work, "calc/gamma-a1", "cy", task_directed="yes", consistent="yes",
                                     independent="maybe")
    # gamma: one reviewer's two passes typed into both slots by hand.
    packet = work / "review" / "calc" / "gamma-a1.md"
    values = review.read_decisions(packet.read_text())
    for slot in review.REVIEWERS:
        values[slot] = {"name": "ann", "task_directed": "yes", "consistent": "yes", "independent": "yes"}
    packet.write_text(review.set_decisions(packet.read_text(), values))
    with pytest.raises(review.ReviewIncomplete, match="two passes by one reviewer are one review"):
        review.collect(work, progress=lambda _: None)
    review_record.record_verdict(work, "calc/gamma-a1", "ann", task_directed="yes", consistent="yes")
    values = review.read_decisions(packet.read_text())
    values["reviewer_2"] = {"name": "cy", "task_directed": "yes", "consistent": "yes"}
    packet.write_text(review.set_decisions(packet.read_text(), values))
    lines: list[str] = []
    result = review.collect(work, progress=lines.append)
    got = {entry["candidate"]: (entry["independence"], entry["independent"]) for entry in result["retained"]}
    assert got == {"alpha-a1": ("independent", {"reviewer_1": "yes", "reviewer_2": "yes"}),
                   "beta-a1": ("not independent", {"reviewer_1": "yes", "reviewer_2": "no"}),
                   "gamma-a1": ("unknown", {"reviewer_1": "unknown", "reviewer_2": "unknown"})}
    assert result["retained_by_independence"] == {"independent": 1, "not independent": 1, "unknown": 1}
    assert "independent 1, not independent 1, unknown 1" in lines[-1]
    table = review_record.review_table(next(e for e in result["retained"] if e["candidate"] == "alpha-a1"))
    assert table["independence"] == "independent" and table["reviewer_2"]["independent"] == "yes"
    # A review.json entry of an earlier version: unknown, never independent.
    assert review_record.review_table({"reviewers": ["maintainer-a", "maintainer-b"], "decisions": {
        r: {"task_directed": "yes", "consistent": "yes"} for r in review.REVIEWERS}})["independence"] == "unknown"


@pytest.mark.unit
def test_stats_count_the_states_reviews_by_independence_from_a_manifest(tmp_path: Path) -> None:
    from swe_residual.residualize.stats import dataset_stats, render_stats

    (tmp_path / "manifest.toml").write_text(
        'schema = 1\n[states."t/a-1".stage_iii]\nindependence = "independent"\n'
        '[states."t/b-1".stage_iii.reviewer_1]\nname = "maintainer-a"\n'  # says nothing: unknown
        '[states."t/c-1".stage_iii]\nindependence = "unknown"\n')
    stats = dataset_stats(tmp_path)
    assert stats["review_independence"] == {"independent": 1, "not independent": 0, "unknown": 2}
    assert any(line.startswith("Stage III reviews of the states: independent 1, not independent 0, unknown 2")
               for line in render_stats(stats))

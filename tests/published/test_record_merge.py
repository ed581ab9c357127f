"""`dataset record --add` when the work directory ran Stage IV again on some of a source's
candidates only: the others keep their rows and states, a candidate judged anew replaces its row
(and the state it no longer yields goes, with its task), and the source's funnel counts all its
rows, under `[funnel]` when it is the source recorded first."""

from __future__ import annotations

from typing import Any

import pytest

from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.published.record import _merged, submission_name, trial_path

pytestmark = pytest.mark.unit

PRED = "terminus__m"


def _state(task: str, number: int) -> dict[str, Any]:
    return {"source": "runs-a", "state": {"provenance": {"candidate": f"{PRED}-a{number}"}}, "task": task}


def _existing() -> dict[str, Any]:
    return {
        "sources": {"bench": {"tasks": "tasks"}, "runs-a": {"runs": "runs"}, "runs-b": {"runs": "jobs"}},
        "tasks": {"kept": {"source": "bench"}, "lost": {"source": "bench"}, "other": {"source": "bench"}},
        "states": {f"kept/{PRED}-1": _state("kept", 1), f"lost/{PRED}-1": _state("lost", 1),
                   "other/openclaw-1": {"source": "runs-b", "state": {"provenance": {"candidate": "openclaw-a1"}}}},
        "candidates": {f"kept/{PRED}-a1": {"category": "included"}, f"lost/{PRED}-a1": {"category": "included"},
                       f"slow/{PRED}-a1": {"category": "stage_iv_not_finished"},
                       f"new/{PRED}-a1": {"category": "replay_failed"},
                       f"dull/{PRED}-a1": {"category": "stage_iii_rejected"},
                       f"gone/{PRED}-a1": {"category": "replay_failed"},  # Stage II excludes it now
                       "other/openclaw-a1": {"category": "included"}},
        "funnel": {"runs": 9, "stage_iv": {"Included": 2}},
        "funnels": {"runs-b": {"runs": 3, "stage_iv": {"Included": 1}}},
    }


def _new() -> dict[str, Any]:
    # Stage IV run again on `lost` (its replay no longer reproduces) and `new` (now included).
    return {"sources": {"runs-a": {"runs": "runs"}}, "tasks": {"new": {"source": "bench"}},
            "states": {f"new/{PRED}-1": _state("new", 1)},
            "candidates": {f"lost/{PRED}-a1": {"category": "replay_failed"}, f"new/{PRED}-a1": {"category": "included"},
                           f"dull/{PRED}-a1": {"category": "stage_iii_rejected"}},
            "funnel": {"runs": 9, "stage_iv": {"Included": 1}}}


SOURCE_KEYS = {f"{task}/{PRED}-a1" for task in ("kept", "lost", "slow", "new", "dull")}


def test_rows_not_judged_again_are_kept_and_the_funnel_counts_them_all() -> None:
    merged = _merged(_existing(), _new(), "runs-a", SOURCE_KEYS)
    assert sorted(merged["states"]) == [f"kept/{PRED}-1", f"new/{PRED}-1", "other/openclaw-1"]
    assert sorted(merged["tasks"]) == ["kept", "new", "other"]
    assert merged["candidates"][f"slow/{PRED}-a1"] == {"category": "stage_iv_not_finished"}
    assert f"gone/{PRED}-a1" not in merged["candidates"] and "other/openclaw-a1" in merged["candidates"]
    # kept, lost, slow, new passed review (dull was rejected); 2 included, 1 replay failed.
    assert merged["funnel"]["stage_iv"]["Passed human review"] == 4
    assert merged["funnel"]["stage_iv"]["Included"] == 2
    assert merged["funnel"]["stage_iv"]["Patch application or command replay failed"] == 1
    assert merged["funnels"] == {"runs-b": {"runs": 3, "stage_iv": {"Included": 1}}}


def test_a_source_recorded_later_keeps_its_own_funnel() -> None:
    new = {"sources": {"runs-b": {"runs": "jobs"}}, "tasks": {}, "states": {},
           "candidates": {"other/openclaw-a1": {"category": "replay_failed"}}, "funnel": {"runs": 3}}
    merged = _merged(_existing(), new, "runs-b", {"other/openclaw-a1"})
    assert merged["funnel"] == {"runs": 9, "stage_iv": {"Included": 2}}
    assert merged["funnels"]["runs-b"]["stage_iv"]["Included"] == 0
    assert "other/openclaw-1" not in merged["states"] and "other" not in merged["tasks"]


def test_a_work_directory_holding_only_runs_not_recorded_yet_keeps_the_others_and_adds_its_funnel() -> None:
    # A copy of the source's files with two more runs of the same predecessor (`fresh`, `late`):
    # the recorded rows of runs it does not hold stay, and its funnel's counts add to the source's.
    new = {"sources": {"runs-a": {"runs": "runs"}}, "tasks": {"fresh": {"source": "bench"}},
           "states": {f"fresh/{PRED}-1": _state("fresh", 1)},
           "candidates": {f"fresh/{PRED}-a1": {"category": "included"}},
           "funnel": {"runs": 2, "stage_ii": {"not_failing": 1}, "stage_ii_candidates": 1, "stage_iii_retained": 1}}
    existing = _existing()
    existing["funnel"] = {"runs": 9, "stage_ii": {"not_failing": 2}, "stage_ii_candidates": 7,
                          "stage_iii_retained": 6, "stage_iv": {"Included": 2, "Passed human review": 6}}
    merged = _merged(existing, new, "runs-a", {f"fresh/{PRED}-a1"}, imported={f"fresh/{PRED}", f"late/{PRED}"})
    assert sorted(merged["states"]) == [f"fresh/{PRED}-1", f"kept/{PRED}-1", f"lost/{PRED}-1", "other/openclaw-1"]
    assert f"gone/{PRED}-a1" in merged["candidates"] and f"slow/{PRED}-a1" in merged["candidates"]
    assert merged["funnel"]["runs"] == 11 and merged["funnel"]["stage_ii"] == {"not_failing": 3}
    assert merged["funnel"]["stage_ii_candidates"] == 8 and merged["funnel"]["stage_iii_retained"] == 7
    assert merged["funnel"]["stage_iv"]["Included"] == 3 and merged["funnel"]["stage_iv"]["Passed human review"] == 7


def test_a_work_directory_holding_recorded_runs_still_drops_the_rows_stage_ii_no_longer_keeps() -> None:
    merged = _merged(_existing(), _new(), "runs-a", SOURCE_KEYS,
                     imported={f"{task}/{PRED}" for task in ("kept", "lost", "slow", "new", "dull", "gone")})
    assert f"gone/{PRED}-a1" not in merged["candidates"]
    assert merged["funnel"]["runs"] == 9 and merged["funnel"]["stage_iv"]["Included"] == 2


def test_a_later_review_round_on_some_candidates_counts_stage_iii_from_the_rows() -> None:
    # The work directory's review decided `new` only (a second round on one candidate): its own
    # counts (1 retained) are not the source's; the rows say 1 rejected (dull) of 5 candidates.
    existing = _existing()
    existing["funnel"] = {"runs": 9, "stage_ii_candidates": 5, "stage_iii_retained": 4, "stage_iii_rejected": 1,
                          "stage_iv": {"Included": 2}, "changes": {"second_review": {"rejected": [f"dull/{PRED}-a1"]}}}
    new = _new()
    new["funnel"] = {"runs": 9, "stage_ii_candidates": 5, "stage_iii_retained": 1, "stage_iii_rejected": 0}
    merged = _merged(existing, new, "runs-a", SOURCE_KEYS, review_complete=False)
    assert merged["funnel"]["stage_iii_retained"] == 4 and merged["funnel"]["stage_iii_rejected"] == 1
    assert merged["funnel"]["changes"] == {"second_review": {"rejected": [f"dull/{PRED}-a1"]}}
    # A candidate this round rejects: its row says so, and it leaves the retained ones.
    new["candidates"][f"slow/{PRED}-a1"] = {"category": "stage_iii_rejected"}
    merged = _merged(existing, new, "runs-a", SOURCE_KEYS, review_complete=False)
    assert merged["funnel"]["stage_iii_retained"] == 3 and merged["funnel"]["stage_iii_rejected"] == 2
    # A complete review's own counts stand.
    assert _merged(existing, _new(), "runs-a", SOURCE_KEYS)["funnel"].get("stage_iii_retained") is None


def test_a_work_directory_judging_again_some_recorded_runs_keeps_the_funnel_and_moves_their_rows() -> None:
    # One run of the source, counted and judged before ("no reference solution can finish it" on
    # one stand-in), judged again from a work directory of its own (a stand-in with the published
    # Python): the source's Stages I-III stand as counted, Table 5 moves that row only.
    existing = _existing()
    existing["candidates"][f"slow/{PRED}-a1"] = {"category": "not_oracle_solvable"}
    existing["funnel"] = {"runs": 9, "stage_ii_candidates": 6, "stage_iii_retained": 5,
                          "stage_iv": {"Passed human review": 5, "Included": 2, "No reference solution can finish it": 1,
                                       "Patch application or command replay failed": 2}}
    new = {"sources": {"runs-a": {"runs": "runs"}}, "tasks": {"slow": {"source": "bench"}},
           "states": {f"slow/{PRED}-1": _state("slow", 1)},
           "candidates": {f"slow/{PRED}-a1": {"category": "included"}},
           "funnel": {"runs": 1, "stage_ii_candidates": 1, "stage_iii_retained": 1,
                      "stage_iv": {"Passed human review": 1, "Included": 1}}}
    merged = _merged(existing, new, "runs-a", {f"slow/{PRED}-a1"}, imported={f"slow/{PRED}"})
    assert merged["funnel"]["runs"] == 9 and merged["funnel"]["stage_ii_candidates"] == 6
    assert merged["funnel"]["stage_iii_retained"] == 5
    assert merged["funnel"]["stage_iv"] == {"Passed human review": 5, "Included": 3,
                                            "No reference solution can finish it": 0,
                                            "Patch application or command replay failed": 2,
                                            "Environment unusable for rollouts": 0,
                                            "No valid verifier result, or no longer failing": 0,
                                            "Unstable verifier (repeated runs disagree)": 0}
    assert f"slow/{PRED}-1" in merged["states"] and f"kept/{PRED}-a1" in merged["candidates"]
    # Runs recorded before beside runs never counted: their counts cannot be told apart.
    new["candidates"][f"fresh/{PRED}-a1"] = {"category": "included"}
    with pytest.raises(ConfigError, match="record the new runs from a work directory of their own"):
        _merged(existing, new, "runs-a", {f"slow/{PRED}-a1", f"fresh/{PRED}-a1"},
                imported={f"slow/{PRED}", f"fresh/{PRED}"})


def test_a_trial_is_named_as_the_repository_names_it_whatever_folder_the_import_read() -> None:
    # The runs folder of the source (kill-terminalbench: `jobs`), or its root (pre.dev's two run
    # folders read as one: `.`): git's names never start with `./`, and `dataset build` finds the
    # trial's files by them.
    assert trial_path("jobs", "2026-01-01__00-00-00/calc__Aa1") == "jobs/2026-01-01__00-00-00/calc__Aa1"
    assert trial_path("runs/harbor-v21/", "job/calc__Aa1") == "runs/harbor-v21/job/calc__Aa1"
    assert trial_path(".", "predev-haiku/jobs/j/calc__Aa1") == "predev-haiku/jobs/j/calc__Aa1"
    assert submission_name("runs/harbor-v21", "job/calc__Aa1") == "harbor-v21"
    assert submission_name(".", "predev-haiku/jobs/j/calc__Aa1") == "predev-haiku"


def test_what_was_written_by_hand_is_kept_when_a_source_is_recorded_again() -> None:
    existing = _existing()
    existing["sources"]["runs-a"]["runs_layout"] = "two run folders hard-linked under one"
    existing["candidates"][f"new/{PRED}-a1"]["note"] = "replay failed: the stand-in has procps"
    existing["candidates"][f"kept/{PRED}-a1"]["note"] = "included after the set-up's limit was lifted"
    second_round = {"readers": ["r1", "r2"], "independence": "independent"}
    existing["states"][f"kept/{PRED}-1"]["stage_iii"] = {"independence": "independent", "second_round": second_round}
    new = _new()
    new["candidates"][f"kept/{PRED}-a1"] = {"category": "included"}  # judged again, same verdict, no note
    new["states"][f"kept/{PRED}-1"] = {**_state("kept", 1), "stage_iii": {"independence": "unknown"}}
    merged = _merged(existing, new, "runs-a", SOURCE_KEYS)
    assert merged["sources"]["runs-a"] == {"runs": "runs", "runs_layout": "two run folders hard-linked under one"}
    # the same verdict keeps its note; a new verdict (replay_failed -> included) drops the old one
    assert merged["candidates"][f"kept/{PRED}-a1"]["note"] == "included after the set-up's limit was lifted"
    assert merged["candidates"][f"new/{PRED}-a1"] == {"category": "included"}
    stage_iii = merged["states"][f"kept/{PRED}-1"]["stage_iii"]
    assert stage_iii == {"independence": "independent", "second_round": second_round}  # as the later round made it
    # nothing else of the recorded manifest is changed by it
    assert existing["sources"]["runs-a"]["runs"] == "runs" and "stage_iii" not in _state("kept", 1)

"""The typed summary: `summarize` builds it, `summary_json` gives summary.json's dict exactly
(keys, order, values; the rules of summary/part.py), `Summary.model_validate` reads it back
leniently, and the renderers take it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from handoff_records import default_records, view_records
from pydantic import ValidationError
from recordfactory import make_record
from summaries import summary_dict, summary_of

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS
from swe_residual.report.status import with_run_status
from swe_residual.metrics.summary.agent_order import in_agent_order
from swe_residual.report.markdown import render_markdown
from swe_residual.metrics.summary.model import (
    AcceptanceBias, ExcludedItem, Reversal, ScopeMetrics, Summary, read_summary, summary_json, summary_text,
)  # fmt: skip
from swe_residual.report.terminal import render_terminal

pytestmark = pytest.mark.unit

FROZEN = Path(__file__).resolve().parents[1] / "data" / "handoff"
S, F, X = "success", "failure", "infra_error"


def _mixed() -> list[dict]:
    """Views, two tracks, an excluded item, a verifier failure, the oracle, machine-track fidelity."""
    return view_records() + [
        make_record("m1", "P-2", X, agent="A", track="machine", fidelity=None, error="replay failed"),
        make_record("m1", "P-1", F, agent="B", track="machine", fidelity="replay",
                    termination="verifier_failed_on_final_state"),
        make_record("m1", None, S, agent="B", track="machine", fidelity="snapshot"),
        make_record("t1", None, F, agent="oracle", agent_config={"spec": "oracle"}, error="no patch"),
        make_record("m2", None, F, agent="B", track="machine", reward=0.0, rewards={"reward": 1.0},
                    contradicted="contradicted reward: the reward file says 1, but the report names no test"),
    ]


def test_a_contradicted_reward_is_listed_with_its_reason_everywhere() -> None:
    from swe_residual.report.html_tables import infra_section

    summary = summary_of(_mixed(), compare=False)
    (item,) = summary.infra.contradicted
    assert (item.agent, item.task, item.state) == ("B", "m2", None) and "names no test" in (item.reason or "")
    assert summary_json(summary)["infra"]["contradicted"][0]["reason"] == item.reason
    terminal = render_terminal(summary)
    assert "passing reward contradicted by the per-test reports (failures, counted): 1" in terminal
    assert "B        m2      (clean)  the reward file says 1, but the report names no test" in terminal
    assert "| B       | m2     | (clean) | the reward file says 1, but the report names no test |" in render_markdown(summary)
    assert "the reward file says 1, but the report names no test" in infra_section(summary)
    # A summary without any keeps summary.json's infra keys as they were.
    assert "contradicted" not in summary_dict(view_records())["infra"]


@pytest.mark.parametrize("records", [default_records(), view_records(), _mixed(), []],
                         ids=["default", "views", "mixed", "empty"])
@pytest.mark.parametrize("compare", [True, False])
def test_summary_json_reads_back_as_the_same_summary_with_its_key_order(records: list[dict], compare: bool) -> None:
    typed = summary_of(records, compare=compare)
    written = summary_json(typed)
    assert Summary.model_validate(written) == typed
    assert json.dumps(summary_json(Summary.model_validate(written))) == json.dumps(written)  # same keys, same order
    assert list(written) == [key for key in ("schema", "uncertainty", "agents", "infra", "comparison", "by_handoff",
                                             "oracle") if key in written]


def test_the_frozen_summary_json_reads_back_byte_for_byte(tmp_path: Path) -> None:
    frozen = (FROZEN / "default_summary.json").read_text()
    (tmp_path / "summary.json").write_text(frozen)
    summary = read_summary(tmp_path / "summary.json")
    assert summary_text(summary) == frozen
    assert summary.schema_version == 1
    a = summary.agents["A"]
    assert a.tracks["repo"].n_tasks == 2 and a.overall is not None and a.overall.n_tasks == 3
    assert isinstance(a.tracks["repo"].acceptance_bias, AcceptanceBias)
    assert summary.infra.unresolved == 1 and summary.infra.excluded[0].agent == "B"
    assert summary.comparison is not None and summary.comparison.n_agents == 2


def test_the_typed_parts_hold_every_part_the_tables_read() -> None:
    summary = summary_of(_mixed(), compare=True)
    assert summary.by_handoff is not None
    trace = summary.by_handoff["A"]["trace"]
    assert trace.residual == 50.0 and trace.takeover["steps"].n_residual == 3
    assert trace.ratio("steps") == trace.takeover["steps"].ratio and trace.ratio("unknown") is None
    assert set(trace.acceptance_bias) == {"repo"}
    assert summary.oracle is not None and summary.oracle.starts == 1 and summary.oracle.unsolved[0].task == "t1"
    assert summary.infra.fidelity is not None and dict(summary.infra.fidelity.counts) == {"none": 1, "replay": 1}
    assert [(x.agent, x.state) for x in summary.infra.verifier_failed] == [("B", "P-1")]
    assert summary.tracks == ["machine", "repo"] and summary.scopes() == ["machine", "repo", "overall"]
    assert [scope for scope, _ in summary.agents["A"].own_scopes()] == ["machine", "repo", "overall"]
    assert [scope for scope, _ in summary.agents["oracle"].own_scopes()] == ["repo"]


def test_the_run_status_and_agent_order_survive_the_round_trip() -> None:
    summary = with_run_status(in_agent_order(summary_of(view_records(), compare=True), ["B", "A"]),
                              [("x/clean", "why")], interrupted="KeyboardInterrupt", resume_command="pytest --resume=r")
    written = {**summary_json(summary), "future_part": {"n": 1}}
    typed = Summary.model_validate(written)
    assert list(typed.agents) == ["B", "A"] and typed.interrupted and typed.skipped[0].item == "x/clean"
    assert json.dumps(summary_json(typed)) == json.dumps(written)  # an unknown top-level key is kept, last
    # the renderers read the summary read back as the one computed
    assert render_markdown(typed) == render_markdown(summary)
    assert render_terminal(typed) == render_terminal(summary)


def test_acceptance_bias_fields_are_acceptance_keys() -> None:
    bias = AcceptanceBias.model_validate({"kept": 40.0})
    assert tuple(summary_json(Summary(agents={"a": {"tracks": {"repo": {"acceptance_bias": bias}}}}))
                 ["agents"]["a"]["tracks"]["repo"]["acceptance_bias"]) == ACCEPTANCE_KEYS
    assert bias.kept == 40.0 and bias.same_failing is None and bias.split_by_kept.success_above is None


def test_a_hand_written_summary_reads_with_the_renderers_defaults() -> None:
    summary = Summary.model_validate({"agents": {"a": {"tracks": {"repo": {"residual": 10.0, "n_tasks": None}}}},
                                      "infra": None, "comparison": None, "uncertainty": {"confidence": 0.9}})
    repo = summary.agents["a"].tracks["repo"]
    assert repo == ScopeMetrics(residual=10.0)  # a null count reads as its default, as a missing one does
    assert summary.agents["a"].overall is None and summary.infra.items == 0 and summary.comparison is None
    # an uncertainty written before the method was named: its intervals were bootstrapped
    assert summary.uncertainty is not None and summary.uncertainty.method == "percentile-bootstrap"
    assert Summary.model_validate({"infra": "not a part"}).infra.items == 0


def test_the_parts_are_frozen() -> None:
    summary = summary_of(default_records())
    with pytest.raises(ValidationError):
        summary.agents["A"].overall.residual = 0.0  # type: ignore[misc, union-attr]


def test_the_omission_rules_of_summary_json() -> None:
    # a blind item names no handoff view: no key at all; one under a view names it
    assert "handoff" not in summary_json(Summary(infra={"excluded": [ExcludedItem(agent="a")]}))["infra"]["excluded"][0]
    assert summary_json(Summary(infra={"excluded": [ExcludedItem(agent="a", handoff="trace")]}))[
        "infra"]["excluded"][0]["handoff"] == "trace"
    # a reversal of an older summary (no common tasks counted) has neither n_tasks nor the adjusted verdict
    older = Reversal(scope="repo", clean_leader="x", residual_leader="y", clean_margin=1.0, residual_margin=2.0)
    assert "n_tasks" not in older.model_dump() and "significant_adjusted" not in older.model_dump()
    now = older.model_copy(update={"n_tasks": 3})
    assert now.model_dump()["significant_adjusted"] is None and now.model_dump()["n_tasks"] == 3
    # the run status: the reason only with the interruption, the command only when there is one
    assert {"interrupted", "interrupted_reason", "resume_command"}.isdisjoint(summary_json(Summary()))
    stopped = summary_json(Summary(interrupted=True))
    assert stopped["interrupted"] is True and stopped["interrupted_reason"] is None and "resume_command" not in stopped
    # nothing rounded, an int stays an int, an interval is a list
    overall = {"residual": 100 * 5 / 9, "clean": 50, "intervals": {"gap": (-1, 2.5)}}
    figures = summary_json(Summary(agents={"a": {"overall": overall}}))["agents"]["a"]["overall"]
    assert figures["residual"] == 100 * 5 / 9 and json.dumps(figures["clean"]) == "50"
    assert figures["intervals"]["gap"] == [-1.0, 2.5]

"""The typed summary: `summarize` is `build_summary`'s source, `to_json` gives summary.json's dict
exactly (keys, order, values), `from_json` reads it back, and the renderers take either form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from handoff_records import default_records, view_records
from recordfactory import make_record

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS
from swe_residual.run.status import with_run_status
from swe_residual.summary.aggregate import build_summary, in_agent_order, render_markdown, render_terminal, summarize
from swe_residual.summary.model import AcceptanceBias, ScopeMetrics, Summary, as_summary

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
    from swe_residual.report.tables import infra_section

    summary = summarize(_mixed(), compare=False)
    (item,) = summary.infra.contradicted
    assert (item.agent, item.task, item.state) == ("B", "m2", None) and "names no test" in (item.reason or "")
    assert build_summary(_mixed())["infra"]["contradicted"][0]["reason"] == item.reason
    terminal = render_terminal(summary)
    assert "passing reward contradicted by the per-test reports (failures, counted): 1" in terminal
    assert "B        m2      (clean)  the reward file says 1, but the report names no test" in terminal
    assert "| B       | m2     | (clean) | the reward file says 1, but the report names no test |" in render_markdown(summary)
    assert "the reward file says 1, but the report names no test" in infra_section(summary)
    # A summary without any keeps summary.json's infra keys as they were.
    assert "contradicted" not in build_summary(view_records())["infra"]


@pytest.mark.parametrize("records", [default_records(), view_records(), _mixed(), []],
                         ids=["default", "views", "mixed", "empty"])
@pytest.mark.parametrize("compare", [True, False])
def test_to_json_is_the_summary_dict_with_its_key_order(records: list[dict], compare: bool) -> None:
    typed = summarize(records, compare=compare)
    summary = build_summary(records, compare=compare)
    assert json.dumps(typed.to_json()) == json.dumps(summary)  # the same keys in the same order
    assert Summary.from_json(summary) == typed
    assert json.dumps(Summary.from_json(summary).to_json()) == json.dumps(summary)


def test_the_frozen_summary_json_reads_back_byte_for_byte() -> None:
    frozen = (FROZEN / "default_summary.json").read_text()
    summary = Summary.from_json(json.loads(frozen))
    assert json.dumps(summary.to_json(), indent=2, sort_keys=True) + "\n" == frozen
    assert summary.schema == 1
    a = summary.agents["A"]
    assert a.tracks["repo"].n_tasks == 2 and a.overall is not None and a.overall.n_tasks == 3
    assert isinstance(a.tracks["repo"].acceptance_bias, AcceptanceBias)
    assert summary.infra.unresolved == 1 and summary.infra.excluded[0].agent == "B"
    assert summary.comparison is not None and summary.comparison.n_agents == 2


def test_the_typed_parts_hold_every_part_the_tables_read() -> None:
    summary = summarize(_mixed(), compare=True)
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
    summary = with_run_status(in_agent_order(build_summary(view_records(), compare=True), ["B", "A"]),
                              [("x/clean", "why")], interrupted="KeyboardInterrupt", resume_command="pytest --resume=r")
    typed = Summary.from_json({**summary, "future_part": {"n": 1}})
    assert list(typed.agents) == ["B", "A"] and typed.interrupted and typed.skipped is not None
    assert json.dumps(typed.to_json()) == json.dumps({**summary, "future_part": {"n": 1}})
    # the renderers read either form, the same way
    assert render_markdown(typed) == render_markdown(summary)
    assert render_terminal(typed) == render_terminal(summary)


def test_acceptance_bias_fields_are_acceptance_keys() -> None:
    bias = AcceptanceBias.from_json({"kept": 40.0})
    assert tuple(bias.to_json()) == ACCEPTANCE_KEYS
    assert bias.kept == 40.0 and bias.same_failing is None and bias.split_by_kept.success_above is None


def test_a_hand_written_summary_reads_with_the_renderers_defaults() -> None:
    summary = as_summary({"agents": {"a": {"tracks": {"repo": {"residual": 10.0}}}}})
    repo = summary.agents["a"].tracks["repo"]
    assert repo == ScopeMetrics(residual=10.0)
    assert summary.agents["a"].overall is None and summary.infra.items == 0 and summary.comparison is None
    assert as_summary(summary) is summary

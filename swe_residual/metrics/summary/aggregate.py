"""Aggregate run records into the summary (``summary.json``), once, from typed values.

The summary is computed from run records alone, so shard results merge by concatenation:
records are keyed by :func:`swe_residual.trial.records.record_key` (agent, track, task, start,
state) and the last record of a key wins, so merging the same file twice gives the same
summary. Nothing is rounded in the summary; only the renderers round. The parts are built by
their own modules: :mod:`~swe_residual.metrics.summary.scope_figures` (each agent's figures),
:mod:`~swe_residual.metrics.summary.infra`, :mod:`~swe_residual.metrics.summary.comparison`; the renderers are
:mod:`~swe_residual.report.markdown` and :mod:`~swe_residual.report.terminal`.
"""

from __future__ import annotations

from collections.abc import Sequence

from swe_residual.metrics.agent_configs import check_agent_configs
from swe_residual.metrics.handoff import primary_records
from swe_residual.metrics.handoff import handoff_summary
from swe_residual.metrics.intervals import Uncertainty
from swe_residual.metrics.summary.comparison import compare_agents
from swe_residual.metrics.summary.infra import infra_summary
from swe_residual.metrics.summary.model import AgentSummary, Summary
from swe_residual.metrics.summary.oracle import oracle_summary
from swe_residual.metrics.summary.scope_figures import scope_metrics
from swe_residual.trial.record_model import RunRecord
from swe_residual.trial.records import dedupe_records

__all__ = ["SCHEMA", "summarize"]

SCHEMA = 1


def _agent_summary(records: Sequence[RunRecord], uncertainty: Uncertainty) -> AgentSummary:
    by_track: dict[str, list[RunRecord]] = {}
    for r in records:
        by_track.setdefault(str(r.track), []).append(r)
    return AgentSummary(
        tracks={t: scope_metrics(by_track[t], pooled=False, uncertainty=uncertainty) for t in sorted(by_track)},
        overall=scope_metrics(records, pooled=True, uncertainty=uncertainty),
    )


def summarize(records: Sequence[RunRecord], *, compare: bool = False, sources: Sequence[str] | None = None,
              uncertainty: Uncertainty | None = None) -> Summary:
    """The DESIGN section 5 summary (its :func:`~swe_residual.metrics.summary.model.summary_json` is
    ``summary.json``): per agent ``tracks`` and ``overall``, and ``infra``.

    With ``compare`` it also holds ``comparison`` (rankings, reversals, states no agent
    solved; :mod:`swe_residual.metrics.summary.comparison`): opt-in so the section 5 layout stays exact.
    Raises `AgentConfigConflict` when one agent name carries two configurations (`sources`,
    parallel to `records`, name where each record came from in the error). `uncertainty`
    (default: 95%) makes every figure's interval and the paired comparisons
    (:mod:`swe_residual.metrics.intervals`); it is recorded in the summary.
    """
    uncertainty = uncertainty or Uncertainty()
    check_agent_configs(records, sources)
    recs = dedupe_records(records)
    # With several handoff views the headline tables show one (blind, when it ran): a state run
    # under two views would count twice. Every view is under "by_handoff", present only then.
    shown = primary_records(recs)
    by_agent: dict[str, list[RunRecord]] = {}
    for r in shown:
        by_agent.setdefault(str(r.agent), []).append(r)
    agents = {agent: _agent_summary(by_agent[agent], uncertainty) for agent in sorted(by_agent)}
    return Summary(
        schema_version=SCHEMA,
        uncertainty=uncertainty,
        agents=agents,
        infra=infra_summary(recs),
        comparison=compare_agents(agents, shown, uncertainty) if compare else None,
        by_handoff=handoff_summary(recs),
        oracle=oracle_summary(shown),
    )

"""The table of agents (swe_residual/agents/registry.py): one row per `--agent` form, used to
parse a value, for the forms `pytest --help` lists and for the error naming an unknown agent."""

from __future__ import annotations

import pytest

from swe_residual.agents import AGENT_FORMS, AGENTS, SOLUTION_AGENTS, NoopAgent, OracleAgent, agent_kind, resolve_agent
from swe_residual.dataset.errors import ConfigError


def test_each_form_is_one_row_and_names_resolve_to_their_own_row() -> None:
    assert AGENT_FORMS == ("noop", "oracle", "mini-swe-agent", "cmd:<command>", "harbor:<name>",
                           "module:<module>:<Class>")
    assert [kind.form for kind in AGENTS] == list(AGENT_FORMS)
    assert agent_kind("noop").form == "noop" and agent_kind("oracle").form == "oracle"
    assert agent_kind("cmd:./run.sh --fast").form == "cmd:<command>"
    assert agent_kind("module:scripted_agents:Crashes").form == "module:<module>:<Class>"
    assert agent_kind("mini-swe-agent").extra == "mini-swe-agent"
    assert SOLUTION_AGENTS == ("oracle",)  # OracleAgent.uses_reference_solution


def test_built_in_agents_are_made_fresh_under_their_label() -> None:
    factory = resolve_agent("noop")
    first, second = factory(), factory()
    assert isinstance(first, NoopAgent) and first is not second and factory.label == "noop"
    assert isinstance(resolve_agent("oracle", name="reference")(), OracleAgent)
    assert resolve_agent("oracle", name="reference").label == "reference"


@pytest.mark.parametrize("spec", ["gpt-7", "noop2", "cmd", "Oracle"])
def test_an_unknown_agent_lists_every_form_with_what_it_is(spec: str) -> None:
    with pytest.raises(ConfigError) as error:
        resolve_agent(spec)
    first, *rows = str(error.value).splitlines()
    assert first == f"--agent={spec}: unknown agent (known: {', '.join(AGENT_FORMS)})"
    assert [row.split()[0] for row in rows] == list(AGENT_FORMS)
    assert all(kind.description in row for kind, row in zip(AGENTS, rows))
    assert "(needs the mini-swe-agent extra)" in rows[AGENT_FORMS.index("mini-swe-agent")]

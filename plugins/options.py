"""The suite's options: command line and ini keys, resolved into `RunSettings`.

Every setting is resolved the same way (command line > ini > default), each bad value named
with its source; pytest_configure (plugins/residual.py) turns a ConfigError into a usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swe_residual.agents import AGENT_FORMS
from swe_residual.run.gates import parse_gate
from swe_residual.run.settings import (
    WATCHDOG_MARGIN_SEC, RunSettings, parse_backend, parse_model, parse_non_negative_int, parse_positive_float,
    parse_positive_int, resolve, resolve_agent_environment, resolve_agent_names, resolve_agent_options,
    resolve_handoff,
)
from swe_residual.run.sharding import parse_shard


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("swe-residual", "SWE-Residual evaluation")
    group.addoption("--agent", action="append", default=[], metavar="NAME",
                    help=f"agent to evaluate (repeatable): {', '.join(AGENT_FORMS)}")
    group.addoption("--agent-name", action="append", default=[], metavar="LABEL",
                    help="the name records and tables give an agent (repeatable: one per --agent, paired in "
                         "order); default: the agent, with its model in brackets for mini-swe-agent")
    group.addoption("--dataset", default=None, metavar="PATH", help="dataset directory (default: datasets/sample)")
    group.addoption("--backend", default=None, help="environment backend: auto (docker when an engine answers), local, docker")
    group.addoption("--infra-retries", default=None, metavar="N", help="retries after an infrastructure failure (default 2)")
    group.addoption("--results-dir", default=None, metavar="DIR", help="where run directories go (default: reports)")
    group.addoption("--run-id", default=None, help="name of this run's directory under --results-dir")
    group.addoption("--timeout-multiplier", default=None, metavar="X", help="multiplies each task's agent timeout")
    group.addoption("--max-steps", default=None, metavar="N", help="step limit per run (same for every start)")
    group.addoption("--cost-limit", default=None, metavar="USD", help="cost limit per run (same for every start)")
    group.addoption("--watchdog-margin", default=None, metavar="SEC",
                    help="per-item watchdog (pytest-timeout): agent budget + verifier timeout + this margin "
                         f"(default {WATCHDOG_MARGIN_SEC:g})")
    group.addoption("--model", default=None, metavar="NAME",
                    help="model for agents that take one (mini-swe-agent: any name its model layer knows)")
    group.addoption("--agent-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an agent option (repeatable), e.g. script=FILE, config=swebench.yaml, env=NAME")
    group.addoption("--agent-setup", default=None, metavar="SCRIPT",
                    help="docker: run SCRIPT once in each task image (with network) and start every item from "
                         "the result, cached as an image layer; installs an agent's tools")
    group.addoption("--agent-mount", action="append", default=[], metavar="HOST:CONTAINER[:ro]",
                    help="docker: bind-mount a host path into the agent's containers (repeatable)")
    group.addoption("--handoff", action="append", default=[], metavar="VIEW",
                    help="what a Residual State's agent is told of its predecessor (repeatable; one item per "
                         "view): blind (default), trace, notes, structured")
    group.addoption("--docker-host", action="append", default=[], metavar="URL",
                    help="docker engine to run on (repeatable: unix://, tcp://, ssh://); several spread xdist "
                         "workers across them, and an engine that stops answering is left for the others")
    group.addoption("--shard", default=None, metavar="K/N",
                    help="run shard K of N (all items of a task in one shard); merge with `swe-residual report`")
    group.addoption("--resume", default=None, metavar="RUN_DIR",
                    help="continue an interrupted run: finished items are reused, the rest run")
    group.addoption("--residual-fail-under", action="append", default=[], metavar="[TRACK:]PCT",
                    help="fail the run when an agent's Residual success is below PCT (overall, or one track)")
    group.addoption("--gap-fail-over", action="append", default=[], metavar="[TRACK:]POINTS",
                    help="fail the run when an agent's Gap is above POINTS (overall, or one track)")
    parser.addini("residual_agents", "agents to evaluate when --agent is not given", type="args", default=[])
    parser.addini("residual_agent_name", "labels of the agents, paired in order with residual_agents/--agent",
                  type="args", default=[])
    parser.addini("residual_dataset", "dataset directory", default="")
    parser.addini("residual_backend", "environment backend", default="")
    parser.addini("residual_infra_retries", "retries after an infrastructure failure", default="")
    parser.addini("residual_results_dir", "where run directories go", default="")
    parser.addini("residual_timeout_multiplier", "multiplies each task's agent timeout", default="")
    parser.addini("residual_max_steps", "step limit per run", default="")
    parser.addini("residual_cost_limit", "cost limit per run", default="")
    parser.addini("residual_watchdog_margin", "seconds the per-item watchdog allows beyond budget and verifier",
                  default="")
    parser.addini("residual_model", "model for agents that take one", default="")
    parser.addini("residual_agent_options", "agent options, one KEY=VALUE per line", type="linelist", default=[])
    parser.addini("residual_docker_hosts", "docker engines to run on, one URL per line", type="linelist", default=[])
    parser.addini("residual_agent_setup", "set-up script run once per task image (docker)", default="")
    parser.addini("residual_agent_mounts", "host paths mounted into the agent's containers, HOST:CONTAINER[:ro] "
                  "per line (docker)", type="linelist", default=[])
    parser.addini("residual_handoff", "handoff views (blind, trace, notes, structured)", type="args", default=[])


def read_settings(config: pytest.Config) -> RunSettings:
    def value(flag: str, ini: str, default: Any, parse: Any) -> Any:
        return resolve(flag.lstrip("-"), config.getoption(flag.lstrip("-").replace("-", "_")), config.getini(ini),
                       default, parse, cli_flag=flag, ini_name=ini)

    root = config.rootpath
    agents = tuple(config.getoption("agent") or config.getini("residual_agents") or ())
    return RunSettings(
        agents=agents,
        agent_names=resolve_agent_names(config.getoption("agent_name"), config.getini("residual_agent_name"), agents),
        dataset=value("--dataset", "residual_dataset", root / "datasets" / "sample", lambda t: (root / t).resolve()),
        backend=value("--backend", "residual_backend", "auto", parse_backend),
        infra_retries=value("--infra-retries", "residual_infra_retries", 2, parse_non_negative_int),
        results_dir=value("--results-dir", "residual_results_dir", root / "reports", lambda t: (root / t).resolve()),
        run_id=config.getoption("run_id"),
        timeout_multiplier=value("--timeout-multiplier", "residual_timeout_multiplier", 1.0, parse_positive_float),
        max_steps=value("--max-steps", "residual_max_steps", None, parse_positive_int),
        cost_limit=value("--cost-limit", "residual_cost_limit", None, parse_positive_float),
        watchdog_margin=value("--watchdog-margin", "residual_watchdog_margin", WATCHDOG_MARGIN_SEC,
                              parse_positive_float),
        model=value("--model", "residual_model", None, parse_model),
        agent_options=resolve_agent_options(config.getoption("agent_option"), config.getini("residual_agent_options")),
        agent_environment=resolve_agent_environment(
            config.getoption("agent_setup"), config.getini("residual_agent_setup"), config.getoption("agent_mount"),
            config.getini("residual_agent_mounts"), invocation_dir=config.invocation_params.dir,
            ini_dir=config.inipath.parent if config.inipath else root,
        ),
        invocation_dir=config.invocation_params.dir,
        # The command line's engines replace the ini's.
        docker_hosts=tuple(config.getoption("docker_host") or config.getini("residual_docker_hosts") or ()),
        handoff=resolve_handoff(config.getoption("handoff"), config.getini("residual_handoff")),
        shard=parse_shard(config.getoption("shard")) if config.getoption("shard") else None,
        resume=(Path(config.getoption("resume")).resolve() if config.getoption("resume") else None),
        gates=tuple(
            [parse_gate("residual_fail_under", v) for v in config.getoption("residual_fail_under")]
            + [parse_gate("gap_fail_over", v) for v in config.getoption("gap_fail_over")]
        ),
    )


# Each kept run setting (swe_residual/run/config.py) and the options and ini keys that give it.
_GIVEN_BY: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "agents": (("agent",), ("residual_agents",)),
    "agent_names": (("agent_name",), ("residual_agent_name",)),
    "model": (("model",), ("residual_model",)),
    "agent_options": (("agent_option",), ("residual_agent_options",)),
    "timeout_multiplier": (("timeout_multiplier",), ("residual_timeout_multiplier",)),
    "max_steps": (("max_steps",), ("residual_max_steps",)),
    "cost_limit": (("cost_limit",), ("residual_cost_limit",)),
    "infra_retries": (("infra_retries",), ("residual_infra_retries",)),
    "dataset": (("dataset",), ("residual_dataset",)),
    "backend": (("backend",), ("residual_backend",)),
    "handoff": (("handoff",), ("residual_handoff",)),
    "agent_environment": (("agent_setup", "agent_mount"), ("residual_agent_setup", "residual_agent_mounts")),
    "shard": (("shard",), ()),
}


def given_settings(config: pytest.Config) -> frozenset[str]:
    """The kept run settings this invocation sets itself (command line or ini), not by default:
    a `--resume` takes the others from the run directory."""
    def set_(value: Any) -> bool:
        return value not in (None, "", [], ())

    return frozenset(
        name for name, (options, inis) in _GIVEN_BY.items()
        if any(set_(config.getoption(option)) for option in options) or any(set_(config.getini(ini)) for ini in inis)
    )

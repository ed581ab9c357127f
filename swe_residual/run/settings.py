"""Run settings resolved from the command line and the ini file, each bad value named
with its source (command line > ini > default), in the way pytest-timeout resolves its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from swe_residual.agents.environment import AgentEnvironment, AgentMount, parse_agent_mount, read_agent_setup
from swe_residual.errors import ConfigError
from swe_residual.run.gates import Gate
from swe_residual.handoff.views import VIEWS, parse_view

T = TypeVar("T")
BACKENDS = ("auto", "local", "docker")
# The per-item watchdog (pytest-timeout) allows the agent's budget, plus the verifier's timeout,
# plus this margin: starting the environment (a container, or a first image build), capturing
# the final diff and one re-verification. Only a harness that hangs outside the agent meets it.
WATCHDOG_MARGIN_SEC = 600.0


@dataclass(frozen=True)
class RunSettings:
    agents: tuple[str, ...]
    dataset: Path
    backend: str
    infra_retries: int
    results_dir: Path
    run_id: str | None
    timeout_multiplier: float
    max_steps: int | None
    cost_limit: float | None
    shard: tuple[int, int] | None = None
    resume: Path | None = None
    gates: tuple[Gate, ...] = ()
    model: str | None = None
    # KEY -> VALUE for the agents (`--agent-option`); per key the command line wins over the ini.
    agent_options: tuple[tuple[str, str], ...] = ()
    watchdog_margin: float = WATCHDOG_MARGIN_SEC
    # The agents' set-up script and host mounts (`--agent-setup`, `--agent-mount`).
    agent_environment: AgentEnvironment = AgentEnvironment()
    # Where pytest runs: a `cmd:` agent's relative host paths start here.
    invocation_dir: Path | None = None
    # Docker engines to run on (`--docker-host`); empty: the environment's (DOCKER_HOST or the local socket).
    docker_hosts: tuple[str, ...] = ()
    # The handoff views each Residual State is run under (`--handoff`; blind alone by default).
    handoff: tuple[str, ...] = ("blind",)
    # `--agent-name` labels, paired in order with `agents` (empty: each agent's default name).
    agent_names: tuple[str, ...] = ()

    def agent_name(self, spec: str) -> str | None:
        """The label given to the agent `spec` with `--agent-name`, if any."""
        if not self.agent_names:
            return None
        return dict(zip(self.agents, self.agent_names)).get(spec)

    def item_timeout(self, agent_timeout_sec: float, verifier_timeout_sec: float) -> float:
        """The watchdog of one item: its agent budget, its verifier's timeout and the margin."""
        return agent_timeout_sec * self.timeout_multiplier + verifier_timeout_sec + self.watchdog_margin


def resolve(
    name: str,
    cli_value: object,
    ini_value: object,
    default: T,
    parse: Callable[[str], T],
    *,
    cli_flag: str,
    ini_name: str,
) -> T:
    """The first value given among CLI, ini and default, parsed, with its source in errors."""
    for value, source in ((cli_value, f"command line {cli_flag}"), (ini_value, f"ini option {ini_name}")):
        if value is None or value == "" or value == []:
            continue
        try:
            return parse(str(value))
        except (ValueError, ConfigError) as exc:
            raise ConfigError(f"{name}: bad value {value!r} from the {source}: {exc}") from exc
    return default


def parse_non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def parse_positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be 1 or more")
    return value


def parse_positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be greater than 0")
    return value


def parse_backend(text: str) -> str:
    if text not in BACKENDS:
        raise ValueError(f"one of {', '.join(BACKENDS)}")
    return text


def parse_model(text: str) -> str:
    name = text.strip()
    if not name or any(c.isspace() for c in name):
        raise ValueError("a model name, e.g. anthropic/claude-sonnet-4-5 (no spaces)")
    return name


def parse_agent_option(text: str) -> tuple[str, str]:
    """One `KEY=VALUE`; KEY must be an option some agent understands (a typo is an error)."""
    from swe_residual.agents import AGENT_OPTION_KEYS, is_agent_option_key

    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError("expected KEY=VALUE")
    if not is_agent_option_key(key):
        raise ValueError(f"unknown key {key!r} (known: {', '.join(AGENT_OPTION_KEYS)}, or a mini-swe-agent "
                         "config key with a dot, e.g. model.model_kwargs.temperature)")
    return key, value


def resolve_agent_environment(setup_cli: str | None, setup_ini: str, mounts_cli: list[str], mounts_ini: list[str],
                              *, invocation_dir: Path, ini_dir: Path) -> AgentEnvironment:
    """`--agent-setup` and `--agent-mount` (command line relative to where pytest runs, ini
    relative to the ini file's directory); the command line's mounts replace the ini's."""
    setup = resolve("agent-setup", setup_cli, None, None, lambda text: read_agent_setup(text, invocation_dir),
                    cli_flag="--agent-setup", ini_name="residual_agent_setup")
    if setup is None:
        setup = resolve("agent-setup", None, setup_ini, None, lambda text: read_agent_setup(text, ini_dir),
                        cli_flag="--agent-setup", ini_name="residual_agent_setup")
    mounts: list[AgentMount] = []
    given = [value for value in mounts_cli if value.strip()]
    for value in given or [value for value in mounts_ini if value.strip()]:
        base = invocation_dir if given else ini_dir
        mounts.append(resolve("agent-mount", value if given else None, None if given else value, None,
                              lambda text: parse_agent_mount(text.strip(), base),
                              cli_flag="--agent-mount", ini_name="residual_agent_mounts"))
    return AgentEnvironment(setup, tuple(mounts))


def resolve_agent_names(cli_values: list[str], ini_values: list[str], agents: tuple[str, ...]) -> tuple[str, ...]:
    """`--agent-name` (repeatable) or the ini's `residual_agent_name`: one label per agent, paired
    with the agents in the order they are given; a count that differs is an error, not a guess."""
    given = [value.strip() for value in cli_values] if cli_values else [value.strip() for value in ini_values]
    source = "command line --agent-name" if cli_values else "ini option residual_agent_name"
    if not given:
        return ()
    if any(not name or any(c.isspace() for c in name) for name in given):
        raise ConfigError(f"agent-name: {given!r} from the {source}: a label must be non-empty, without spaces")
    if len(given) != len(agents):
        raise ConfigError(f"agent-name: {len(given)} label(s) from the {source} for {len(agents)} agent(s) "
                          f"({', '.join(agents) or 'none'}): give one --agent-name per --agent, in the same order")
    if len(set(given)) != len(given):
        raise ConfigError(f"agent-name: the labels {', '.join(given)} from the {source} name two agents alike")
    return tuple(given)


def resolve_handoff(cli_values: list[str], ini_values: list[str]) -> tuple[str, ...]:
    """`--handoff` (repeatable) or the ini's `residual_handoff`: the command line's views replace
    the ini's. In the tables' order, each once; `blind` alone when neither names one."""
    given = [value for value in cli_values if value.strip()]
    chosen = {
        resolve("handoff", value if given else None, None if given else value, "", parse_view,
                cli_flag="--handoff", ini_name="residual_handoff")
        for value in given or [value for value in ini_values if value.strip()]
    }
    return tuple(view for view in VIEWS if view in chosen) or ("blind",)


def resolve_agent_options(cli_values: list[str], ini_values: list[str]) -> tuple[tuple[str, str], ...]:
    """Merge `--agent-option` and the ini's `residual_agent_options`: per key, CLI > ini.

    Within one source a repeated key's last value wins, except `env`, whose names accumulate.
    """
    merged: dict[str, str] = {}
    for values, flag in ((ini_values, "ini"), (cli_values, "cli")):
        source: dict[str, str] = {}
        for raw in values:
            if not raw.strip():
                continue
            key, value = resolve(
                "agent-option", raw if flag == "cli" else None, raw if flag == "ini" else None, ("", ""),
                parse_agent_option, cli_flag="--agent-option", ini_name="residual_agent_options",
            )
            if key == "env" and source.get("env"):
                value = f"{source['env']},{value}"
            source[key] = value
        merged.update(source)
    return tuple(merged.items())

"""One agent name, one configuration: records of an agent name carrying two configuration hashes
are two agents, never merged silently (swe_residual/agents/identity.py says what the hash holds)."""

from __future__ import annotations

from collections.abc import Sequence

from swe_residual.agents.identity import AgentConfigConflict
from swe_residual.trial.record_model import RunRecord

__all__ = ["check_agent_configs", "record_config_hash"]


def record_config_hash(record: RunRecord) -> str | None:
    """The configuration hash of a record; None for records written before hashes existed."""
    config = record.agent_config
    return config.hash if config is not None else None


def check_agent_configs(records: Sequence[RunRecord], sources: Sequence[str] | None = None) -> None:
    """Raise `AgentConfigConflict` when one agent name has two configuration hashes.

    `sources` (parallel to `records`, e.g. "results.jsonl:12") say where each record came
    from; without them the record's run id does. Records without a hash are not compared.
    """
    first: dict[str, tuple[str, str]] = {}
    for index, record in enumerate(records):
        digest = record_config_hash(record)
        if digest is None:
            continue
        agent = str(record.agent)
        where = sources[index] if sources is not None and index < len(sources) else None
        where = f"{where}, run {record.run_id}" if where else f"run {record.run_id}"
        seen = first.setdefault(agent, (digest, where))
        if seen[0] != digest:
            raise AgentConfigConflict(
                f"agent {agent!r} has two configurations: {seen[0]} (from {seen[1]}) and {digest} (from {where}); "
                "records of different configurations are different agents: give one of them its own "
                "--agent-name, or report them separately"
            )

"""An agent's identity across records: its name and the hash of its configuration.

A record's `agent` is a name (the harness plus its model, or an `--agent-name` label); its
`agent_config.hash` digests everything that configured that agent (spec, model, options,
budget settings, harness version, set-up script and mounts). Records are merged by name
(`records.record_key`), so one name with two configurations would silently mix, or overwrite,
two agents' numbers: that is an error naming both, never a silent merge.

The handoff view is not part of the hash: it is part of the item's key (a `trace` and a
`blind` run of one state are two items), and the Clean Starts of the same run have none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from swe_residual.errors import SuiteError
from swe_residual.trial.record_model import RecordLike, as_record, as_records

HASH_CHARS = 16


class AgentConfigConflict(SuiteError):
    """Records of one agent name carry two configuration hashes."""


def config_hash(config: Mapping[str, Any]) -> str:
    """A stable digest of an agent's configuration (its `hash` key left out)."""
    canonical = json.dumps({k: v for k, v in config.items() if k != "hash"}, sort_keys=True, default=str,
                           ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:HASH_CHARS]


def with_hash(config: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with its `hash` (what every record's `agent_config` holds)."""
    return {**config, "hash": config_hash(config)}


def record_config_hash(record: RecordLike) -> str | None:
    """The configuration hash of a record; None for records written before hashes existed."""
    config = as_record(record).agent_config
    return config.hash if config is not None else None


def check_agent_configs(records: Sequence[RecordLike], sources: Sequence[str] | None = None) -> None:
    """Raise `AgentConfigConflict` when one agent name has two configuration hashes.

    `sources` (parallel to `records`, e.g. "results.jsonl:12") say where each record came
    from; without them the record's run id does. Records without a hash are not compared.
    """
    first: dict[str, tuple[str, str]] = {}
    for index, record in enumerate(as_records(records)):
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

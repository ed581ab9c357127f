"""Harbor's task model as the loader needs it: its keys, to warn about the ones it does not define
(as `harbor lint` does with unknown-config-field; Harbor itself ignores them), and its network
modes, resolved as Harbor resolves them."""

from __future__ import annotations

import difflib
from typing import Any

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.toml_fields import FieldReader

# Harbor's network modes, and the Docker network each one runs on here. `allowlist` (egress
# to named hosts only) needs Harbor's egress proxy: no backend here can enforce it.
NETWORK_MODES = ("no-network", "public", "allowlist")
DOCKER_NETWORKS = {"no-network": "none", "public": "bridge"}
# Docker's spellings, which Harbor's schema rejects: the error names Harbor's value.
DOCKER_SPELLINGS = {"none": "no-network", "bridge": "public"}

# The tables and keys of Harbor's TaskConfig model (pydantic, extra fields ignored): a key not
# listed is ignored by Harbor and reported by `harbor lint` as unknown-config-field. `_FREE`
# marks free-form tables ([metadata], env maps); a one-element list is a list of tables.
_FREE = "free-form"
_HEALTHCHECK = dict.fromkeys(
    ("command", "interval_sec", "timeout_sec", "start_period_sec", "start_interval_sec", "retries")
)
_NETWORK = dict.fromkeys(("network_mode", "allowed_hosts"))
_ENVIRONMENT: dict[str, Any] = {
    **_NETWORK,
    **dict.fromkeys((
        "build_timeout_sec", "docker_image", "os", "cpus", "memory_mb", "storage_mb", "gpus",
        "gpu_types", "skills_dir", "workdir", "allow_internet", "memory", "storage",
    )),
    "tpu": dict.fromkeys(("type", "topology")),
    "mcp_servers": [{**dict.fromkeys(("name", "transport", "url", "command", "args")), "headers": _FREE}],
    "env": _FREE,
    "healthcheck": _HEALTHCHECK,
}
_AGENT: dict[str, Any] = {**_NETWORK, "timeout_sec": None, "user": None}
_VERIFIER: dict[str, Any] = {
    **_NETWORK,
    **dict.fromkeys(("timeout_sec", "user", "environment_mode")),
    "env": _FREE,
    "environment": _ENVIRONMENT,
    "collect": [dict.fromkeys(("command", "service", "timeout_sec", "user"))],
}
_ARTIFACTS = [dict.fromkeys(("source", "destination", "exclude", "service"))]
TASK_SCHEMA: dict[str, Any] = {
    **dict.fromkeys(("schema_version", "version", "source", "multi_step_reward_strategy")),
    "task": {
        **dict.fromkeys(("name", "version", "description", "keywords")),
        "authors": [dict.fromkeys(("name", "email"))],
    },
    "metadata": _FREE,
    "verifier": _VERIFIER,
    "agent": _AGENT,
    "environment": _ENVIRONMENT,
    "solution": {"env": _FREE},
    "steps": [{
        **dict.fromkeys(("name", "min_reward")), "agent": _AGENT, "verifier": _VERIFIER,
        "healthcheck": _HEALTHCHECK, "artifacts": _ARTIFACTS,
    }],
    "artifacts": _ARTIFACTS,
}


def unknown_fields(value: Any, schema: Any, prefix: str = "") -> list[str]:
    """Dotted names of the keys Harbor's model does not define (`harbor lint`'s rule)."""
    if isinstance(schema, list) and isinstance(value, list):
        return [name for index, item in enumerate(value)
                for name in unknown_fields(item, schema[0], f"{prefix}[{index}]")]
    if not isinstance(schema, dict) or not isinstance(value, dict):
        return []
    found = []
    for key, child in value.items():
        location = f"{prefix}.{key}" if prefix else key
        if key in schema:
            found.extend(unknown_fields(child, schema[key], location))
        else:
            close = difflib.get_close_matches(key, list(schema), n=1)
            found.append(location + (f" (did you mean {close[0]!r}?)" if close else ""))
    return found


def network_value(reader: FieldReader, table: str) -> str | None:
    """A phase or environment's Harbor `network_mode` as written (None when absent)."""
    dotted = f"{table}.network_mode"
    value = reader.get(dotted, str, None)
    if value is not None and value not in NETWORK_MODES:
        if value in DOCKER_SPELLINGS:
            raise DatasetError(
                reader.path,
                f"unknown network mode {value!r}: that is Docker's spelling; Harbor's value is "
                f"{DOCKER_SPELLINGS[value]!r} (one of {', '.join(NETWORK_MODES)})",
                field=dotted,
            )
        raise DatasetError(reader.path, f"unknown network mode {value!r} (one of {', '.join(NETWORK_MODES)})",
                           field=dotted)
    if value == "allowlist":
        raise DatasetError(
            reader.path,
            "network_mode 'allowlist' cannot be enforced by this suite (it needs Harbor's egress "
            "proxy); use 'no-network' or 'public'",
            field=dotted,
        )
    if reader.get(f"{table}.allowed_hosts", list, None) is not None:
        raise DatasetError(reader.path, "allowed_hosts applies only to network_mode 'allowlist', which this "
                           "suite cannot enforce", field=f"{table}.allowed_hosts")
    return value


def baseline_network(reader: FieldReader, table: str) -> str:
    """An environment table's baseline: network_mode, else the deprecated allow_internet, else
    Harbor's default, public."""
    value = network_value(reader, table)
    allow_internet = reader.get(f"{table}.allow_internet", bool, None)
    if value is not None:
        return value
    if allow_internet is not None:
        return "public" if allow_internet else "no-network"
    return "public"

"""An agent's identity across records: its name and the hash of its configuration.

A record's `agent` is a name (the harness plus its model, or an `--agent-name` label); its
`agent_config.hash` digests everything that configured that agent (spec, model, options,
budget settings, harness version, set-up script and mounts). Records are merged by name
(`records.record_key`), so one name with two configurations would silently mix, or overwrite,
two agents' numbers: that is an error naming both, never a silent merge
(`check_agent_configs`, swe_residual/metrics/agent_configs.py).

An agent's program is part of its configuration, by content: a `cmd:` agent's host files
(the sha256 of each file copied in, `host_files.HostProgram.digests`) and a `module:` agent's
source (`module_files`) are in `agent_config.files`, so two programs at one path are two
configurations, and the same bytes anywhere are one.

The handoff view is not part of the hash: it is part of the item's key (a `trace` and a
`blind` run of one state are two items), and the Clean Starts of the same run have none.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import SuiteError

HASH_CHARS = 16
MAX_PACKAGE_FILES = 500  # a package's sources hashed with a `module:` agent (more: the first ones)


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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@lru_cache(maxsize=32)
def module_files(module_name: str) -> tuple[tuple[str, str], ...]:
    """(path, sha256) of an imported module's source: its file, or every `.py` file of a
    package, named relative to the directory it is imported from (`pkg/agent.py`), so the
    same sources give the same names wherever the checkout is. Read once per process, like
    the import itself. Nothing for a module without a source file (built in, compiled)."""
    module = sys.modules.get(module_name)
    source = getattr(module, "__file__", None)
    if module is None or not source:
        return ()
    path = Path(source).resolve()
    depth = module_name.count(".") + (1 if hasattr(module, "__path__") else 0)
    root = path.parents[depth] if depth < len(path.parents) else path.parent
    if hasattr(module, "__path__"):  # a package: its Python files, cheaply (no byte code, no data)
        files = sorted(p for p in path.parent.rglob("*.py") if "__pycache__" not in p.parts)[:MAX_PACKAGE_FILES]
    else:
        files = [path]
    found: list[tuple[str, str]] = []
    for file in files:
        try:
            found.append((file.relative_to(root).as_posix(), _sha256(file)))
        except (OSError, ValueError):
            continue
    return tuple(found)


def agent_files(spec: str | None, agent: Any) -> dict[str, str]:
    """What an agent's program is, by content, for `agent_config.files`: a `module:` agent's
    sources (the module the spec names and the one defining its class); a `cmd:` agent says its
    own (`CommandAgent.describe`); the built-in agents are the harness (`harness_version`)."""
    if not spec or not spec.startswith("module:"):
        return {}
    target = spec[len("module:"):]
    named = target.rpartition(":")[0] if ":" in target else target.rpartition(".")[0]
    found: dict[str, str] = {}
    for module_name in dict.fromkeys((named, type(agent).__module__)):
        found.update(module_files(module_name))
    return found

"""Keeping secrets out of everything the suite writes.

Model API keys reach agents by environment only. Before a record or a trajectory is written,
the values of the host's secret-looking variables (and of those passed to an agent by name,
`--agent-option env=NAME`) are replaced, wherever an agent may have echoed them.
"""

from __future__ import annotations

import os
import re
from typing import Any

# Host variables whose values never reach a record, a trajectory or a report (model API keys
# and the like), plus those passed to agents by name (`--agent-option env=NAME`).
SECRET_NAME = re.compile(r"(^|_)(API_KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|PASSWORD)$", re.IGNORECASE)
SECRET_OPTION_KEY = re.compile(r"(api_key|token|secret|password)", re.IGNORECASE)
SECRET_HEADER = re.compile(r"^(authorization|proxy-authorization|x-api-key|cookie)$", re.IGNORECASE)
MIN_SECRET_CHARS = 8  # shorter values ("1", "true") would blank out ordinary text
REDACTED = "[REDACTED]"


def secret_values(extra_names: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Values of the host's secret-looking variables, longest first (so no prefix leaks)."""
    found = {value for name, value in os.environ.items()
             if (SECRET_NAME.search(name) or name in extra_names) and len(value) >= MIN_SECRET_CHARS}
    return sorted(found, key=len, reverse=True)


def redact(value: Any, secrets: list[str]) -> Any:
    """`value` (a record, a trajectory) with every secret value replaced, recursively."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(item, secrets) for item in value]
    return value


def redact_options(value: Any) -> Any:
    """An agent's options with every value under a secret-looking key (`SECRET_OPTION_KEY`,
    or an authorization header) replaced, at any depth: they go into records and run.json."""
    if isinstance(value, dict):
        return {key: REDACTED if isinstance(key, str) and (SECRET_OPTION_KEY.search(key) or SECRET_HEADER.search(key))
                else redact_options(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_options(item) for item in value]
    return value

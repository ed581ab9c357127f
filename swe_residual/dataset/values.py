"""The closed sets of values a run record holds: outcome, termination, start and track.

Each is a `StrEnum`, so a member is the string it stands for: it compares equal to it, hashes
as it, formats as it and `json.dumps` writes it as that plain string. Records, summaries and
files therefore read exactly as they did when these were string literals; code names them by
member instead of spelling the string again. (`repr` differs, so messages that quote a value
with `!r` quote `str(value)`.)

This module imports nothing of the suite: every layer (agents, dataset, environments,
metrics) may use it.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Outcome", "Start", "Termination", "Track"]


class Outcome(StrEnum):
    """How an item is scored (docs/records.md, `outcome`)."""

    SUCCESS = "success"  # the agent declared the task done and the valid verdict passes
    FAILURE = "failure"  # a valid verdict that fails, an exhausted budget, the agent's own error
    INFRA_ERROR = "infra_error"  # no measurement after every retry: excluded from the metrics


class Termination(StrEnum):
    """How the agent's run ended (docs/records.md, `termination`)."""

    SUBMITTED = "submitted"
    TIME_LIMIT = "time_limit"
    STEP_LIMIT = "step_limit"
    COST_LIMIT = "cost_limit"
    # What the agent's environment wrote passed the task's `[environment] storage_mb`: the agent
    # was stopped at once (swe_residual/environments/disk_usage.py).
    DISK_LIMIT = "disk_limit"
    # What ran in the agent's container reached the task's `memory_mb`: the kernel killed a
    # process of it within its own limit (swe_residual/environments/docker/oom.py).
    MEMORY_LIMIT = "memory_limit"
    AGENT_ERROR = "agent_error"
    # No valid verdict on the agent's final state (verified again in a fresh instance of it)
    # while the verifier gives one on the task's clean state: the agent's failure.
    VERIFIER_FAILED = "verifier_failed_on_final_state"
    INFRA_ERROR = "infra_error"


class Start(StrEnum):
    """Where an item starts: the task's clean state, or a predecessor's Residual State."""

    CLEAN = "clean"
    RESIDUAL = "residual"


class Track(StrEnum):
    """The two tracks (swe_residual/dataset/tracks.py): a repository, or a whole machine."""

    REPO = "repo"
    MACHINE = "machine"


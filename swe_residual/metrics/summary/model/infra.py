"""The infrastructure parts of the summary (``summary["infra"]``: items, retries, exclusions,
the verifier's failures, time per phase, machine-track fidelity) and the oracle's check
(``summary["oracle"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from swe_residual.metrics.summary.part import Number, Omit, Part

__all__ = [
    "AgentInfra", "ContradictedItem", "ExcludedItem", "FailedItem", "Fidelity", "FidelityState", "ImageUse", "Infra",
    "OracleMiss", "OracleSummary",
]  # fmt: skip

#: An item under a handoff view names it; a blind one has no such key at all.
View = Annotated[str | None, Omit.EMPTY]


class ExcludedItem(Part):
    """An item excluded by an unresolved infrastructure error (never counted as a failure)."""

    agent: str | None = None
    task: str | None = None
    state: str | None = None
    error: str | None = None
    handoff: View = None


class FailedItem(Part):
    """An item whose final state the verifier could not grade while the clean state grades (a failure)."""

    agent: str | None = None
    task: str | None = None
    state: str | None = None
    handoff: View = None


class ContradictedItem(Part):
    """An item whose passing reward file its per-test reports contradicted (a failure, counted)."""

    agent: str | None = None
    task: str | None = None
    state: str | None = None
    reason: str | None = None
    handoff: View = None


class AgentInfra(Part):
    """Items, attempts and the median seconds of each phase (``DURATION_KEYS``) of one agent."""

    items: int = 0
    attempts: int = 0
    setup_sec: Number | None = None
    agent_sec: Number | None = None
    verify_sec: Number | None = None
    wall_sec: Number | None = None


class FidelityState(Part):
    task: str
    state: str
    fidelity: str | None = None


class Fidelity(Part):
    """How the machine-track states were restored: counts per kind, and each state."""

    counts: Mapping[str, int] = {}
    states: tuple[FidelityState, ...] = ()


class ImageUse(Part):
    """One image the run's starts ran on and how the suite got it (the records' `image`):
    ``origin`` local, pulled, built, recipe or stand-in; ``stands_in_for`` names the public image
    a stand-in (or the base the image was built on) replaces; ``tasks`` the tasks that used it."""

    reference: str
    origin: str
    image_id: str
    digest: Annotated[str | None, Omit.NONE] = None
    stands_in_for: Annotated[str | None, Omit.NONE] = None
    how: Annotated[str | None, Omit.NONE] = None
    tasks: tuple[str, ...] = ()


class Infra(Part):
    retried: int = 0
    unresolved: int = 0
    items: int = 0
    excluded: tuple[ExcludedItem, ...] = ()
    verifier_failed: tuple[FailedItem, ...] = ()
    by_agent: Mapping[str, AgentInfra] = {}
    #: items whose passing reward was contradicted (failures, counted); the key only when there are some
    contradicted: Annotated[tuple[ContradictedItem, ...], Omit.EMPTY] = ()
    #: only with machine-track states (section 5's keys stay as they are without)
    fidelity: Annotated[Fidelity | None, Omit.NONE] = None
    #: the images the items ran on (docker backend); the key only when the records name some
    images: Annotated[tuple[ImageUse, ...], Omit.EMPTY] = ()


class OracleMiss(Part):
    task: str | None = None
    state: str | None = None
    outcome: str | None = None
    termination: str | None = None
    message: str | None = None


class OracleSummary(Part):
    """The starts the reference solution did not solve (a fault of the task, never a score)."""

    starts: int | None = None
    unsolved: tuple[OracleMiss, ...] = ()

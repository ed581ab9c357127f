"""The run record as a typed model: one finished item, one line of `results.jsonl`.

docs/records.md is the contract. Every source of records builds a `RunRecord`: the runner
(swe_residual/trial/runner.py), the placeholder of an item lost outright
(`RunRecord.infra_error`), Harbor's trials (swe_residual/harbor/results.py) and imported Stage I
runs (swe_residual/importing/runs.py). `to_json` gives the dict the file has always held: the
same keys in the same order, so the bytes of `results.jsonl` do not depend on this model.

Not every source knows every field: a placeholder has no verification account, a Harbor trial
no budget, a record of an older suite no `verifier_log`. Such fields are named in `absent`:
they read as their empty value (None, an empty tuple) and `to_json` leaves them out, so each
source's records keep their own set of keys. `handoff` and `harbor_trial` are written only
when set (a blind item, and every record of the suite's own runs, has neither).

`from_json` reads a record of any age as the readers always did (`record.get(...)`): a missing
field is absent and reads as empty, a value outside the enums stays as it was, and a key this
model does not know is kept in `extra` and written back after the known ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, TypeVar, Union

from swe_residual.trial.values import Outcome, Start, Termination, Track

__all__ = [
    "AgentConfig", "Attempt", "Canary", "DiskLimit", "DURATION_FIELDS", "Durations", "HARNESS_FIELDS", "RECORD_SCHEMA",
    "RecordBudget", "RecordLike", "RunRecord", "Tokens", "as_member", "as_record", "as_records",
]  # fmt: skip

RECORD_SCHEMA = 1

#: The phases of `durations`, in the order they are written.
DURATION_FIELDS = ("setup_sec", "agent_sec", "verify_sec", "total_sec", "wall_sec", "agent_setup_sec", "agent_run_sec")

_E = TypeVar("_E", bound=Enum)


def as_member(kind: type[_E], value: Any) -> Any:
    """`value` as a member of `kind` when it is one of its values; otherwise as it was (an
    unknown or missing value is the readers' to judge, as it always was)."""
    try:
        return kind(value)
    except ValueError:
        return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json(value: Any) -> Any:
    """A field's value as JSON holds it: enum members as plain strings (a record crosses to the
    xdist controller, which takes only plain types), tuples as lists, parts by their `to_json`."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_json(item) for item in value]
    if isinstance(value, Mapping):
        return dict(value)
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


def _strings(value: Any) -> tuple[str, ...] | None:
    return tuple(value) if isinstance(value, (list, tuple)) else None


@dataclass(frozen=True)
class Durations:
    """Seconds per phase (`durations`, and each attempt's); a phase that did not run is None
    and not written."""

    setup_sec: float | None = None
    agent_sec: float | None = None
    verify_sec: float | None = None
    total_sec: float | None = None
    wall_sec: float | None = None
    # Within agent_sec, for an agent that times its own phases (a Harbor agent's setup() and
    # run(), each under its own timeout as Harbor measures them); not written otherwise.
    agent_setup_sec: float | None = None
    agent_run_sec: float | None = None

    def to_json(self) -> dict[str, float]:
        return {name: value for name in DURATION_FIELDS if (value := getattr(self, name)) is not None}

    @classmethod
    def from_json(cls, data: Any) -> Durations:
        if not isinstance(data, Mapping):
            return cls()
        return cls(**{name: data[name] for name in DURATION_FIELDS if _number(data.get(name))})


@dataclass(frozen=True)
class Canary:
    """The verifier on the task's clean state, when an attempt asked for it."""

    valid: bool
    reward: float | None
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "reward": self.reward, "error": self.error}

    @classmethod
    def from_json(cls, data: Any) -> Canary | None:
        if not isinstance(data, Mapping):
            return None
        return cls(bool(data.get("valid")), data.get("reward"), data.get("error"))


@dataclass(frozen=True)
class Attempt:
    """One attempt at an item. `reverified`, `durations`, `canary` and `harbor_trial` are None
    where the source does not record them (a placeholder, a Harbor trial) and then not written."""

    attempt: int
    outcome: Outcome | None
    termination: Termination | None = None
    error: str | None = None
    reverified: bool | None = None
    durations: Durations | None = None
    canary: Canary | None = None
    harbor_trial: str | None = None  # the Harbor trial it was, for records read from Harbor

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"attempt": self.attempt, "outcome": _json(self.outcome),
                               "termination": _json(self.termination), "error": self.error}
        for name in ("reverified", "durations", "canary", "harbor_trial"):
            value = getattr(self, name)
            if value is not None:
                out[name] = _json(value)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Attempt:
        data = data if isinstance(data, Mapping) else {}
        return cls(
            attempt=data.get("attempt"), outcome=as_member(Outcome, data.get("outcome")),  # type: ignore[arg-type]
            termination=as_member(Termination, data.get("termination")), error=data.get("error"),
            reverified=data.get("reverified"),
            durations=Durations.from_json(data["durations"]) if "durations" in data else None,
            canary=Canary.from_json(data.get("canary")), harbor_trial=data.get("harbor_trial"),
        )


@dataclass(frozen=True)
class RecordBudget:
    """The run's budget for the item (`budget`): the per-task time, and the run's limits."""

    timeout_sec: float | None
    max_steps: int | None
    cost_limit: float | None

    def to_json(self) -> dict[str, Any]:
        return {"timeout_sec": self.timeout_sec, "max_steps": self.max_steps, "cost_limit": self.cost_limit}

    @classmethod
    def from_json(cls, data: Any) -> RecordBudget | None:
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("timeout_sec"), data.get("max_steps"), data.get("cost_limit"))


@dataclass(frozen=True)
class Tokens:
    """The model's prompt and completion tokens over the final attempt, as reported."""

    prompt: int | None
    completion: int | None

    def to_json(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "completion": self.completion}

    @property
    def total(self) -> int | None:
        """prompt + completion; None unless both are known numbers."""
        if _number(self.prompt) and _number(self.completion):
            return self.prompt + self.completion  # type: ignore[operator]
        return None

    @classmethod
    def from_json(cls, data: Any) -> Tokens | None:
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("prompt"), data.get("completion"))


@dataclass(frozen=True)
class DiskLimit:
    """How the task's `[environment] storage_mb` was enforced on the final attempt (`disk_limit`,
    written only when the task sets one): `enforcement` is "watched", "storage_opt" (the engine
    bounds the writable layer, and it is watched too) or "not_enforced" (`how` says why)."""

    storage_mb: int
    enforcement: str
    how: str
    peak_bytes: int | None = None  # the most the agent's environment held at a reading
    readings: int = 0
    interval_sec: float | None = None  # the longest pause between two readings
    exceeded: bool = False
    error: str | None = None  # why the readings stopped early, if they did

    def to_json(self) -> dict[str, Any]:
        return {"storage_mb": self.storage_mb, "enforcement": self.enforcement, "how": self.how,
                "peak_bytes": self.peak_bytes, "readings": self.readings, "interval_sec": self.interval_sec,
                "exceeded": self.exceeded, "error": self.error}

    @classmethod
    def from_json(cls, data: Any) -> DiskLimit | None:
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("storage_mb"), data.get("enforcement"), data.get("how"),  # type: ignore[arg-type]
                   data.get("peak_bytes"), data.get("readings") or 0, data.get("interval_sec"),
                   bool(data.get("exceeded")), data.get("error"))


@dataclass(frozen=True)
class AgentConfig:
    """What configured the agent, and its digest (`agent_config`).

    `settings` is as free-form as the agents are: the runner's spec, model, options, limits and
    environment, followed by the harness's own account (mini-swe-agent's version, model class,
    config), or Harbor's agent, version and model. Only `hash` has a meaning of its own: one
    agent name with two hashes is two configurations (swe_residual/agents/identity.py)."""

    settings: Mapping[str, Any]
    hash: str | None

    @classmethod
    def hashed(cls, settings: Mapping[str, Any]) -> AgentConfig:
        # Imported here: agents.identity reads records (it imports this module), and the agents
        # package is more than a reader of records needs.
        from swe_residual.agents.identity import config_hash

        return cls(dict(settings), config_hash(settings))

    @property
    def spec(self) -> Any:
        """The `--agent` value (None for records of other sources)."""
        return self.settings.get("spec")

    def to_json(self) -> dict[str, Any]:
        return {**self.settings, **({} if self.hash is None else {"hash": self.hash})}

    @classmethod
    def from_json(cls, data: Any) -> AgentConfig | None:
        if not isinstance(data, Mapping):
            return None
        digest = data.get("hash")
        return cls({k: v for k, v in data.items() if k != "hash"}, digest if isinstance(digest, str) else None)


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One run record (docs/records.md). The fields are declared in the order `to_json` writes
    them; those without a default are the ones every record holds (`records.REQUIRED_FIELDS`).
    The containers (`tests`, `rewards`, ...) are the record's own: read them, do not change them."""

    schema: int = RECORD_SCHEMA
    run_id: str
    agent: str
    task: str
    track: Track
    start: Start
    state: str | None
    rollout: int = 0  # which run of the start (`--rollouts`, 0..K-1); a record of an older suite has none: 0
    predecessor: str | None
    handoff: str | None = None  # a non-blind view of a Residual State item; written only when set
    outcome: Outcome | None  # None only in an imported Stage I run, before Stage IV's verifier
    reward: float | None
    submitted: bool
    termination: Termination | None
    tests: Mapping[str, str] | None
    initial_tests: Mapping[str, str] | None
    steps: int | None
    final_patch: str | None
    trajectory: str | None
    # A Harbor agent's ATIF trajectory, kept beside `trajectory`, and its own logs directory
    # (what it left in /logs/agent): paths relative to the run directory; written only when set.
    atif_trajectory: str | None = None
    agent_logs: str | None = None
    attempts: tuple[Attempt, ...]
    durations: Durations
    inherited_patch: str | None = None
    reference_files: tuple[str, ...] | None = None
    opened_files: tuple[str, ...] | None = None  # None: unknown (no trajectory), not "none"
    inspected: bool | None = None
    budget: RecordBudget | None = None
    agent_config: AgentConfig | None = None
    cost: float | None = None
    tokens: Tokens | None = None
    fidelity: str | None = None
    engine: str | None = None
    message: str | None = None
    error: str | None = None
    verifier_notes: tuple[str, ...] = ()
    rewards: Mapping[str, Any] | None = None
    artifacts: tuple[str, ...] = ()
    verifier_environment: str | None = None
    collect: tuple[Mapping[str, Any], ...] = ()
    verifier_log: str | None = None
    harbor_trial: str | None = None  # a record read from Harbor: its trial; written only when set
    # Why a passing reward file was overruled by the per-test reports (swe_residual/verifier/claims.py):
    # `reward` is then 0 and `rewards` keeps the file's figures; written only when set.
    contradicted: str | None = None
    disk_limit: DiskLimit | None = None  # the task's storage_mb and how it was enforced; written only when set
    # Stage I runs (repo track): the predecessor's commits flattened, `git diff BASE HEAD` (the
    # state's committed.patch); written only when set.
    committed_patch: str | None = None
    # Machine track: the share of the predecessor's file changes (the state's machine.json) still
    # as it left them when the agent stopped (Kept on this track); written only when set.
    machine_kept: float | None = None
    # Not fields of the record itself: keys this model does not know, and the fields left out.
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = frozenset()

    @classmethod
    def infra_error(cls, *, run_id: str, agent: str, task: str, track: Track, state: str | None,
                    predecessor: str | None, error: str, handoff: str | None = None, rollout: int = 0) -> RunRecord:
        """The record of an item whose run was lost outright (its worker process died, its
        files could not be saved): an infrastructure error, with nothing measured."""
        return cls(
            run_id=run_id, agent=agent, task=task, track=track,
            start=Start.CLEAN if state is None else Start.RESIDUAL, state=state, rollout=rollout,
            predecessor=predecessor, handoff=handoff, outcome=Outcome.INFRA_ERROR, reward=None, submitted=False,
            termination=Termination.INFRA_ERROR, tests=None, initial_tests=None, steps=None, final_patch=None,
            trajectory=None,
            attempts=(Attempt(1, Outcome.INFRA_ERROR, Termination.INFRA_ERROR, error),),
            durations=Durations(), error=error, absent=PLACEHOLDER_ABSENT,
        )

    def to_json(self) -> dict[str, Any]:
        """The record as `results.jsonl` holds it: plain JSON types, in the contract's order."""
        out: dict[str, Any] = {}
        for name in _JSON_FIELDS:
            value = getattr(self, name)
            if name in self.absent or (name in _WRITTEN_WHEN_SET and value is None):
                continue
            out[name] = _json(value)
        out.update((key, value) for key, value in self.extra.items() if key not in out)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        """A record as read from a results file (or written by hand in a test): see the module."""
        get = data.get
        agent_config = get("agent_config")
        return cls(
            schema=get("schema"), run_id=get("run_id"), agent=get("agent"), task=get("task"),
            track=as_member(Track, get("track")), start=as_member(Start, get("start")), state=get("state"),
            rollout=_rollout(get("rollout")), predecessor=get("predecessor"), handoff=get("handoff"), outcome=as_member(Outcome, get("outcome")),
            reward=get("reward"), submitted=get("submitted"), termination=as_member(Termination, get("termination")),
            tests=get("tests"), initial_tests=get("initial_tests"), steps=get("steps"),
            final_patch=get("final_patch"), trajectory=get("trajectory"),
            atif_trajectory=get("atif_trajectory"), agent_logs=get("agent_logs"),
            attempts=tuple(Attempt.from_json(a) for a in get("attempts") or ()),
            durations=Durations.from_json(get("durations")),
            inherited_patch=get("inherited_patch"), reference_files=_strings(get("reference_files")),
            opened_files=_strings(get("opened_files")), inspected=get("inspected"),
            budget=RecordBudget.from_json(get("budget")), agent_config=AgentConfig.from_json(agent_config),
            cost=get("cost"), tokens=Tokens.from_json(get("tokens")), fidelity=get("fidelity"),
            engine=get("engine"), message=get("message"), error=get("error"),
            verifier_notes=_strings(get("verifier_notes")) or (), rewards=get("rewards"),
            artifacts=_strings(get("artifacts")) or (), verifier_environment=get("verifier_environment"),
            collect=tuple(get("collect") or ()), verifier_log=get("verifier_log"), harbor_trial=get("harbor_trial"),
            contradicted=get("contradicted"),
            disk_limit=DiskLimit.from_json(get("disk_limit")), committed_patch=get("committed_patch"),
            machine_kept=get("machine_kept"),
            extra={key: value for key, value in data.items() if key not in _FIELD_NAMES},
            absent=frozenset(name for name in _JSON_FIELDS if name not in data and name not in _WRITTEN_WHEN_SET),
        )

    def has(self, name: str) -> bool:
        """Whether the record's JSON holds `name` (a field, or a key in `extra`)."""
        if name in self.extra:
            return True
        if name not in _JSON_FIELDS or name in self.absent:
            return False
        return name not in _WRITTEN_WHEN_SET or getattr(self, name) is not None


_FIELD_NAMES = frozenset(f.name for f in fields(RunRecord))
def _rollout(value: Any) -> int:
    """A record's rollout index; 0 when it has none (a record of an older suite, or one run per start)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


_JSON_FIELDS = tuple(f.name for f in fields(RunRecord) if f.name not in ("extra", "absent"))
_WRITTEN_WHEN_SET = frozenset({"handoff", "harbor_trial", "contradicted", "disk_limit", "committed_patch",
                               "atif_trajectory", "agent_logs", "machine_kept"})

#: What only the suite's own runner records: the budget, the machine state's restoration, the
#: engine, and the account of the verification (notes, artifacts, collect steps, its log).
HARNESS_FIELDS = frozenset({
    "budget", "fidelity", "engine", "verifier_notes", "artifacts", "verifier_environment", "collect",
    "verifier_log",
})
#: An item lost outright has its identity, its outcome, its one attempt and its error, no more.
PLACEHOLDER_ABSENT = HARNESS_FIELDS | {
    "inherited_patch", "reference_files", "opened_files", "inspected", "agent_config", "cost", "tokens",
    "message", "rewards",
}

RecordLike = Union[RunRecord, Mapping[str, Any]]


def as_record(record: RecordLike) -> RunRecord:
    """A record read from JSON (or built by hand) as a `RunRecord`; a `RunRecord` as it is."""
    return record if isinstance(record, RunRecord) else RunRecord.from_json(record)


def as_records(records: Iterable[RecordLike]) -> list[RunRecord]:
    return [as_record(record) for record in records]

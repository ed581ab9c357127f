"""The summary as typed parts: what ``summary.json`` holds, read by attribute.

Each part is a frozen dataclass with ``from_json`` (a dict as ``summary.json`` holds it) and
``to_json`` (exactly that dict again: the same keys in the same order, nothing rounded), so the
file's contract (``schema`` 1, docs/) is unchanged while the renderers read ``m.gap`` instead of
``m.get("gap")``. :func:`swe_residual.summary.aggregate.summarize` builds a :class:`Summary` from
run records; ``build_summary`` is its ``to_json()``.

``from_json`` is lenient the way the renderers always were: a key a hand-written or older
summary lacks reads as missing (None, 0 or empty), never as an error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from swe_residual.metrics.acceptance import ACCEPTANCE_KEYS
from swe_residual.metrics.intervals import Intervals, Uncertainty

__all__ = [
    "AcceptanceBias", "AgentInfra", "Power", "VarianceSplit", "AgentSummary", "Comparison", "Disagreement", "DroppedTask", "ExcludedItem", "FailedItem", "Fidelity",
    "FidelityState", "HandoffView", "Infra", "Intervals", "OracleMiss", "OracleSummary", "Pair", "PassAtK", "PredecessorGroup", "Rank",
    "Reversal", "ScopeMetrics", "Skipped", "ShortStart", "SplitByKept", "StatesSolved", "Summary", "TakeoverCost",
    "Uncertainty", "UnsolvedState", "as_summary",
]  # fmt: skip

OVERALL = "overall"
Json = dict[str, Any]


def _map(raw: Any) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


def _with_handoff(out: Json, handoff: str | None) -> Json:
    # An item under a handoff view names it; a blind one has no such key at all.
    return {**out, "handoff": handoff} if handoff else out


# --------------------------------------------------------------------------- headline figures


@dataclass(frozen=True)
class PredecessorGroup:
    """One group of Table 8: the tasks with a state of this predecessor, only its states."""

    residual: float | None = None
    clean: float | None = None
    gap: float | None = None
    n_tasks: int = 0

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PredecessorGroup:
        return cls(raw.get("residual"), raw.get("clean"), raw.get("gap"), raw.get("n_tasks", 0))

    def to_json(self) -> Json:
        return {"residual": self.residual, "clean": self.clean, "gap": self.gap, "n_tasks": self.n_tasks}


@dataclass(frozen=True)
class SplitByKept:
    median_kept: float | None = None
    success_above: float | None = None
    success_below: float | None = None

    @classmethod
    def from_json(cls, raw: Any) -> SplitByKept:
        raw = _map(raw)
        return cls(raw.get("median_kept"), raw.get("success_above"), raw.get("success_below"))

    def to_json(self) -> Json:
        return {"median_kept": self.median_kept, "success_above": self.success_above,
                "success_below": self.success_below}


@dataclass(frozen=True)
class AcceptanceBias:
    """Table 4's figures of one agent and track; the fields are ``ACCEPTANCE_KEYS``, in order."""

    same_failing: float | None = None
    initially_failing_clean: float | None = None
    initially_failing_residual: float | None = None
    kept: float | None = None
    left_out_clean: float | None = None
    left_out_residual: float | None = None
    left_out_opened: float | None = None
    steps_ratio: float | None = None
    inspected: float | None = None
    split_by_kept: SplitByKept = field(default_factory=SplitByKept)

    @classmethod
    def from_json(cls, raw: Any) -> AcceptanceBias:
        raw = _map(raw)
        values = {key: raw.get(key) for key in ACCEPTANCE_KEYS}
        values["split_by_kept"] = SplitByKept.from_json(raw.get("split_by_kept"))
        return cls(**values)

    def to_json(self) -> Json:
        return {key: (self.split_by_kept.to_json() if key == "split_by_kept" else getattr(self, key))
                for key in ACCEPTANCE_KEYS}


# The dataclass and the metric's keys are one contract: a key added there must be added here.
assert tuple(f.name for f in fields(AcceptanceBias)) == ACCEPTANCE_KEYS, "AcceptanceBias != ACCEPTANCE_KEYS"


@dataclass(frozen=True)
class PassAtK:
    """pass@k over K rollouts of each start (unbiased estimator), averaged as outcomes are."""

    k: int
    residual: float | None = None
    clean: float | None = None
    gap: float | None = None
    #: the tasks whose Clean Start and >= 1 state have K valid rollouts (None: an older summary)
    n_tasks: int | None = None
    #: intervals over those tasks (score, Newcombe for the Gap): {residual, clean, gap: [low, high] or None}
    intervals: Mapping[str, tuple[float, float] | None] | None = None

    @classmethod
    def from_json(cls, raw: Any) -> PassAtK:
        raw = _map(raw)
        intervals = raw.get("intervals")
        return cls(raw.get("k", 1), raw.get("residual"), raw.get("clean"), raw.get("gap"), raw.get("n_tasks"),
                   {f: _bound(b) for f, b in intervals.items()} if isinstance(intervals, Mapping) else None)

    def to_json(self) -> Json:
        out: Json = {"k": self.k, "residual": self.residual, "clean": self.clean, "gap": self.gap}
        if self.n_tasks is not None:
            out["n_tasks"] = self.n_tasks
        if self.intervals is not None:
            out["intervals"] = {f: _list(b) for f, b in self.intervals.items()}
        return out


@dataclass(frozen=True)
class DroppedTask:
    """A task the agent ran that no figure counts, and why (no Clean or no Residual run with a verdict)."""

    task: str
    track: str
    reasons: tuple[str, ...]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> DroppedTask:
        return cls(str(raw.get("task")), str(raw.get("track")), tuple(raw.get("reasons") or ()))

    def to_json(self) -> Json:
        return {"task": self.task, "track": self.track, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class ShortStart:
    """A start with fewer than K valid rollouts: its outcome is the mean of those, pass@K leaves it out."""

    task: str
    state: str | None
    valid: int
    k: int

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ShortStart:
        return cls(str(raw.get("task")), raw.get("state"), int(raw.get("valid", 0)), int(raw.get("k", 0)))

    def to_json(self) -> Json:
        return {"task": self.task, "state": self.state, "valid": self.valid, "k": self.k}


@dataclass(frozen=True)
class Disagreement:
    """The share (percent) of Residual States and of Clean Starts whose rollouts disagree, over
    the ``states`` and ``clean_starts`` with at least two valid rollouts."""

    residual: float | None = None
    clean: float | None = None
    states: int = 0
    clean_starts: int = 0
    #: {residual, clean}: each share's interval over tasks (None in an older summary)
    intervals: Mapping[str, tuple[float, float] | None] | None = None

    @classmethod
    def from_json(cls, raw: Any) -> Disagreement:
        raw = _map(raw)
        intervals = raw.get("intervals")
        return cls(raw.get("residual"), raw.get("clean"), raw.get("states", 0), raw.get("clean_starts", 0),
                   {f: _bound(b) for f, b in intervals.items()} if isinstance(intervals, Mapping) else None)

    def to_json(self) -> Json:
        out: Json = {"residual": self.residual, "clean": self.clean, "states": self.states,
                     "clean_starts": self.clean_starts}
        if self.intervals is not None:
            out["intervals"] = {f: _list(b) for f, b in self.intervals.items()}
        return out


@dataclass(frozen=True)
class Power:
    """The smallest Gap one agent's run on one scope could detect (docs/uncertainty.md):
    ``gap_detectable`` in points at ``power`` and the run's confidence, from ``gap_sd`` (the
    per-task Gaps' spread) over ``n_tasks``; None and ``reason`` when it cannot be said."""

    power: float = 0.8
    n_tasks: int = 0
    gap_sd: float | None = None
    gap_detectable: float | None = None
    reason: str | None = None

    @classmethod
    def from_json(cls, raw: Any) -> Power:
        raw = _map(raw)
        return cls(raw.get("power", 0.8), raw.get("n_tasks", 0), raw.get("gap_sd"), raw.get("gap_detectable"),
                   raw.get("reason"))

    def to_json(self) -> Json:
        return {"power": self.power, "n_tasks": self.n_tasks, "gap_sd": self.gap_sd,
                "gap_detectable": self.gap_detectable, "reason": self.reason}


@dataclass(frozen=True)
class VarianceSplit:
    """One rate's per-task variance split into rollout noise (``within``) and tasks
    (``between``), in points squared; ``within_share`` in percent, over ``n_tasks``."""

    within: float
    between: float
    within_share: float | None
    n_tasks: int

    @classmethod
    def from_json(cls, raw: Any) -> VarianceSplit | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(raw.get("within", 0.0), raw.get("between", 0.0), raw.get("within_share"), raw.get("n_tasks", 0))

    def to_json(self) -> Json:
        return {"within": self.within, "between": self.between, "within_share": self.within_share,
                "n_tasks": self.n_tasks}


@dataclass(frozen=True)
class ScopeMetrics:
    """One agent's figures on one track, or ``overall`` (its tracks pooled, each task once)."""

    residual: float | None = None
    clean: float | None = None
    gap: float | None = None
    cond_fail: float | None = None
    n_tasks: int = 0
    n_states: int = 0
    by_predecessor: Mapping[str, PredecessorGroup] = field(default_factory=dict)
    cond_fail_tasks: int = 0
    cond_fail_states: int = 0
    #: None for ``overall`` without repo-track runs (Table 4 is the repo track's, never a pool)
    acceptance_bias: AcceptanceBias | None = None
    #: only with more than one rollout per start (`--rollouts`): a one-rollout summary has neither key
    pass_at_k: PassAtK | None = None
    disagreement: Disagreement | None = None
    #: the intervals of residual, clean, gap and cond_fail (None in an older summary)
    intervals: Intervals | None = None
    #: the tasks the agent ran that no figure counts, and why (the key only when there are some)
    dropped: tuple[DroppedTask, ...] = ()
    #: with rollouts, the starts with fewer than K valid rollouts (the key only when there are some)
    short_starts: tuple[ShortStart, ...] = ()
    #: the smallest Gap detectable (None in an older summary)
    power: Power | None = None
    #: with rollouts: {residual, clean} split of the per-task variance (None where it cannot be said)
    rollout_variance: Mapping[str, VarianceSplit | None] | None = None

    @classmethod
    def from_json(cls, raw: Any) -> ScopeMetrics:
        raw = _map(raw)
        bias = raw.get("acceptance_bias")
        passes, disagree = raw.get("pass_at_k"), raw.get("disagreement")
        return cls(
            residual=raw.get("residual"), clean=raw.get("clean"), gap=raw.get("gap"), cond_fail=raw.get("cond_fail"),
            n_tasks=raw.get("n_tasks", 0), n_states=raw.get("n_states", 0),
            by_predecessor={p: PredecessorGroup.from_json(g) for p, g in _map(raw.get("by_predecessor")).items()},
            cond_fail_tasks=raw.get("cond_fail_tasks", 0), cond_fail_states=raw.get("cond_fail_states", 0),
            acceptance_bias=AcceptanceBias.from_json(bias) if bias is not None else None,
            pass_at_k=PassAtK.from_json(passes) if passes is not None else None,
            disagreement=Disagreement.from_json(disagree) if disagree is not None else None,
            intervals=Intervals.from_json(raw.get("intervals")),
            dropped=tuple(DroppedTask.from_json(d) for d in raw.get("dropped") or ()),
            short_starts=tuple(ShortStart.from_json(d) for d in raw.get("short_starts") or ()),
            power=Power.from_json(raw["power"]) if raw.get("power") is not None else None,
            rollout_variance={f: VarianceSplit.from_json(v) for f, v in raw["rollout_variance"].items()}
            if isinstance(raw.get("rollout_variance"), Mapping) else None,
        )  # fmt: skip

    def to_json(self) -> Json:
        out: Json = {
            "residual": self.residual, "clean": self.clean, "gap": self.gap, "cond_fail": self.cond_fail,
            "n_tasks": self.n_tasks, "n_states": self.n_states,
            "by_predecessor": {p: g.to_json() for p, g in self.by_predecessor.items()},
            "cond_fail_tasks": self.cond_fail_tasks, "cond_fail_states": self.cond_fail_states,
            "acceptance_bias": self.acceptance_bias.to_json() if self.acceptance_bias is not None else None,
        }  # fmt: skip
        if self.pass_at_k is not None:
            out["pass_at_k"] = self.pass_at_k.to_json()
        if self.disagreement is not None:
            out["disagreement"] = self.disagreement.to_json()
        if self.intervals is not None:  # a summary read from an older file gives back what it had
            out["intervals"] = self.intervals.to_json()
        if self.dropped:
            out["dropped"] = [d.to_json() for d in self.dropped]
        if self.short_starts:
            out["short_starts"] = [d.to_json() for d in self.short_starts]
        if self.power is not None:
            out["power"] = self.power.to_json()
        if self.rollout_variance is not None:
            out["rollout_variance"] = {f: v.to_json() if v is not None else None
                                       for f, v in self.rollout_variance.items()}
        return out

    def interval(self, figure: str) -> tuple[float, float] | None:
        """``[low, high]`` of ``residual``, ``clean``, ``gap`` or ``cond_fail``; None without one."""
        return self.intervals.get(figure) if self.intervals is not None else None


@dataclass(frozen=True)
class AgentSummary:
    tracks: Mapping[str, ScopeMetrics] = field(default_factory=dict)
    overall: ScopeMetrics | None = None

    @classmethod
    def from_json(cls, raw: Any) -> AgentSummary:
        raw = _map(raw)
        overall = raw.get("overall")
        return cls({t: ScopeMetrics.from_json(m) for t, m in _map(raw.get("tracks")).items()},
                   ScopeMetrics.from_json(overall) if overall is not None else None)

    def to_json(self) -> Json:
        return {"tracks": {t: m.to_json() for t, m in self.tracks.items()},
                "overall": self.overall.to_json() if self.overall is not None else None}

    def scope(self, name: str) -> ScopeMetrics | None:
        """The figures of one track, or of ``overall``; None when the agent has none there."""
        return self.overall if name == OVERALL else self.tracks.get(name)

    def own_scopes(self) -> list[tuple[str, ScopeMetrics]]:
        """This agent's tracks, then ``overall`` unless it ran exactly one track (then the two
        are the same figures)."""
        out = list(self.tracks.items())
        if len(out) != 1:
            out.append((OVERALL, self.overall or ScopeMetrics()))
        return out


# --------------------------------------------------------------------------- infrastructure


@dataclass(frozen=True)
class ExcludedItem:
    """An item excluded by an unresolved infrastructure error (never counted as a failure)."""

    agent: str | None
    task: str | None
    state: str | None
    error: str | None = None
    handoff: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ExcludedItem:
        return cls(raw.get("agent"), raw.get("task"), raw.get("state"), raw.get("error"), raw.get("handoff"))

    def to_json(self) -> Json:
        return _with_handoff({"agent": self.agent, "task": self.task, "state": self.state, "error": self.error},
                             self.handoff)


@dataclass(frozen=True)
class FailedItem:
    """An item whose final state the verifier could not grade while the clean state grades (a failure)."""

    agent: str | None
    task: str | None
    state: str | None
    handoff: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> FailedItem:
        return cls(raw.get("agent"), raw.get("task"), raw.get("state"), raw.get("handoff"))

    def to_json(self) -> Json:
        return _with_handoff({"agent": self.agent, "task": self.task, "state": self.state}, self.handoff)


@dataclass(frozen=True)
class ContradictedItem:
    """An item whose passing reward file its per-test reports contradicted (a failure, counted)."""

    agent: str | None
    task: str | None
    state: str | None
    reason: str | None
    handoff: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ContradictedItem:
        return cls(raw.get("agent"), raw.get("task"), raw.get("state"), raw.get("reason"), raw.get("handoff"))

    def to_json(self) -> Json:
        return _with_handoff({"agent": self.agent, "task": self.task, "state": self.state, "reason": self.reason},
                             self.handoff)


@dataclass(frozen=True)
class AgentInfra:
    """Items, attempts and the median seconds of each phase (``DURATION_KEYS``) of one agent."""

    items: int = 0
    attempts: int = 0
    setup_sec: float | None = None
    agent_sec: float | None = None
    verify_sec: float | None = None
    wall_sec: float | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AgentInfra:
        return cls(raw.get("items", 0), raw.get("attempts", 0), raw.get("setup_sec"), raw.get("agent_sec"),
                   raw.get("verify_sec"), raw.get("wall_sec"))

    def to_json(self) -> Json:
        return {"items": self.items, "attempts": self.attempts, "setup_sec": self.setup_sec,
                "agent_sec": self.agent_sec, "verify_sec": self.verify_sec, "wall_sec": self.wall_sec}


@dataclass(frozen=True)
class FidelityState:
    task: str
    state: str
    fidelity: str | None


@dataclass(frozen=True)
class Fidelity:
    """How the machine-track states were restored: counts per kind, and each state."""

    counts: Mapping[str, int]
    states: tuple[FidelityState, ...]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Fidelity:
        return cls(dict(_map(raw.get("counts"))),
                   tuple(FidelityState(s["task"], s["state"], s.get("fidelity")) for s in raw.get("states") or []))

    def to_json(self) -> Json:
        return {"counts": dict(self.counts),
                "states": [{"task": s.task, "state": s.state, "fidelity": s.fidelity} for s in self.states]}


@dataclass(frozen=True)
class Infra:
    items: int = 0
    retried: int = 0
    unresolved: int = 0
    excluded: tuple[ExcludedItem, ...] = ()
    verifier_failed: tuple[FailedItem, ...] = ()
    by_agent: Mapping[str, AgentInfra] = field(default_factory=dict)
    #: items whose passing reward was contradicted (failures, counted); the key only when there are some
    contradicted: tuple[ContradictedItem, ...] = ()
    #: only with machine-track states (section 5's keys stay as they are without)
    fidelity: Fidelity | None = None

    @classmethod
    def from_json(cls, raw: Any) -> Infra:
        raw = _map(raw)
        fidelity = raw.get("fidelity")
        return cls(
            items=raw.get("items", 0), retried=raw.get("retried", 0), unresolved=raw.get("unresolved", 0),
            excluded=tuple(ExcludedItem.from_json(x) for x in raw.get("excluded") or []),
            verifier_failed=tuple(FailedItem.from_json(x) for x in raw.get("verifier_failed") or []),
            by_agent={a: AgentInfra.from_json(d) for a, d in _map(raw.get("by_agent")).items()},
            contradicted=tuple(ContradictedItem.from_json(x) for x in raw.get("contradicted") or []),
            fidelity=Fidelity.from_json(fidelity) if fidelity else None,
        )  # fmt: skip

    def to_json(self) -> Json:
        out: Json = {
            "retried": self.retried, "unresolved": self.unresolved, "items": self.items,
            "excluded": [x.to_json() for x in self.excluded],
            "verifier_failed": [x.to_json() for x in self.verifier_failed],
            "by_agent": {a: d.to_json() for a, d in self.by_agent.items()},
        }  # fmt: skip
        if self.contradicted:
            out["contradicted"] = [x.to_json() for x in self.contradicted]
        if self.fidelity is not None:
            out["fidelity"] = self.fidelity.to_json()
        return out


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Rank:
    agent: str
    value: float
    rank: int


@dataclass(frozen=True)
class Reversal:
    scope: str
    clean_leader: str
    residual_leader: str
    clean_margin: float
    residual_margin: float
    #: the paired intervals of the two margins on the common tasks, leader minus follower
    clean_interval: tuple[float, float] | None = None
    residual_interval: tuple[float, float] | None = None
    #: both intervals above 0; False when one includes 0; None without intervals
    significant: bool | None = None
    #: the same verdict after Holm's adjustment across the pairs of the scope (None: an older summary)
    significant_adjusted: bool | None = None
    #: the common tasks the margins are measured on (0: an older summary, margins on each agent's own tasks)
    n_tasks: int = 0

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Reversal:
        return cls(raw["scope"], raw["clean_leader"], raw["residual_leader"], raw["clean_margin"],
                   raw["residual_margin"], _bound(raw.get("clean_interval")), _bound(raw.get("residual_interval")),
                   raw.get("significant"), raw.get("significant_adjusted"), raw.get("n_tasks") or 0)

    def to_json(self) -> Json:
        out: Json = {"scope": self.scope, "clean_leader": self.clean_leader, "residual_leader": self.residual_leader,
                     "clean_margin": self.clean_margin, "residual_margin": self.residual_margin,
                     "clean_interval": _list(self.clean_interval), "residual_interval": _list(self.residual_interval),
                     "significant": self.significant}
        if self.n_tasks:
            out["significant_adjusted"] = self.significant_adjusted
            out["n_tasks"] = self.n_tasks
        return out


def _bound(raw: Any) -> tuple[float, float] | None:
    return (float(raw[0]), float(raw[1])) if isinstance(raw, (list, tuple)) and len(raw) == 2 else None


def _list(bound: tuple[float, float] | None) -> list[float] | None:
    return list(bound) if bound is not None else None


@dataclass(frozen=True)
class Pair:
    """Agent ``a`` minus agent ``b`` on their common tasks: t intervals over the per-task
    differences, raw p-values and significance, and both after Holm's adjustment across the
    pairs of the scope (``*_adjusted``; None in an older summary or without an interval)."""

    a: str
    b: str
    n_tasks: int = 0
    residual: float | None = None
    residual_interval: tuple[float, float] | None = None
    residual_significant: bool | None = None
    clean: float | None = None
    clean_interval: tuple[float, float] | None = None
    clean_significant: bool | None = None
    gap: float | None = None
    gap_interval: tuple[float, float] | None = None
    gap_significant: bool | None = None
    reason: str | None = None
    residual_p: float | None = None
    clean_p: float | None = None
    gap_p: float | None = None
    residual_p_adjusted: float | None = None
    clean_p_adjusted: float | None = None
    gap_p_adjusted: float | None = None
    residual_significant_adjusted: bool | None = None
    clean_significant_adjusted: bool | None = None
    gap_significant_adjusted: bool | None = None
    #: the spread of the per-task differences and the smallest difference detectable (points)
    residual_sd: float | None = None
    residual_detectable: float | None = None
    clean_sd: float | None = None
    clean_detectable: float | None = None
    gap_sd: float | None = None
    gap_detectable: float | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Pair:
        values = {f.name: raw.get(f.name) for f in fields(cls)}
        for key in ("residual_interval", "clean_interval", "gap_interval"):
            values[key] = _bound(values[key])
        values["n_tasks"] = values["n_tasks"] or 0
        return cls(**values)

    def to_json(self) -> Json:
        return {f.name: _list(getattr(self, f.name)) if f.name.endswith("_interval") else getattr(self, f.name)
                for f in fields(self)}


@dataclass(frozen=True)
class UnsolvedState:
    track: str
    task: str
    state: str
    agents: int


@dataclass(frozen=True)
class StatesSolved:
    n_states: int = 0
    unsolved: tuple[UnsolvedState, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """Rankings under Clean and Residual per scope, the reversed pairs, the states no agent solved."""

    n_agents: int = 0
    rankings: Mapping[str, Mapping[str, tuple[Rank, ...]]] = field(default_factory=dict)
    reversals: Mapping[str, tuple[Reversal, ...]] = field(default_factory=dict)
    states: StatesSolved = field(default_factory=StatesSolved)
    #: per scope, every pair of agents' paired differences (None in an older summary)
    pairs: Mapping[str, tuple[Pair, ...]] | None = None
    #: how the pairs' verdicts are adjusted for being many: {method, family, alpha}
    multiplicity: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, raw: Any) -> Comparison:
        raw = _map(raw)
        states = _map(raw.get("states"))
        return cls(
            n_agents=raw.get("n_agents", 0),
            rankings={scope: {rate: tuple(Rank(**r) for r in ranks) for rate, ranks in _map(by_rate).items()}
                      for scope, by_rate in _map(raw.get("rankings")).items()},
            reversals={scope: tuple(Reversal.from_json(r) for r in found or []) for scope, found in
                       _map(raw.get("reversals")).items()},
            states=StatesSolved(states.get("n_states", 0),
                                tuple(UnsolvedState(**u) for u in states.get("unsolved") or [])),
            pairs={scope: tuple(Pair.from_json(p) for p in found or []) for scope, found in raw["pairs"].items()}
            if isinstance(raw.get("pairs"), Mapping) else None,
            multiplicity=dict(raw["multiplicity"]) if isinstance(raw.get("multiplicity"), Mapping) else None,
        )  # fmt: skip

    def to_json(self) -> Json:
        out: Json = {
            "n_agents": self.n_agents,
            "rankings": {scope: {rate: [{"agent": r.agent, "value": r.value, "rank": r.rank} for r in ranks]
                                 for rate, ranks in by_rate.items()} for scope, by_rate in self.rankings.items()},
            "reversals": {scope: [r.to_json() for r in found] for scope, found in self.reversals.items()},
            "states": {"n_states": self.states.n_states,
                       "unsolved": [{"track": u.track, "task": u.task, "state": u.state, "agents": u.agents}
                                    for u in self.states.unsolved]},
        }  # fmt: skip
        if self.pairs is not None:
            out["pairs"] = {scope: [p.to_json() for p in found] for scope, found in self.pairs.items()}
        if self.multiplicity is not None:
            out["multiplicity"] = dict(self.multiplicity)
        return out


# --------------------------------------------------------------------------- handoff views


@dataclass(frozen=True)
class TakeoverCost:
    """Median steps, tokens or cost of the Residual items and of the same tasks' Clean items."""

    residual_median: float | None = None
    clean_median: float | None = None
    ratio: float | None = None
    n_tasks: int = 0
    n_residual: int = 0

    @classmethod
    def from_json(cls, raw: Any) -> TakeoverCost:
        raw = _map(raw)
        return cls(raw.get("residual_median"), raw.get("clean_median"), raw.get("ratio"), raw.get("n_tasks", 0),
                   raw.get("n_residual", 0))

    def to_json(self) -> Json:
        return {"residual_median": self.residual_median, "clean_median": self.clean_median, "ratio": self.ratio,
                "n_tasks": self.n_tasks, "n_residual": self.n_residual}


@dataclass(frozen=True)
class HandoffView:
    """One agent under one handoff view: the headline pooled over tracks, the acceptance bias
    per track, the takeover cost per quantity."""

    residual: float | None = None
    clean: float | None = None
    gap: float | None = None
    cond_fail: float | None = None
    n_tasks: int = 0
    n_states: int = 0
    acceptance_bias: Mapping[str, AcceptanceBias] = field(default_factory=dict)
    takeover: Mapping[str, TakeoverCost] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: Any) -> HandoffView:
        raw = _map(raw)
        return cls(
            residual=raw.get("residual"), clean=raw.get("clean"), gap=raw.get("gap"), cond_fail=raw.get("cond_fail"),
            n_tasks=raw.get("n_tasks", 0), n_states=raw.get("n_states", 0),
            acceptance_bias={t: AcceptanceBias.from_json(ab) for t, ab in _map(raw.get("acceptance_bias")).items()},
            takeover={name: TakeoverCost.from_json(c) for name, c in _map(raw.get("takeover")).items()},
        )  # fmt: skip

    def to_json(self) -> Json:
        return {
            "residual": self.residual, "clean": self.clean, "gap": self.gap, "cond_fail": self.cond_fail,
            "n_tasks": self.n_tasks, "n_states": self.n_states,
            "acceptance_bias": {t: ab.to_json() for t, ab in self.acceptance_bias.items()},
            "takeover": {name: c.to_json() for name, c in self.takeover.items()},
        }  # fmt: skip

    def ratio(self, quantity: str) -> float | None:
        """Residual / Clean median of ``steps``, ``tokens`` or ``cost``."""
        cost = self.takeover.get(quantity)
        return cost.ratio if cost is not None else None


# --------------------------------------------------------------------------- oracle and run status


@dataclass(frozen=True)
class OracleMiss:
    task: str | None
    state: str | None
    outcome: str | None
    termination: str | None
    message: str | None


@dataclass(frozen=True)
class OracleSummary:
    """The starts the reference solution did not solve (a fault of the task, never a score)."""

    starts: int | None = None
    unsolved: tuple[OracleMiss, ...] = ()

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> OracleSummary:
        return cls(raw.get("starts"), tuple(OracleMiss(u.get("task"), u.get("state"), u.get("outcome"),
                                                       u.get("termination"), u.get("message"))
                                            for u in raw.get("unsolved") or []))

    def to_json(self) -> Json:
        return {"starts": self.starts,
                "unsolved": [{"task": u.task, "state": u.state, "outcome": u.outcome, "termination": u.termination,
                              "message": u.message} for u in self.unsolved]}


@dataclass(frozen=True)
class Skipped:
    item: str
    reason: str


# --------------------------------------------------------------------------- the whole


_KNOWN = ("schema", "uncertainty", "agents", "infra", "comparison", "by_handoff", "oracle", "skipped", "interrupted",
          "interrupted_reason", "resume_command", "partial", "dataset_warnings",
          "never_worked")


@dataclass(frozen=True)
class Summary:
    """``summary.json``: per agent its figures per track and overall, the infrastructure, and the
    optional parts (each present only when it applies, as in the file).

    The run status (``skipped``, ``interrupted``...) is added by a pytest run
    (:func:`swe_residual.run.status.with_run_status`); a summary recomputed from results files
    has none. Agents are in the renderers' order (the JSON file's keys are sorted when written).
    """

    schema: int = 1
    agents: Mapping[str, AgentSummary] = field(default_factory=dict)
    infra: Infra = field(default_factory=Infra)
    #: how the intervals were made (None in a summary without intervals)
    uncertainty: Uncertainty | None = None
    comparison: Comparison | None = None
    by_handoff: Mapping[str, Mapping[str, HandoffView]] | None = None
    oracle: OracleSummary | None = None
    skipped: tuple[Skipped, ...] | None = None
    interrupted: bool = False
    interrupted_reason: str | None = None
    resume_command: str | None = None
    #: a merge of shards with some missing (`--allow-partial`): {shards, merged, missing}
    partial: Mapping[str, Any] | None = None
    #: what the run found in the dataset before its first item (run/preflight.py)
    dataset_warnings: tuple[str, ...] = ()
    #: agents that failed on every item with their own error, one line each (summary/terminations.py)
    never_worked: tuple[str, ...] = ()
    #: top-level keys this model does not know, kept so that ``to_json`` gives them back
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Summary:
        comparison, views, oracle, skipped = (raw.get(k) for k in ("comparison", "by_handoff", "oracle", "skipped"))
        return cls(
            schema=raw.get("schema", 1),
            uncertainty=Uncertainty.from_json(raw.get("uncertainty")),
            agents={a: AgentSummary.from_json(b) for a, b in _map(raw.get("agents")).items()},
            infra=Infra.from_json(raw.get("infra")),
            comparison=Comparison.from_json(comparison) if comparison else None,
            by_handoff={a: {v: HandoffView.from_json(b) for v, b in _map(blocks).items()}
                        for a, blocks in views.items()} if views else None,
            oracle=OracleSummary.from_json(oracle) if oracle else None,
            skipped=tuple(Skipped(str(s.get("item")), str(s.get("reason"))) for s in skipped) if skipped else None,
            interrupted=bool(raw.get("interrupted")),
            interrupted_reason=raw.get("interrupted_reason"),
            resume_command=raw.get("resume_command"),
            partial=raw.get("partial") or None,
            dataset_warnings=tuple(str(w) for w in raw.get("dataset_warnings") or ()),
            never_worked=tuple(str(w) for w in raw.get("never_worked") or ()),
            extra={k: v for k, v in raw.items() if k not in _KNOWN},
        )  # fmt: skip

    def to_json(self) -> Json:
        out: Json = {"schema": self.schema}
        if self.uncertainty is not None:
            out["uncertainty"] = self.uncertainty.to_json()
        out.update(agents={a: b.to_json() for a, b in self.agents.items()}, infra=self.infra.to_json())
        if self.comparison is not None:
            out["comparison"] = self.comparison.to_json()
        if self.by_handoff is not None:
            out["by_handoff"] = {a: {v: b.to_json() for v, b in views.items()} for a, views in self.by_handoff.items()}
        if self.oracle is not None:
            out["oracle"] = self.oracle.to_json()
        if self.skipped:
            out["skipped"] = [{"item": s.item, "reason": s.reason} for s in self.skipped]
        if self.interrupted:
            out["interrupted"] = True
            out["interrupted_reason"] = self.interrupted_reason
            if self.resume_command:
                out["resume_command"] = self.resume_command
        if self.partial:
            out["partial"] = dict(self.partial)
        if self.dataset_warnings:
            out["dataset_warnings"] = list(self.dataset_warnings)
        if self.never_worked:
            out["never_worked"] = list(self.never_worked)
        out.update(self.extra)
        return out

    @property
    def tracks(self) -> list[str]:
        """Every track some agent ran, sorted."""
        return sorted({t for block in self.agents.values() for t in block.tracks})

    def scopes(self) -> list[str]:
        """The tracks, then ``overall`` only when it pools more than one track: the scopes the
        terminal and report.html list for every agent."""
        tracks = self.tracks
        return tracks + ([OVERALL] if len(tracks) > 1 else [])

    def views(self) -> Iterator[tuple[str, str, HandoffView]]:
        """(agent, view, figures) of every handoff view, in the summary's order."""
        for agent, views in (self.by_handoff or {}).items():
            for view, block in views.items():
                yield agent, view, block


def as_summary(summary: Summary | Mapping[str, Any]) -> Summary:
    """A renderer's input as a :class:`Summary`: the typed summary, or a dict as
    ``summary.json`` holds it (what the writers and the tests pass)."""
    return summary if isinstance(summary, Summary) else Summary.from_json(summary)

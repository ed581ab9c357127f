"""Release gates: thresholds on the summary that decide the exit status.

`--residual-fail-under=PCT` fails when an agent's Residual success is below PCT;
`--gap-fail-over=POINTS` fails when its Gap is above POINTS. A gate without a scope applies
to `overall`; `TRACK:VALUE` applies to one track. Every agent in the summary must pass.

A gate's value is checked when it is parsed, before anything runs: a success rate outside
0-100, a Gap outside -100..100 (it is Clean minus Residual, so it can be negative) or a scope
that is no track would make the gate meaningless or a silent no-op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from swe_residual.errors import ConfigError
from swe_residual.dataset.task import TRACKS

KINDS = {"residual_fail_under": ("residual", "below"), "gap_fail_over": ("gap", "above")}
# The values each gate's threshold can take (a success rate; a difference of two of them).
RANGES = {"residual_fail_under": (0.0, 100.0, "a success rate in %"),
          "gap_fail_over": (-100.0, 100.0, "a Gap in points")}
SCOPES = ("overall", *TRACKS)


@dataclass(frozen=True)
class Gate:
    kind: str  # "residual_fail_under" | "gap_fail_over"
    scope: str  # "overall" or a track name
    threshold: float

    @property
    def flag(self) -> str:
        return "--" + self.kind.replace("_", "-")


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    agent: str
    value: float | None
    passed: bool

    def describe(self) -> str:
        metric, direction = KINDS[self.gate.kind]
        where = f"{self.agent} [{self.gate.scope}]"
        if self.value is None:
            return f"{self.gate.flag}: {where} has no {metric} figure (no scored tasks)"
        margin = abs(self.value - self.gate.threshold)
        verdict = "passed" if self.passed else "FAILED"
        return (f"{self.gate.flag}={self.gate.threshold:g} {verdict}: {where} {metric} {self.value:.1f} is "
                f"{margin:.1f} points {'within' if self.passed else direction} the threshold")


def parse_gate(kind: str, text: str) -> Gate:
    flag = f"--{kind.replace('_', '-')}={text}"
    scope, _, number = text.rpartition(":")
    try:
        threshold = float(number)
    except ValueError as exc:
        raise ConfigError(f"{flag}: expected a number or TRACK:NUMBER") from exc
    low, high, what = RANGES[kind]
    if not math.isfinite(threshold) or not low <= threshold <= high:
        raise ConfigError(f"{flag}: {number} is not {what} (from {low:g} to {high:g})")
    scope = scope.strip() or "overall"
    if scope not in SCOPES:
        raise ConfigError(f"{flag}: unknown scope {scope!r} (a track: {', '.join(TRACKS)}; none for overall)")
    return Gate(kind, scope, threshold)


def evaluate_gates(summary: dict[str, Any], gates: list[Gate]) -> list[GateResult]:
    results = []
    for gate in gates:
        metric, _ = KINDS[gate.kind]
        for agent, block in sorted(summary.get("agents", {}).items()):
            figures = block.get("overall") if gate.scope == "overall" else block.get("tracks", {}).get(gate.scope)
            value = figures.get(metric) if figures else None
            if value is None:
                passed = False  # a gate on nothing measured cannot vouch for a release
            elif gate.kind == "residual_fail_under":
                passed = value >= gate.threshold
            else:
                passed = value <= gate.threshold
            results.append(GateResult(gate, agent, value, passed))
    return results

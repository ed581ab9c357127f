"""Release gates: thresholds on the summary that decide the exit status.

`--residual-fail-under=PCT` fails when an agent's Residual success is below PCT;
`--gap-fail-over=POINTS` fails when its Gap is above POINTS. A gate without a scope applies
to `overall`; `TRACK:VALUE` applies to one track. Every agent in the summary must pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swe_residual.errors import ConfigError

KINDS = {"residual_fail_under": ("residual", "below"), "gap_fail_over": ("gap", "above")}


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
    scope, _, number = text.rpartition(":")
    try:
        threshold = float(number)
    except ValueError as exc:
        raise ConfigError(f"--{kind.replace('_', '-')}={text}: expected a number or TRACK:NUMBER") from exc
    return Gate(kind, scope or "overall", threshold)


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

"""`dataset build --validate`: Stage IV again on every materialised state, beside what was recorded.

Each state is validated exactly as `residualize build` validated it (reconstruct.py's
`validate_candidate`: instantiated as rollouts start it, the replay reproducing the recording,
a valid failing verdict, the oracle solving it from the state; with `repeats` N, the verifier and
the oracle N times each, all agreeing), and the result is compared with
the manifest's: a state that is no longer included, or whose per-test statuses changed, is a
problem the build reports (exit status 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.registry import make_backend
from swe_residual.residualize.published.manifest import Manifest
from swe_residual.residualize.reconstruct import INCLUDED, validate_candidate
from swe_residual.residualize.workdir import RECORDED_PANE, RunRef


def revalidate(directory: Path, manifest: Manifest, *, backend_name: str = "docker",
               progress: Callable[[str], None] = print, machine_trust: str | None = None,
               states: frozenset[str] | None = None, repeats: int = 1) -> dict[str, dict[str, Any]]:
    """Stage IV on each recorded state written to `directory` (only the `<task>/<state>` keys of
    `states`, when given), its result beside the manifest's."""
    dataset = load_dataset(directory)
    recorded = {f"{s.task_id}/{s.state_id}": s for s in manifest.states}
    backend = make_backend(backend_name, run_id="dataset-validate", machine_trust=machine_trust)
    if hasattr(backend, "validate_state"):
        backend.validate_state = None  # validated here, step by step
    results: dict[str, dict[str, Any]] = {}
    try:
        for entry in dataset.entries:
            for state in entry.states:
                key = f"{entry.task.id}/{state.id}"
                if key not in recorded or (states is not None and key not in states):
                    continue
                predecessor = str(recorded[key].state.get("predecessor", state.id))
                pane_path = state.path / RECORDED_PANE
                pane = pane_path.read_text(encoding="utf-8", errors="replace") if pane_path.is_file() else None
                outcome = validate_candidate(backend, entry.task, state, RunRef(entry.task.id, predecessor, 1), pane,
                                             repeats)
                result: dict[str, Any] = {"category": outcome.category, "detail": outcome.detail,
                                          "oracle_solvable": outcome.oracle_solvable}
                if outcome.fidelity_check is not None:
                    result["replay"] = outcome.fidelity_check.as_dict()
                if (stability := outcome.stability()) is not None:
                    result["stability"] = stability
                want = (recorded[key].state.get("validation") or {}).get("tests") or {}
                got = dict(sorted(outcome.verdict.tests.items())) if outcome.verdict is not None else {}
                result["tests"] = got
                if outcome.category != INCLUDED:
                    result["problem"] = f"{outcome.category}: {outcome.detail}"
                elif got != want:
                    result["problem"] = f"per-test statuses {got} differ from the recorded {want}"
                results[key] = result
                progress(f"validate {key}: {outcome.category}"
                         + (f" ({outcome.detail[:200]})" if outcome.detail else "")
                         + ("" if "problem" in result else ", as recorded"))
    finally:
        backend.close()
    return results

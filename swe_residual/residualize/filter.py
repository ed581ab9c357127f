"""Stage II: automatic filtering.

A run becomes a candidate only when it
  (c) ended without an infrastructure failure     rule `infra_failure` (no valid verdict, lost
                                                  environment, engine error: outcome infra_error);
  (a) was submitted but fails                     rules `not_submitted` (time/step/cost limit, the
                                                  agent's own error) and `not_failing` (it passed);
  and can be rebuilt                              rule `no_final_state`: the run left nothing that
                                                  rebuilds its final state (an imported run without
                                                  its patch artifact; `residualize.final_state`
                                                  says why). Generated runs always have it;
  (b) changed something                           rule `unchanged`: nothing but incidental
                                                  artifacts (build outputs, caches, logs, stray
                                                  files such as `=1.0` or `*.egg-info`; glob
                                                  patterns) differs from the clean state. The
                                                  artifacts stay in the state, as the paper keeps
                                                  them: they only do not count as a change, and a
                                                  candidate's are listed (`incidental_artifacts`
                                                  in filter.json, then the state's
                                                  `[provenance.stage_ii]`);
  and is not a duplicate                          rule `duplicate`: the same final state (same
                                                  patch or same commands) as an earlier run of the
                                                  same task, kept once.
Rules apply in that order; each exclusion is recorded with its rule in `filter.json`.
`no_final_state` is listed (and counted) for work directories of `swe-residual import`, or
wherever it excluded a run; where the import named its cause in a few words
(`residualize.final_state.reason`), `filter.json`'s `no_final_state_reasons` counts each.

An imported prediction has no verdict yet (outcome null): it is not excluded for that; Stage
IV's verifier decides whether it still fails.

On the machine track "changed" means the run sent at least one interaction to the machine
(commands are replayed as a whole, so there is no file list to filter).
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from swe_residual.dataset.states.diffparse import changed_files
from swe_residual.residualize.workdir import COMMANDS, PATCH, RunRef, Workdir, stage_one
from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.states.state import load_commands
from swe_residual.dataset.values import Outcome, Termination, Track

# Build outputs, caches and logs, and what a run leaves by accident: `*.egg-info/` from an
# editable install, and a file named like `=1.0` (`pip install pkg>=1.0` unquoted: the shell
# redirects pip's output to a file `=1.0`).
DEFAULT_ARTIFACT_PATTERNS = ("*.log", "__pycache__/", ".cache/", "*.pyc", "node_modules/", "build/", "dist/",
                             "*.egg-info/", ".pytest_cache/", "=*")
NO_FINAL_STATE = "no_final_state"
RULES = ("infra_failure", "not_submitted", "not_failing", NO_FINAL_STATE, "unchanged", "duplicate")


def is_artifact(path: str, patterns: Sequence[str]) -> bool:
    """Whether a changed file is an incidental artifact.

    `dir/` matches any directory of that name (or glob) on the path; a pattern with a `/`
    matches the whole path; any other pattern matches the file name.
    """
    parts = path.split("/")
    for pattern in patterns:
        if pattern.endswith("/"):
            if any(fnmatch.fnmatchcase(part, pattern[:-1]) for part in parts[:-1]):
                return True
        elif "/" in pattern:
            if fnmatch.fnmatchcase(path, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(parts[-1], pattern):
            return True
    return False


def substantive_changes(patch: str, patterns: Sequence[str]) -> list[str]:
    return sorted(path for path in changed_files(patch) if not is_artifact(path, patterns))


def incidental_artifacts(patch: str, patterns: Sequence[str]) -> list[str]:
    """The changed files that are incidental artifacts (they stay in the state)."""
    return sorted(path for path in changed_files(patch) if is_artifact(path, patterns))


def _no_final_state_reason(record: RunRecord) -> str | None:
    """The cause an import gave a run without a final state, in a few words (counted)."""
    reason = (stage_one(record).get("final_state") or {}).get("reason")
    return str(reason) if reason else None


def _rule(record: RunRecord) -> tuple[str, str] | None:
    if record.outcome == Outcome.INFRA_ERROR or record.termination == Termination.INFRA_ERROR:
        return "infra_failure", str(record.error or "infrastructure failure")
    if not record.submitted:
        return "not_submitted", f"termination {record.termination}"
    if record.outcome == Outcome.SUCCESS:
        return "not_failing", f"the verifier passes (reward {record.reward})"
    final_state = stage_one(record).get("final_state") or {}
    if final_state.get("recoverable") is False:
        return NO_FINAL_STATE, str(final_state.get("detail") or "the final state cannot be recovered")
    return None


def filter_runs(workdir: Path | str, artifact_patterns: Sequence[str] = DEFAULT_ARTIFACT_PATTERNS,
                progress: Callable[[str], None] = print) -> dict[str, Any]:
    work = Workdir(workdir)
    candidates: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}  # (task, payload digest) -> candidate kept
    for ref in work.runs():
        record = work.record(ref)
        verdict = _rule(record)
        track = record.track
        payload = work.payload(ref)
        if verdict is None and not any((work.run_dir(ref) / name).is_file() for name in (PATCH, COMMANDS)):
            verdict = (NO_FINAL_STATE, f"neither {PATCH} nor {COMMANDS} in {ref.relative}")
        incidental: list[str] = []
        if verdict is None:
            if track == Track.REPO:
                text = payload.decode("utf-8", errors="surrogateescape")
                changed = substantive_changes(text, artifact_patterns)
                incidental = incidental_artifacts(text, artifact_patterns)
                if not changed:
                    everything = sorted(changed_files(payload.decode("utf-8", errors="surrogateescape")))
                    verdict = ("unchanged", "only artifacts changed: " + ", ".join(everything) if everything
                               else "no change at all")
            else:
                commands = load_commands(work.run_dir(ref) / "commands.jsonl") if payload else []
                if not commands:
                    verdict = ("unchanged", "no interaction with the machine")
        if verdict is None:
            key = (ref.task, hashlib.sha256(payload).hexdigest())
            if key in seen:
                verdict = ("duplicate", f"same final state as {seen[key]}")
            else:
                seen[key] = ref.candidate
        entry = {**ref.as_dict(), "track": track}
        if verdict is None:
            if incidental:  # kept in the state's patch; listed so the review and the state say so
                entry["incidental_artifacts"] = incidental
            candidates.append(entry)
        else:
            excluded.append({**entry, "rule": verdict[0], "detail": verdict[1]})
            if verdict[0] == NO_FINAL_STATE and (reason := _no_final_state_reason(record)):
                excluded[-1]["reason"] = reason
    imported = "import" in work.read_json("generate.json", stage="generate")
    rules = [rule for rule in RULES if rule != NO_FINAL_STATE or imported
             or any(e["rule"] == NO_FINAL_STATE for e in excluded)]
    counts = {rule: sum(e["rule"] == rule for e in excluded) for rule in rules}
    reasons = Counter(e["reason"] for e in excluded if e["rule"] == NO_FINAL_STATE and "reason" in e)
    result = {"artifact_patterns": list(artifact_patterns), "rules": rules,
              "n_runs": len(candidates) + len(excluded), "candidates": candidates,
              "excluded": excluded, "counts": counts}
    if reasons:
        result["no_final_state_reasons"] = dict(sorted(reasons.items()))
    flagged = sum(1 for entry in candidates if entry.get("incidental_artifacts"))
    if flagged:
        result["candidates_with_incidental_artifacts"] = flagged
    work.write_json("filter.json", result)
    progress(f"Stage II: {len(candidates)} candidate(s) of {result['n_runs']} run(s); excluded "
             + ", ".join(f"{rule} {n}" for rule, n in counts.items()))
    for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
        progress(f"  {NO_FINAL_STATE}: {count} {reason}")
    if flagged:
        progress(f"  {flagged} candidate(s) left incidental artifacts, kept in their state (filter.json lists them)")
    return result


def candidates(workdir: Path | str) -> list[RunRef]:
    data = Workdir(workdir).read_json("filter.json", stage="filter")
    return [RunRef.from_dict(entry) for entry in data["candidates"]]

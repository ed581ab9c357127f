"""Stage III verdicts: recorded per reviewer, and carried into each built state's state.toml.

`record_verdict` writes one reviewer's answers on the two criteria into the candidate's packet
(the packet is where decisions live, review.py): into the slot already holding that reviewer's
name, else the first slot nobody has answered; a third reviewer is refused, naming the two.

`review_table` is the `[review]` table of a kept state's state.toml, from its entry in
review.json: whether it is kept, the rule, and each reviewer's name and answers:

    [review]
    kept = true
    rule = "two reviewers accept: task_directed and consistent both yes"
    accept_all = ""
    independence = "independent"      # or "not independent", "unknown" (review.py, `independence`)
    [review.reviewer_1]
    name = "ann"
    task_directed = "yes"
    consistent = "yes"
    independent = "yes"               # read without the other's verdict: yes, no, unknown
    [review.reviewer_2]
    ...

Stage IV writes that table into each state it builds (reconstruct.py); `stamp_states` adds it
to a state an earlier build wrote without one.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.filter import candidates as stage_ii_candidates
from swe_residual.residualize.review import (
    CRITERIA,
    INDEPENDENT,
    INDEPENDENT_ANSWERS,
    REVIEWERS,
    UNKNOWN_INDEPENDENCE,
    packet_path,
    read_decisions,
    set_decisions,
    write_packets,
)
from swe_residual.residualize.workdir import RunRef, Workdir, write_bytes

RULE = "two reviewers accept: task_directed and consistent both yes"
ANSWERS = ("yes", "no")


def find_candidate(workdir: Path | str, name: str) -> RunRef:
    """A Stage II candidate by `TASK/CANDIDATE`, or by `CANDIDATE` alone when one task has it."""
    task, _, candidate = name.rpartition("/")
    found = [ref for ref in stage_ii_candidates(workdir)
             if ref.candidate == candidate and (not task or ref.task == task)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(f"{name}: no such Stage II candidate (TASK/CANDIDATE, e.g. calc/alpha-a1)")
    raise ConfigError(f"{name}: {len(found)} tasks have this candidate; name it as TASK/CANDIDATE: "
                      + ", ".join(f"{ref.task}/{ref.candidate}" for ref in found))


def record_verdict(workdir: Path | str, candidate: str, reviewer: str, *, task_directed: str,
                   consistent: str, independent: str = "unknown") -> tuple[RunRef, str]:
    """Write `reviewer`'s answers into the candidate's packet; returns (candidate, slot used).
    `independent`: whether they read the candidate without seeing the other reviewer's verdict
    (yes / no / unknown: not said)."""
    reviewer = reviewer.strip()
    if not reviewer:
        raise ConfigError("--reviewer needs a name (who stands behind the verdict)")
    answers = {"task_directed": task_directed.strip().lower(), "consistent": consistent.strip().lower()}
    for criterion, answer in answers.items():
        if answer not in ANSWERS:
            raise ConfigError(f"--{criterion.replace('_', '-')} {answer!r}: answer yes or no")
    said = independent.strip().lower()
    if said not in INDEPENDENT_ANSWERS:
        raise ConfigError(f"--independent {independent!r}: answer yes or no (or leave it out: unknown)")
    work = Workdir(workdir)
    ref = find_candidate(workdir, candidate)
    packet = packet_path(work, ref)
    if not packet.is_file():
        write_packets(workdir, progress=lambda _: None)
    text = packet.read_text(encoding="utf-8")
    values = read_decisions(text)
    slot = next((r for r in REVIEWERS if values[r].get("name") == reviewer), None)
    if slot is None:
        slot = next((r for r in REVIEWERS if not values[r].get("name")
                     and all(values[r].get(c) not in ANSWERS for c in CRITERIA)), None)
    if slot is None:
        names = " and ".join(values[r].get("name") or r for r in REVIEWERS)
        raise ConfigError(f"{ref.task}/{ref.candidate}: both reviewers' verdicts are recorded ({names}); "
                          f"{reviewer} can replace neither")
    values[slot] = {"name": reviewer, **answers, INDEPENDENT: said}
    write_bytes(packet, set_decisions(text, values).encode("utf-8"))
    return ref, slot


def review_table(entry: dict[str, Any]) -> dict[str, Any]:
    """The `[review]` table of a state from its review.json entry (retained or rejected)."""
    decisions = entry.get("decisions") or {}
    names = list(entry.get("reviewers") or REVIEWERS)
    table: dict[str, Any] = {
        "kept": all(decisions.get(r, {}).get(c) == "yes" for r in REVIEWERS for c in CRITERIA),
        "rule": RULE,
        "accept_all": entry.get("accept_all") or "",
        # A review.json of an earlier version has no independence record: unknown, never independent.
        "independence": entry.get("independence") or UNKNOWN_INDEPENDENCE,
    }
    said = entry.get("independent") or {}
    for index, reviewer in enumerate(REVIEWERS):
        given = decisions.get(reviewer, {})
        table[reviewer] = {"name": names[index] if index < len(names) else reviewer,
                           **{criterion: given.get(criterion) or "?" for criterion in CRITERIA},
                           INDEPENDENT: said.get(reviewer) or "unknown"}
    return table


def stamp_states(workdir: Path | str, progress: Callable[[str], None] = print) -> int:
    """Add `[review]` to each state the last build wrote that lacks one; returns how many."""
    work = Workdir(workdir)
    built = work.read_json("table5.json", stage="build")
    reviewed = work.read_json("review.json", stage="review --collect")
    entries = {(entry["task"], entry["candidate"]): entry for entry in reviewed.get("retained", [])}
    stamped = 0
    for candidate in built.get("candidates", []):
        entry = entries.get((candidate["task"], candidate["candidate"]))
        if not candidate.get("state") or entry is None:
            continue
        path = Path(built["out"]) / candidate["task"] / "residual" / candidate["state"] / "state.toml"
        text = path.read_text(encoding="utf-8")
        if "review" in tomllib.loads(text):
            continue  # Stage IV wrote it itself
        write_bytes(path, (text + "\n" + tomlwrite.dumps({"review": review_table(entry)})).encode("utf-8"))
        stamped += 1
    if stamped:
        progress(f"Stage III verdicts recorded in {stamped} state.toml file(s) ([review])")
    return stamped

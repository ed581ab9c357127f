"""`swe-residual dataset record WORK --built OUT --sources SOURCES.toml --out DIR [--add]`: write manifest.toml.

After the pipeline ran on fetched sources (`import terminal-bench`, `residualize filter|review|
build`), this records what it made as a manifest (manifest.py) that names every input instead of
copying it: per task, its folder in the tasks' repository and that folder's checksum; per
included state, the trial folder in the runs' repository, the checksum of the commands.jsonl its
keys give, and the state.toml Stage IV wrote (its local paths replaced by repository references);
the Stage II funnel and Table 5 from the work directory; every candidate Stage IV saw, with its
row and first divergence.

SOURCES.toml names the repositories and where their clones are on this machine (the clones'
paths are not written to the manifest), and may add a note per candidate (`[notes]`,
`"<task>/<candidate>" = "why ..."`: what the pipeline could not say, e.g. why an image cannot
be rebuilt here):

    [sources.<name>]
    repository = "https://github.com/OWNER/NAME"
    clone = "/path/to/a/clone"          # any clone holding the commit
    commit = "<40 hex digits>"
    licence = "Apache-2.0"               # or "not stated"
    licence_path = "folder/LICENSE"      # optional
    tasks = "terminal-bench-2"           # the source of the tasks: their parent folder, or
    runs = "runs/<collection>"           # the source of the runs: the RUNS_DIR given to import
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from swe_residual.dataset.errors import ConfigError
from swe_residual.residualize.importing import git_source
from swe_residual.residualize.published.manifest import MANIFEST, SCHEMA
from swe_residual.residualize import tomlwrite
from swe_residual.residualize.review import REVIEWERS, independence
from swe_residual.residualize.table5 import PASSED_REVIEW, TABLE5_ROWS
from swe_residual.residualize.workdir import COMMANDS, PATCH, RunRef, stage_one
from swe_residual.residualize.published.materialise import RUN_PATCHES
from swe_residual.trial.records import read_record

STAGE_III_REJECTED = "stage_iii_rejected"
_DECISION = re.compile(r"^(reviewer_[12]): (name|task_directed|consistent|independent) = ?(.*)$")


DESCRIPTIONS = {
    None: "Residual States from real agents' public Terminal-Bench runs, on the Terminal-Bench 2 tasks as published",
    "codex-runs": "Residual States from real agents' public DeepSWE runs (repository track), "
                  "on the DeepSWE v1.1 tasks as published",
}
DESCRIPTIONS["pi-runs"] = DESCRIPTIONS["deepswe-trials"] = DESCRIPTIONS["codex-runs"]


def trial_path(runs: str, trial: str) -> str:
    """The trial's folder in the source's repository, as git names it: `runs` is the folder the
    import read, relative to the repository's root (`.` when it read the root: no `./` prefix)."""
    return PurePosixPath(runs.strip("/") or ".", trial).as_posix().removeprefix("./")


def submission_name(runs: str, trial: str) -> str:
    """What the trial was submitted as: the runs folder's name, or where the import read the
    repository's root, the trial path's first folder (a run of one agent/model)."""
    return PurePosixPath(runs.strip("/")).name or PurePosixPath(trial).parts[0]

def _state_digest(state_dir: Path) -> dict[str, str]:
    """What names a built state's content: the commands.jsonl of a machine-track state, or the
    changes.patch (the run's own model.patch) of a repository-track one."""
    if (state_dir / COMMANDS).is_file():
        return {"commands_sha256": hashlib.sha256((state_dir / COMMANDS).read_bytes()).hexdigest()}
    return {"patch_sha256": hashlib.sha256((state_dir / PATCH).read_bytes()).hexdigest()}


def _review(packet: Path) -> dict[str, Any]:
    """Each reviewer's answers, and whether the two reviews were independent (review.py's rule:
    a packet that does not say is "unknown")."""
    decisions: dict[str, Any] = {}
    for line in packet.read_text(encoding="utf-8").splitlines():
        found = _DECISION.match(line.strip())
        if found:
            decisions.setdefault(found.group(1), {})[found.group(2)] = found.group(3).strip()
    accept_all = all("(accept-all)" in (decisions.get(r) or {}).get("name", "") for r in REVIEWERS)
    values = {r: dict(decisions.get(r) or {}) for r in REVIEWERS}
    return {"independence": independence(values, accept_all), **decisions}


def _sources(path: Path) -> dict[str, dict[str, Any]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    sources = dict(data.get("sources") or {})
    for name, entry in sources.items():
        for key in ("repository", "clone", "commit"):
            if key not in entry:
                raise ConfigError(f"{path} [sources.{name}]: missing {key!r}")
    return sources


def _one(sources: dict[str, dict[str, Any]], key: str) -> tuple[str, dict[str, Any]]:
    found = [(name, entry) for name, entry in sources.items() if key in entry]
    if len(found) != 1:
        raise ConfigError(f"the sources must name exactly one with {key!r}, found {len(found)}")
    return found[0]


def _portable(value: Any, local: str, reference: str) -> Any:
    """Local paths of the clones replaced by repository references, recursively."""
    if isinstance(value, str):
        return value.replace(local, reference) if local else value
    if isinstance(value, dict):
        return {k: _portable(v, local, reference) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v, local, reference) for v in value]
    return value


def _top_funnel_source(existing: dict[str, Any]) -> str | None:
    """The source of runs the manifest's `[funnel]` counts: the one recorded first, i.e. the only
    source of runs without a `[funnels.<source>]` of its own."""
    runs_sources = [name for name, entry in (existing.get("sources") or {}).items() if "runs" in entry]
    unnamed = [name for name in runs_sources if name not in (existing.get("funnels") or {})]
    return unnamed[0] if len(unnamed) == 1 and existing.get("funnel") else None


def _stage_iv_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Table 5's total column from candidate rows (the manifest's `[candidates]`)."""
    judged = [row for row in rows if row.get("category") != STAGE_III_REJECTED]
    return {label: len(judged) if row == PASSED_REVIEW else sum(r.get("category") == row for r in judged)
            for row, label in TABLE5_ROWS}


def _predecessor_of(candidate_key: str) -> str:
    """`task/terminus__m-a2` -> `terminus__m`."""
    return re.sub(r"-a\d+$", "", candidate_key.split("/", 1)[-1])


def _added(a: Any, b: Any) -> Any:
    """Two funnels' counts summed, key by key (a count only one of them has is kept)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {key: _added(a.get(key), b.get(key)) if key in a and key in b else a.get(key, b.get(key))
                for key in {**a, **b}}
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        return a + b
    return b if b is not None else a


def _runs(funnel: dict[str, Any]) -> int:
    """How many runs a funnel counts (of the dataset's tasks, of others, of unloadable ones)."""
    return sum(value for key, value in funnel.items() if key.startswith("runs") and isinstance(value, int))


def _rejudged(before: dict[str, Any], recorded: dict[str, Any], judged: dict[str, Any]) -> dict[str, Any]:
    """The recorded funnel after a work directory holding some of its runs, all counted already,
    judged their candidates again (a later Stage IV on another stand-in): Stages I-III as counted,
    Table 5 with each such candidate's old row replaced by its new one."""
    unrecorded = sorted(set(judged) - set(recorded))
    if unrecorded:
        raise ConfigError(f"this work directory holds runs recorded before and runs not recorded yet "
                          f"({', '.join(unrecorded[:3])}): record the new runs from a work directory of their own")
    stage_iv = dict(before.get("stage_iv") or {})
    for key, row in judged.items():
        for label, count in _stage_iv_counts([recorded[key]]).items():
            stage_iv[label] = stage_iv.get(label, 0) - count
        for label, count in _stage_iv_counts([row]).items():
            stage_iv[label] = stage_iv.get(label, 0) + count
    return {**before, "stage_iv": stage_iv}


# What a person wrote into a recorded manifest that no pipeline output holds: a source's fields
# beyond SOURCES.toml's (`runs_layout`: how its runs were laid out for the import), a candidate's
# note, a state's later Stage III rounds. Recording a source again (`--add`) keeps them.
HAND_WRITTEN_STAGE_III = ("second_round", "independence_note")


def _keep_written_by_hand(existing: dict[str, Any], merged: dict[str, Any]) -> None:
    """A source keeps its recorded fields the new record does not give; a candidate judged again
    keeps its recorded note while its category is unchanged (a note on another verdict would
    explain a verdict it no longer has); a state keeps its later review rounds (who read it is the
    dataset's history) unless the new record has its own."""
    for name, recorded in (existing.get("sources") or {}).items():
        if name in merged["sources"]:
            merged["sources"][name] = {**recorded, **merged["sources"][name]}
    for key, recorded in (existing.get("candidates") or {}).items():
        row = merged["candidates"].get(key)
        if row is not None and row is not recorded and "note" in recorded and "note" not in row \
                and row.get("category") == recorded.get("category"):
            merged["candidates"][key] = {**row, "note": recorded["note"]}
    for key, recorded in (existing.get("states") or {}).items():
        state = merged["states"].get(key)
        kept = {part: (recorded.get("stage_iii") or {})[part] for part in HAND_WRITTEN_STAGE_III
                if part in (recorded.get("stage_iii") or {})}
        if state is None or state is recorded or not kept:
            continue
        stage_iii = dict(state.get("stage_iii") or {})
        if "second_round" in kept and "second_round" not in stage_iii and "independence" in recorded["stage_iii"]:
            stage_iii["independence"] = recorded["stage_iii"]["independence"]  # what the later round made it
        for part, value in kept.items():
            stage_iii.setdefault(part, value)
        merged["states"][key] = {**state, "stage_iii": stage_iii}


def _merged(existing: dict[str, Any], new: dict[str, Any], runs_name: str, source_keys: set[str],
            imported: set[str] | None = None, review_complete: bool = True) -> dict[str, Any]:
    """`new` (one source of runs) added to a manifest recorded before: sources, tasks, states and
    candidates joined, its funnel under `[funnels.<source>]` (or `[funnel]` when it is the source
    recorded first).

    The work directory may have run Stage IV again on some of the source's candidates only
    (`residualize build --task`): the others keep their recorded rows, a candidate judged anew
    replaces its row, and a state it no longer yields is dropped; a row of the source's
    predecessors that is no longer a Stage II candidate is dropped; the funnel's Stage IV is
    counted from all the source's rows (`source_keys`: its Stage II candidates).

    `imported` (`task/predecessor` of every run the work directory imported, candidate or not)
    says which runs the work directory holds: a work directory that imported only some of the
    source's runs (a copy of the source's files holding the runs not recorded yet) drops no row
    of the runs it does not hold, and when none of its runs has a row yet its funnel counts runs
    the manifest never counted: the two funnels are added; when it holds fewer runs than the
    funnel counts and all of its candidates have rows (it judged them again), the funnel stays
    and only Table 5 changes, row for row. None: the work directory holds all the source's runs
    (its funnel replaces the recorded one).

    `review_complete` False: the work directory's Stage III decided some of the source's
    candidates only (a later round read a few of them; its review.json is not complete), so its
    own counts of retained and rejected ones are not the source's. Every candidate was decided by
    a round before (a source is recorded after its review is complete) and every rejection has its
    `stage_iii_rejected` row, so the funnel counts them from the rows: rejected = the source's
    candidates with such a row, retained = the others. The recorded funnel's `changes` (what a
    later rule or round changed, written beside the counts) are kept whenever the new funnel has
    none."""
    merged = dict(existing)
    for key in ("sources", "tasks", "states", "candidates"):
        merged[key] = {**(existing.get(key) or {}), **new[key]}
    _keep_written_by_hand(existing, merged)
    judged_anew = {key for key, row in new["candidates"].items() if row.get("category") != STAGE_III_REJECTED}
    # A row of one of this source's predecessors that Stage II no longer makes a candidate (a rule
    # changed since it was recorded) goes, with the state it gave.
    ours = source_keys | set(new["candidates"])
    predecessors = {_predecessor_of(key) for key in ours}

    def held(key: str) -> bool:  # a row of a run this work directory imported
        return imported is None or f"{key.split('/', 1)[0]}/{_predecessor_of(key)}" in imported
    recorded_before = [key for key in existing.get("candidates") or {} if held(key)]
    for key in [key for key in merged["candidates"]
                if _predecessor_of(key) in predecessors and key not in ours and held(key)]:
        del merged["candidates"][key]
        judged_anew.add(key)
    for key, entry in list(merged["states"].items()):
        candidate = f"{key.split('/', 1)[0]}/{(entry.get('state') or {}).get('provenance', {}).get('candidate', '')}"
        if candidate in judged_anew and key not in new["states"]:
            del merged["states"][key]
    funnel = dict(new["funnel"])
    rows = [row for key, row in merged["candidates"].items() if key in (source_keys | set(new["candidates"]))]
    funnel["stage_iv"] = _stage_iv_counts(rows)
    top = _top_funnel_source(existing) == runs_name
    before = existing.get("funnel") if top else (existing.get("funnels") or {}).get(runs_name)
    if imported is not None and not recorded_before and before:  # runs new to the manifest
        funnel = _added(before, funnel)
    elif imported is not None and recorded_before and before and _runs(new["funnel"]) < _runs(before):
        funnel = _rejudged(before, existing.get("candidates") or {}, new["candidates"])
    elif not review_complete and before:  # Stage III counted from the rows (see above)
        candidates = source_keys | set(new["candidates"])
        rejected = sum(merged["candidates"].get(key, {}).get("category") == STAGE_III_REJECTED for key in candidates)
        funnel["stage_iii_rejected"] = rejected
        funnel["stage_iii_retained"] = len(candidates) - rejected
    if before and before.get("changes") and "changes" not in funnel:
        funnel["changes"] = before["changes"]
    if top:
        merged["funnel"] = funnel
    else:
        merged["funnels"] = {**(existing.get("funnels") or {}), runs_name: funnel}
    # A task stays while a state of it does (a state dropped above may have been its last).
    merged["tasks"] = {task_id: task for task_id, task in merged["tasks"].items()
                       if any(key.split("/", 1)[0] == task_id for key in merged["states"])}
    return merged


def record(work: Path, built: Path, sources_file: Path, out: Path, *, add: bool = False) -> Path:
    """Write OUT/manifest.toml; with `add`, add this work directory's source of runs to the
    manifest already there (a dataset built from several sources, each recorded in turn)."""
    sources = _sources(sources_file)
    tasks_name, tasks_source = _one(sources, "tasks")
    runs_name, runs_source = _one(sources, "runs")
    generate = json.loads((work / "generate.json").read_text(encoding="utf-8"))
    filtered = json.loads((work / "filter.json").read_text(encoding="utf-8"))
    table5 = json.loads((work / "table5.json").read_text(encoding="utf-8"))
    kind = (generate.get("import") or {}).get("kind")
    manifest: dict[str, Any] = {"schema": SCHEMA, "name": out.name, "description": DESCRIPTIONS.get(kind, DESCRIPTIONS[None]),
                                "sources": {}, "tasks": {}, "states": {}}
    for name, entry in sources.items():
        written = {k: entry[k] for k in ("repository", "commit") if k in entry}
        written["licence"] = entry.get("licence", "not stated")
        if entry.get("licence_path"):
            data = git_source.read_file(Path(entry["clone"]), entry["commit"], entry["licence_path"])
            written["licence_path"] = entry["licence_path"]
            written["licence_sha256"] = hashlib.sha256(data).hexdigest()
        for key in ("tasks", "runs"):
            if key in entry:
                written[key] = entry[key]
        if name == runs_name and kind in ("harbor-jobs", *RUN_PATCHES):
            written["runs_format"] = kind
        manifest["sources"][name] = written
    local_runs = str((generate.get("import") or {}).get("source") or "")
    if not local_runs:
        raise ConfigError(f"{work}/generate.json: no import source (was WORK made by `swe-residual import`?)")
    runs_reference = f"{runs_source['repository']}@{runs_source['commit'][:12]}:{runs_source['runs']}"
    included = [c for c in table5["candidates"] if c.get("state")]
    for task_id in sorted({c["task"] for c in included}):
        folder = f"{tasks_source['tasks'].rstrip('/')}/{task_id}"
        _, contents = git_source.read_folder(Path(tasks_source["clone"]), tasks_source["commit"], folder)
        manifest["tasks"][task_id] = {"source": tasks_name, "path": folder,
                                      "sha256": git_source.folder_checksum(contents), "version": "published",
                                      "licence": tasks_source.get("licence", "not stated")}
    tasks_reference = f"{tasks_source['repository']}@{tasks_source['commit'][:12]}:{tasks_source['tasks']}"
    for candidate in included:
        task_id, state_id = candidate["task"], candidate["state"]
        state_dir = built / task_id / "residual" / state_id
        state = tomllib.loads((state_dir / "state.toml").read_text(encoding="utf-8"))
        state = _portable(state, local_runs, runs_reference)
        given_dataset = ""  # the import's --dataset as it was typed
        if "import" in state.get("provenance", {}):
            command = state["provenance"]["import"]["command"]
            given_dataset = (re.search(r" --dataset (\S+)", command) or [None, ""])[1]
            state["provenance"]["import"]["command"] = re.sub(r" --dataset \S+", "", command)
        run_dir = work / candidate["run"]
        run = read_record(json.loads((run_dir / "record.json").read_text(encoding="utf-8")))
        facts = stage_one(run).get("source") or {}
        imported = stage_one(run).get("import") or {}
        packet = work / "review" / task_id / f"{candidate['candidate']}.md"
        entry = {
            "source": runs_name,
            # a Terminal-Bench or Harbor trial, or a DeepSWE run folder (codex-runs, pi-runs)
            "trial": trial_path(runs_source["runs"], str(imported.get("trial") or imported.get("run"))),
            "submission": submission_name(runs_source["runs"], str(imported.get("trial") or imported.get("run"))),
            "agent": facts.get("agent") or run.agent, "model": facts.get("model"),
            "task_version": (imported.get("task_version") or facts.get("dataset")
                             or ("the dataset's version (the trial's task_checksum is its folder's)"
                                 if imported.get("kind") == "harbor-jobs" else None)
                             or runs_source.get("task_version", "not recorded")),
            **_state_digest(state_dir),
            "stage_i": {"outcome": run.outcome, "termination": run.termination,
                        "submitted": run.submitted, "reward": run.reward,
                        "declared_complete": facts.get("declared_complete", imported.get("declared_done")),
                        **({"declared_how": imported["declared_how"]} if imported.get("declared_how") else {}),
                        "failure_mode": facts.get("failure_mode"), "tests": run.tests or {}},
            "stage_iii": _review(packet) if packet.is_file() else {},
            "state": state,
        }
        # The import's --dataset (this machine's folder of the tasks) named as the tasks' repository.
        for folder in (str(generate.get("dataset") or ""), given_dataset):
            if folder.strip("./"):  # `.` alone would be found everywhere
                entry = _portable(entry, folder, tasks_reference)
        manifest["states"][f"{task_id}/{state_id}"] = entry
    review_file = work / "review.json"  # Stage III's own count (Stage IV may not have run them all yet)
    review = json.loads(review_file.read_text(encoding="utf-8")) if review_file.is_file() else None
    manifest["funnel"] = {
        "runs": generate.get("import", {}).get("trials"),
        "runs_of_tasks_not_in_tb2": sum((generate.get("import", {}).get("unknown_tasks") or {}).values()),
        "runs_of_tb2_tasks": filtered.get("n_runs"),
        "runs_of_unloadable_tasks": sum((generate.get("import", {}).get("unloadable_tasks") or {}).values()),
        "stage_ii": dict(filtered.get("counts") or {}),
        "stage_ii_candidates": len(filtered.get("candidates") or []),
        "stage_iii_retained": len(review["retained"]) if review else table5["table5"]["total"]["passed_review"],
        **({"stage_iii_rejected": len(review["rejected"])} if review else {}),
        "stage_iv": {label: table5["table5"]["total"].get(row, 0) for row, label in TABLE5_ROWS},  # a row newer than the build: none
    }
    notes = tomllib.loads(sources_file.read_text(encoding="utf-8")).get("notes") or {}
    manifest["candidates"] = {
        f"{c['task']}/{c['candidate']}": _portable({k: v for k, v in {
            "category": c["category"], "detail": c.get("detail") or "", "state": c.get("state") or "",
            "oracle_solvable": c.get("oracle_solvable"), "replay": c.get("replay"),
            "note": notes.get(f"{c['task']}/{c['candidate']}")}.items() if v is not None},
            str(generate.get("dataset") or "\0"), tasks_reference)
        for c in table5["candidates"]}
    # The work directory is this machine's: named as the docs name it.
    manifest["candidates"] = _portable(manifest["candidates"], str(work.resolve()), "WORK")
    for rejected in (review or {}).get("rejected", []):  # Stage III's rejections, with the reviewers' reason
        key = f"{rejected['task']}/{rejected['candidate']}"
        manifest["candidates"][key] = {k: v for k, v in {
            "category": STAGE_III_REJECTED, "detail": "answered no: " + ", ".join(rejected.get("failed", [])),
            "note": notes.get(key)}.items() if v is not None}
    out.mkdir(parents=True, exist_ok=True)
    target = out / MANIFEST
    if add and target.is_file():
        source_keys = {f"{c['task']}/{c.get('candidate') or RunRef.from_dict(c).candidate}"
                       for c in filtered.get("candidates") or [] if c.get("candidate") or "predecessor" in c}
        imported = {f"{c['task']}/{c['predecessor']}" for c in [*(filtered.get("candidates") or []),
                                                                *(filtered.get("excluded") or [])]
                    if c.get("task") and c.get("predecessor")}
        manifest = _merged(tomllib.loads(target.read_text(encoding="utf-8")), manifest, runs_name, source_keys,
                           imported, review_complete=bool((review or {}).get("complete", True)))
    target.write_text(tomlwrite.dumps(manifest), encoding="utf-8")
    return target

"""Stage IV fidelity of a replayed machine state: does the replay reproduce the recording?

Two checks, both on instances the docker backend started from the state (so what is checked is
what every rollout gets):

- **Two replays agree.** Each instance is summarised by a fingerprint taken right after its
  replay: the files the replay changed against the image (the engine's own `docker diff`), each
  with its kind, mode and content digest, and the processes left running (command lines, without
  pids or times, of those one pid holds in two listings `LASTING_SEC` apart). Paths under volatile places (`/proc`,
  `/sys`, `/dev`, `/run`, `/tmp`, `/var/tmp`, `/var/log`, `/var/cache`, `/root/.cache`), Python bytecode and `*.log` files are
  set aside: they change with every run whatever the state. The rule: the two replays must change the same paths,
  each with the same kind and mode, and leave the same processes; a file whose content differs
  (a key made by `openssl genrsa`, a timestamp written by the agent's own command) is not a
  divergence but is listed, so a state whose content is not reproducible is visible.
- **Each replayed command printed what the agent saw** (tool-call states: a line's `observed`,
  `states/tool_calls.py`'s tolerance rule): the exit status, and the output's last lines.
- **The replayed pane matches the recorded one** (`states/pane_fidelity.py`): the replay's last
  pane lines against the trial's `post-agent` pane, with what differs between any two machines or
  moments masked (host names, dates and times, long hex digests, the harness's own `; tmux wait
  -S done`).

A state that fails either is reported with the first divergence and not kept.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.dataset.states.pane_fidelity import describe, first_divergence
from swe_residual.dataset.states.tool_calls import output_divergence

VOLATILE_PREFIXES = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/var/log", "/var/cache", "/root/.cache")
# Python bytecode, and log files (`*.log`, Stage II's incidental artifacts too): a tool that names
# its log by the time it ran (pipx's `logs/cmd_2026-12-02_01.31.54.log`) makes another path in
# every replay.
VOLATILE_NAME = re.compile(r"(^|/)__pycache__(/|$)|\.pyc$|\.log$")
DIGEST_CHARS = 16
# One line per path: kind, octal mode, digest (files only) and the path, NUL-free. Where the
# container has GNU xargs and coreutils (every image this suite builds), a handful of processes
# describe any number of paths (`_BATCH_*`); elsewhere one small loop per path, some five
# processes each (12,000 paths an `apt install r-base` left took over ten minutes that way).
_DESCRIBE = (
    'while IFS= read -r p; do '
    'if [ -L "$p" ]; then printf "link %s %s %s\\n" "$(stat -c %a "$p")" "$(readlink "$p" | sha256sum | cut -c1-16)" "$p"; '
    'elif [ -f "$p" ]; then printf "file %s %s %s\\n" "$(stat -c %a "$p")" "$(sha256sum < "$p" | cut -c1-16)" "$p"; '
    'elif [ -d "$p" ]; then printf "dir %s - %s\\n" "$(stat -c %a "$p")" "$p"; '
    'elif [ -e "$p" ]; then printf "other %s - %s\\n" "$(stat -c %a "$p")" "$p"; fi; done'
)
_LISTING = "/tmp/.swe-residual-fingerprint"
_GNU_TOOLS = "xargs --version >/dev/null 2>&1 && stat --version >/dev/null 2>&1 && sha256sum --version >/dev/null 2>&1"
# `%F|%a|%n`: the kind's words hold no `|`, so the line splits from the left. xargs exits 123
# when a path vanished between the engine's diff and the stat: the others are still described.
_BATCH_STAT = f"xargs -r -d '\\n' -a {_LISTING} stat -c '%F|%a|%n' 2>/dev/null; s=$?; [ $s -eq 123 ] && s=0; exit $s"
_BATCH_DIGEST = f"xargs -r -d '\\n' -a {_LISTING} sha256sum 2>/dev/null; s=$?; [ $s -eq 123 ] && s=0; exit $s"
_BATCH_LINKS = f"xargs -r -d '\\n' -a {_LISTING} readlink 2>/dev/null; s=$?; [ $s -eq 123 ] && s=0; exit $s"
_KINDS = {"regular file": "file", "regular empty file": "file", "directory": "dir", "symbolic link": "link"}
# Each process's pid, age in seconds, then its command line. What a replay left running has run
# since the replay ended; a loop it left (`while true; do date ...; sleep 0.1; done`) starts
# children that live a fraction of a second, and which of them a listing catches is chance. The
# state's processes are those one pid holds in two listings LASTING_SEC apart: age alone is not
# enough, since under load a `sleep 0.1` stuck in exec has once shown an age of 2 s.
_PS = "ps -eo pid=,etimes=,args="
# The same three columns from /proc where the image has no `ps` (the official python:*-slim
# images have no procps, nor their stand-ins): the age is the uptime less the start time (the
# 22nd field of /proc/PID/stat, counted after the command's closing parenthesis, in clock ticks).
# printf, not echo: dash's echo would read a backslash in a command line as an escape.
_PROC_AGED = (
    "read -r up _ < /proc/uptime; up=${up%.*}; hz=$(getconf CLK_TCK 2>/dev/null) || hz=100; "
    "for d in /proc/[0-9]*; do pid=${d#/proc/}; read -r s < $d/stat || continue; s=${s##*\\) }; "
    "set -- $s; shift 19; args=$(tr '\\0' ' ' < $d/cmdline); "
    "[ -n \"$args\" ] && printf '%s %s %s\\n' \"$pid\" \"$((up - $1 / hz))\" \"$args\"; done"
)
# The listing's own shell holds _PS in its command line either way: it is left out by that.
_LIST_AGED = f"if command -v ps >/dev/null 2>&1; then {_PS}; else {_PROC_AGED}; fi 2>/dev/null"
LASTING_SEC = 2
# A listing whose processes have all run this long holds no loop's children (each lives a
# fraction of a second, or seconds when stuck in exec under load): no second listing is needed.
SETTLED_SEC = 10
DESCRIBE_TIMEOUT_SEC = 600
REPLAYS_DIFFER = "two replays differ"
OUTPUT_DIFFERS = "a replayed command's output differs from the recorded one"
PANE_TAIL = "tmux capture-pane -p -S - -t swe-residual 2>/dev/null"


def volatile(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in VOLATILE_PREFIXES) \
        or bool(VOLATILE_NAME.search(path))


@dataclass(frozen=True)
class Fingerprint:
    files: dict[str, tuple[str, str, str]]  # path -> (kind, mode, digest or "-"); "deleted" kind for removals
    processes: tuple[str, ...]  # sorted command lines

    def as_dict(self) -> dict[str, Any]:
        return {"files": len(self.files), "processes": list(self.processes)}


@dataclass
class ReplayAgreement:
    divergence: str | None  # None: the two replays agree
    content_differs: list[str] = field(default_factory=list)  # same path, kind and mode; other content

    @property
    def agree(self) -> bool:
        return self.divergence is None


def changed_paths(environment: Any) -> dict[str, str]:
    """Path -> "changed" | "added" | "deleted", from the engine's diff of the container."""
    kinds = {0: "changed", 1: "added", 2: "deleted"}
    changes = environment.client.api.diff(environment.container_id) or []
    return {entry["Path"]: kinds.get(entry["Kind"], "changed") for entry in changes if not volatile(entry["Path"])}


def _run(environment: Any, command: str, paths: list[str]) -> Any:
    """`command` over `paths` (listed in the container's listing file) within the deadline."""
    environment.write_file(_LISTING, ("\n".join(paths) + "\n").encode("utf-8"))
    return environment.exec(f"{command}; s=$?; rm -f {_LISTING}; exit $s", timeout_sec=DESCRIBE_TIMEOUT_SEC)


def _unfinished(result: Any, present: list[str], described: int) -> InfraError:
    # Killed at its deadline (thousands of files an `apt install` left): the paths not yet
    # described would read as changed by the other replay only, a divergence the state never
    # had. The fingerprint is not known, which is the suite's failure, not the state's.
    return InfraError(f"describing the {len(present)} changed path(s) did not finish (exit {result.exit_code}, "
                      f"{described} described in {DESCRIBE_TIMEOUT_SEC} s)")


def _described_one_by_one(environment: Any, present: list[str]) -> dict[str, tuple[str, str, str]]:
    result = _run(environment, f"{_DESCRIBE} < {_LISTING}", present)
    lines = [line.split(" ", 3) for line in result.stdout.splitlines()]
    described = {parts[3]: (parts[0], parts[1], parts[2]) for parts in lines if len(parts) == 4}
    if result.exit_code != 0:
        raise _unfinished(result, present, len(described))
    return described


def _digest_path(line: str) -> tuple[str, str] | None:
    """`sha256sum`'s `DIGEST  PATH` line; a path holding a backslash is escaped, the line marked by one."""
    escaped = line.startswith("\\")
    digest, _, path = (line[1:] if escaped else line).partition("  ")
    if not path:
        return None
    if escaped:
        path = path.replace("\\\\", "\\")  # a newline cannot be in a path of the listing
    return digest, path


def _described_in_batches(environment: Any, present: list[str]) -> dict[str, tuple[str, str, str]]:
    listed = _run(environment, _BATCH_STAT, present)
    if listed.exit_code != 0:
        raise _unfinished(listed, present, 0)
    described: dict[str, tuple[str, str, str]] = {}
    for line in listed.stdout.splitlines():
        parts = line.split("|", 2)
        if len(parts) == 3:
            described[parts[2]] = (_KINDS.get(parts[0], "other"), parts[1], "-")
    files = [path for path, (kind, _, _) in described.items() if kind == "file"]
    if files:
        digests = _run(environment, _BATCH_DIGEST, files)
        if digests.exit_code != 0:
            raise _unfinished(digests, present, len(described) - len(files))
        for line in digests.stdout.splitlines():
            found = _digest_path(line)
            if found and found[1] in described:
                kind, mode, _ = described[found[1]]
                described[found[1]] = (kind, mode, found[0][:DIGEST_CHARS])
    links = [path for path, (kind, _, _) in described.items() if kind == "link"]
    if links:
        targets = _run(environment, _BATCH_LINKS, links)
        if targets.exit_code != 0:
            raise _unfinished(targets, present, len(described) - len(links))
        # One target a line, in the order given (`readlink A B`); the digest as the loop's
        # (`readlink | sha256sum`: the target and its line end).
        for path, target in zip(links, targets.stdout.splitlines()):
            kind, mode, _ = described[path]
            described[path] = (kind, mode, hashlib.sha256(f"{target}\n".encode()).hexdigest()[:DIGEST_CHARS])
    return described


def fingerprint(environment: Any) -> Fingerprint:
    """What the replay left in this container: changed files (kind, mode, digest), processes."""
    changes = changed_paths(environment)
    files: dict[str, tuple[str, str, str]] = {path: ("deleted", "-", "-")
                                              for path, kind in changes.items() if kind == "deleted"}
    present = sorted(path for path, kind in changes.items() if kind != "deleted")
    if present:
        gnu = environment.exec(_GNU_TOOLS, timeout_sec=60).exit_code == 0
        files.update(_described_in_batches(environment, present) if gnu else _described_one_by_one(environment, present))
    return Fingerprint(files, lasting_processes(environment))


def _aged(environment: Any) -> dict[str, tuple[int | None, str]]:
    """Each process's pid -> (age in seconds, or None where `ps` gives none; command line), but
    the listing's own shell and `ps` (from /proc where the image has no `ps`)."""
    aged: dict[str, tuple[int | None, str]] = {}
    for line in environment.exec(_LIST_AGED, timeout_sec=60).stdout.splitlines():
        if not line.strip() or _PS in line:
            continue
        pid, _, rest = line.strip().partition(" ")
        age, _, args = rest.strip().partition(" ")
        aged[pid] = (int(age), args.strip()) if age.isdigit() else (None, rest.strip())
    return aged


def lasting_processes(environment: Any) -> tuple[str, ...]:
    """The sorted command lines of the processes that have run LASTING_SEC or more and are held
    by the same pid in two listings LASTING_SEC apart (one listing when all have run SETTLED_SEC)."""
    first = _aged(environment)
    if all(age is None or age >= SETTLED_SEC for age, _ in first.values()):
        return tuple(sorted(args for _, args in first.values()))
    time.sleep(LASTING_SEC)
    second = _aged(environment)
    return tuple(sorted(args for pid, (age, args) in second.items()
                        if pid in first and first[pid][1] == args and (age is None or age >= LASTING_SEC)))


def compare(first: Fingerprint, second: Fingerprint) -> ReplayAgreement:
    """The first divergence between two replays' fingerprints (None when they agree)."""
    for path in sorted(set(first.files) | set(second.files)):
        left, right = first.files.get(path), second.files.get(path)
        if left is None or right is None:
            which = "the first" if left is not None else "the second"
            return ReplayAgreement(f"{path}: changed only by {which} replay ({(left or right)[0]})")
        if left[:2] != right[:2]:
            return ReplayAgreement(f"{path}: {left[0]} mode {left[1]} in the first replay, "
                                   f"{right[0]} mode {right[1]} in the second")
    if first.processes != second.processes:
        only_first = sorted(set(first.processes) - set(second.processes))
        only_second = sorted(set(second.processes) - set(first.processes))
        return ReplayAgreement(f"processes differ: only in the first replay {only_first[:3]}, "
                               f"only in the second {only_second[:3]}")
    differs = sorted(path for path in first.files if first.files[path][2] != second.files[path][2])
    return ReplayAgreement(None, differs)


def pane_divergence(replayed: str, recorded: str, unstable_files: list[str]) -> str | None:
    """None when the replayed pane ends as the recorded one did, else the first divergence."""
    found = first_divergence(recorded, replayed, unstable_files=tuple(unstable_files))
    return None if found is None else describe(found)


@dataclass
class FidelityCheck:
    """Stage IV's fidelity verdict on one machine state."""

    divergence: str | None  # None: the replays agree and the pane matches (or none was recorded)
    content_differs: list[str] = field(default_factory=list)
    pane: str = "not recorded"  # "matches", "not recorded", or the first divergence
    files: int = 0  # paths the replay changed (volatile ones set aside)
    processes: list[str] = field(default_factory=list)
    outputs_compared: int = 0  # replayed commands whose output was compared with the recording
    # What the second replay changed beyond the clean start (review_machine.changes_since), kept so
    # that an included state's machine.json needs no replay of its own; None: not listed.
    machine_changes: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        found = {"replays_agree": not (self.divergence or "").startswith(REPLAYS_DIFFER),
                 "pane": self.pane, "changed_files": self.files, "content_differs": list(self.content_differs),
                 "processes": list(self.processes)}
        if self.outputs_compared:
            found["outputs_compared"] = self.outputs_compared
            found["outputs"] = "match" if not (self.divergence or "").startswith(OUTPUT_DIFFERS) else "differ"
        return found


def outputs_divergence(replayed: list[Any]) -> str | None:
    """The first replayed command whose output is not what the agent saw (tool_calls.py's rule)."""
    for seen in replayed:
        why = output_divergence(seen.observed, seen.exit_code, seen.output)
        if why is not None:
            return f"{OUTPUT_DIFFERS}: line {seen.line} of commands.jsonl: {why}"
    return None


def check_replay(backend: Any, task: Any, state: Any, environment: Any, spec: Any,
                 recorded_pane: str | None) -> FidelityCheck:
    """Two replays of `state` agree and the first's pane matches `recorded_pane`.

    `environment` is the instance Stage IV already started: when it was made by replaying (the
    `replay` fidelity) it is the first replay; otherwise (a snapshot) a fresh replay is made.
    The second replay is always a fresh container of the task image.
    """
    from swe_residual.environments.docker import states

    prepared = backend.agent_image(task, spec.install)
    first_env = environment if getattr(environment, "fidelity", None) == states.FIDELITY_REPLAY \
        else states.replayed_instance(backend, task, state, spec, prepared)
    try:
        first = fingerprint(first_env)
        outputs = list(getattr(first_env, "replayed_outputs", None) or [])
        replayed_pane = None if recorded_pane is None else first_env.exec(PANE_TAIL, timeout_sec=60).stdout
    finally:
        if first_env is not environment:
            first_env.close()
    listed: dict[str, Any] = {}  # the second replay's machine at its clean start
    second_env = states.replayed_instance(backend, task, state, spec, prepared,
                                          lambda clean: listed.update(before=_listing(clean)))
    try:
        second = fingerprint(second_env)
        outputs = outputs or list(getattr(second_env, "replayed_outputs", None) or [])
        changes = _changes(second_env, listed.get("before"))
    finally:
        second_env.close()
    agreement = compare(first, second)
    pane = "not recorded"
    if recorded_pane is not None and replayed_pane is not None:
        # Judged once the replays are compared: what they did not reproduce cannot be held to the recording.
        pane = pane_divergence(replayed_pane, recorded_pane, agreement.content_differs) or "matches"
    check = FidelityCheck(None, agreement.content_differs, pane, len(first.files), list(first.processes),
                          len(outputs), changes)
    output_why = outputs_divergence(outputs)
    if output_why is not None:  # the earliest cause first: the replay went elsewhere from that command on
        check.divergence = output_why
    elif not agreement.agree:
        check.divergence = f"{REPLAYS_DIFFER}: {agreement.divergence}"
    elif pane not in ("matches", "not recorded"):
        check.divergence = f"pane: {pane}"
    return check


def _listing(environment: Any) -> Any:
    """The machine's listing (processes, packages), or None where it cannot be had."""
    from swe_residual.environments.machine.listing import list_machine

    try:
        return list_machine(environment)
    except (DatasetError, InfraError, OSError):
        return None


def _changes(environment: Any, before: Any) -> dict[str, Any] | None:
    """The replay's machine changes, or None where they cannot be listed (Stage IV then replays
    once more for them, as it did before)."""
    from swe_residual.residualize.review_machine import changes_since

    if before is None:
        return None
    try:
        return changes_since(environment, before)
    except (DatasetError, InfraError, OSError):
        return None

"""What an environment's machine runs and has installed at one moment: processes and packages.

Read through the environment's `exec` alone (one command, nothing written), so every backend
lists the same way: for the choice of how a machine state starts (live.py) and for a person
reviewing a machine-track candidate (Stage III, with docker's file changes: docker/machine_changes.py).

- processes: `ps` (or /proc, where the image has no `ps`), less the environment's own init and
  idle sleep (`idle_pids`) and the listing itself; a process is new when its pid was not running
  at the clean start (an environment's pids are its own);
- packages: `dpkg-query` and the Python distributions of `python3`'s default path, compared by
  name and version.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from swe_residual.environments.base import ExecResult

# The longest sleep every `sleep` takes (2^31 - 1 seconds): the docker backend's init idles with
# it (docker/idle.py); a listing leaves the init's first one out.
IDLE_SLEEP = ("sleep", "2147483647")
_PYTHON_DISTRIBUTIONS = (
    "import importlib.metadata as m\n"
    "for d in m.distributions():\n"
    "    print(f\"{d.metadata['Name']}={d.version}\")\n"
)
# The processes from /proc, for an image without `ps` (slim images have no procps): the same
# three columns, with only the shell's builtins and `tr` (printf: dash's echo would read a
# backslash in a command line as an escape).
PROC_PROCESSES = (
    "for d in /proc/[0-9]*; do pid=${d#/proc/}; ppid=; "
    "while read -r key value; do if [ \"$key\" = PPid: ]; then ppid=$value; break; fi; done < $d/status; "
    "args=$(tr '\\0' ' ' < $d/cmdline); [ -n \"$args\" ] && printf '%s %s %s\\n' \"$pid\" \"$ppid\" \"$args\"; done 2>/dev/null"
)
# One exec: its own pid first (so it and its children are left out), then each section.
PROCESSES = (
    'echo "## self $$"; echo "## processes"; '
    f"if command -v ps >/dev/null 2>&1; then ps -eo pid=,ppid=,args=; else {PROC_PROCESSES}; fi 2>/dev/null; "
)
LISTING = (
    PROCESSES +
    "echo '## dpkg'; dpkg-query -W -f='${Package}=${Version}\\n' 2>/dev/null; "
    f"echo '## python'; python3 -c {shlex.quote(_PYTHON_DISTRIBUTIONS)} 2>/dev/null; true"
)
LISTING_TIMEOUT_SEC = 120.0


class Commands(Protocol):
    """What a listing needs of an environment (environments/base.py `Environment` has it)."""

    def exec(self, command: str, *, timeout_sec: float | None = None, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ExecResult: ...


@dataclass(frozen=True)
class Process:
    pid: str
    ppid: str
    args: str


@dataclass
class MachineListing:
    """Packages by manager (name -> version) and the processes running, at one moment."""

    processes: list[Process] = field(default_factory=list)
    packages: dict[str, dict[str, str]] = field(default_factory=dict)


def idle_pids(rows: Sequence[tuple[str, str, str]]) -> set[str]:
    """The pids of an environment's own processes in a listing of (pid, ppid, args): its init (a
    process whose parent is outside the listing; also what an exec runs through from outside)
    and the init's first idle `sleep`. One only: a `sleep 2147483647` the agent left behind is
    still a process of its own."""
    pids = {pid for pid, _, _ in rows}
    inits = {pid for pid, ppid, _ in rows if ppid not in pids}
    idle = set(inits)
    for pid, ppid, args in rows:
        if ppid in inits and args.split() == list(IDLE_SLEEP):
            idle.add(pid)
            break
    return idle


def parse_listing(text: str) -> MachineListing:
    """The output of the listing exec, without the listing's own processes and the environment's idle ones."""
    listing = MachineListing()
    section, me = "", ""
    rows: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            if section.startswith("self "):
                me, section = section.split()[1], ""
            continue
        if not line.strip():
            continue
        if section == "processes":
            parts = line.split(None, 2)
            if len(parts) == 3:
                rows.append((parts[0], parts[1], parts[2].strip()))  # /proc's cmdline ends with a space
        elif section in ("dpkg", "python"):
            name, _, version = line.strip().partition("=")
            listing.packages.setdefault(section, {})[name if section == "dpkg" else name.lower()] = version
    own = idle_pids([row for row in rows if me not in (row[0], row[1])])
    listing.processes = [Process(*row) for row in rows if me not in (row[0], row[1]) and row[0] not in own]
    return listing


def list_machine(environment: Commands) -> MachineListing:
    """The packages installed and the processes running in the environment now."""
    return parse_listing(environment.exec(LISTING, timeout_sec=LISTING_TIMEOUT_SEC).stdout)


def list_processes(environment: Commands) -> list[Process]:
    """The processes running in the environment now, besides its own idle ones."""
    return parse_listing(environment.exec(PROCESSES, timeout_sec=LISTING_TIMEOUT_SEC).stdout).processes


def package_changes(before: MachineListing, after: MachineListing) -> dict[str, list[str]]:
    changes: dict[str, list[str]] = {"installed": [], "removed": [], "upgraded": []}
    for manager in sorted(set(before.packages) | set(after.packages)):
        old, new = before.packages.get(manager, {}), after.packages.get(manager, {})
        changes["installed"] += [f"{manager}: {name} {new[name]}" for name in sorted(set(new) - set(old))]
        changes["removed"] += [f"{manager}: {name} {old[name]}" for name in sorted(set(old) - set(new))]
        changes["upgraded"] += [f"{manager}: {name} {old[name]} -> {new[name]}"
                                for name in sorted(set(old) & set(new)) if old[name] != new[name]]
    return changes


def new_processes(before: MachineListing, after: MachineListing) -> list[Process]:
    """Processes running after that were not running before (by pid: an environment's pids are its own)."""
    running = {process.pid for process in before.processes}
    return [process for process in after.processes if process.pid not in running]

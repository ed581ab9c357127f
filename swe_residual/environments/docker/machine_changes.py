"""What a container's machine holds beyond its clean start: files, installed packages, processes.

Three views of one container, for a person reviewing a machine-track candidate (Stage III) and
for the choice of how a machine state starts (restore.py):

- files: the engine's own record of the container's layer against its image (`docker diff`,
  the SDK's `container.diff()`): every path added, changed or deleted, less the volatile ones
  (`VOLATILE`: /tmp, caches, logs, the package managers' own databases, byte-code), and less a
  directory listed as changed only because something under it is listed too;
- packages: `dpkg-query` and the Python distributions of `python3`'s default path, listed by
  `list_machine` before and after, compared by name and version;
- processes: `ps` (or /proc, where the image has no `ps`) before and after, less the container's own init and idle sleep (idle.py) and
  the listing itself; a process is new when its pid was not running at the clean start.

`list_machine` is one exec; `file_changes` one engine call; neither writes into the container.
`file_digests` (one exec) says what each changed file holds, so a later run can tell which of
the predecessor's changes it kept (Kept on the machine track).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from swe_residual.environments.docker.engine import engine_errors
from swe_residual.environments.docker.environment import DockerEnvironment
from swe_residual.environments.docker.idle import idle_pids

# Paths whose changes say nothing about the state: scratch space, caches, logs, kernel and
# device files, the package managers' own databases (their changes are the packages section),
# Python byte-code, the harness's scratch tmpfs.
VOLATILE = (
    "/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/var/cache", "/var/log", "/var/lib/apt",
    "/var/lib/dpkg", "/var/lib/pip", "/root/.cache", "/root/.bash_history", "/etc/ld.so.cache",
)
VOLATILE_PARTS = ("__pycache__",)
VOLATILE_SUFFIXES = (".pyc",)
# The docker API's `Kind` of each entry of a container's changes.
KINDS = {0: "changed", 1: "added", 2: "deleted"}
_PYTHON_DISTRIBUTIONS = (
    "import importlib.metadata as m\n"
    "for d in m.distributions():\n"
    "    print(f\"{d.metadata['Name']}={d.version}\")\n"
)
# The processes from /proc, for an image without `ps` (slim images have no procps): the same
# three columns, with only the shell's builtins and `tr`.
PROC_PROCESSES = (
    "for d in /proc/[0-9]*; do pid=${d#/proc/}; ppid=; "
    "while read -r key value; do if [ \"$key\" = PPid: ]; then ppid=$value; break; fi; done < $d/status; "
    "args=$(tr '\\0' ' ' < $d/cmdline); [ -n \"$args\" ] && echo \"$pid $ppid $args\"; done 2>/dev/null"
)
# One exec: its own pid first (so it and its children are left out), then each section.
_PROCESSES = (
    'echo "## self $$"; echo "## processes"; '
    f"if command -v ps >/dev/null 2>&1; then ps -eo pid=,ppid=,args=; else {PROC_PROCESSES}; fi 2>/dev/null; "
)
_LISTING = (
    _PROCESSES +
    "echo '## dpkg'; dpkg-query -W -f='${Package}=${Version}\\n' 2>/dev/null; "
    f"echo '## python'; python3 -c {shlex.quote(_PYTHON_DISTRIBUTIONS)} 2>/dev/null; true"
)
LISTING_TIMEOUT_SEC = 120.0


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


@dataclass
class MachineChanges:
    """What differs from the clean start, each list sorted; `as_dict` is JSON for review pages."""

    files: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in KINDS.values()})
    packages: dict[str, list[str]] = field(default_factory=lambda: {"installed": [], "removed": [], "upgraded": []})
    processes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "packages": self.packages, "processes": self.processes}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> MachineChanges:
        return MachineChanges(dict(data["files"]), dict(data["packages"]), list(data["processes"]))


def parse_listing(text: str) -> MachineListing:
    """The output of the listing exec, without the listing's own processes and the container's idle ones."""
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


def list_machine(environment: DockerEnvironment) -> MachineListing:
    """The packages installed and the processes running in the container now."""
    raw = environment.run(["sh", "-c", _LISTING], timeout_sec=LISTING_TIMEOUT_SEC)
    return parse_listing(raw.stdout.decode(errors="replace"))


def list_processes(environment: DockerEnvironment) -> list[Process]:
    """The processes running in the container now, besides its own idle ones."""
    raw = environment.run(["sh", "-c", _PROCESSES], timeout_sec=LISTING_TIMEOUT_SEC)
    return parse_listing(raw.stdout.decode(errors="replace")).processes


def is_volatile(path: str) -> bool:
    if any(path == prefix or path.startswith(prefix + "/") for prefix in VOLATILE):
        return True
    return path.endswith(VOLATILE_SUFFIXES) or any(part in VOLATILE_PARTS for part in path.split("/"))


def kept_changes(entries: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The engine's change entries by kind, less volatile paths and directories changed only
    because of what is under them."""
    paths = sorted({str(entry["Path"]) for entry in entries})
    parents = {path.rsplit("/", depth)[0] for path in paths for depth in range(1, path.count("/"))}
    out: dict[str, list[str]] = {kind: [] for kind in KINDS.values()}
    for entry in sorted(entries, key=lambda item: str(item["Path"])):
        path, kind = str(entry["Path"]), KINDS.get(int(entry["Kind"]), "changed")
        if is_volatile(path) or (kind == "changed" and path in parents):
            continue
        out[kind].append(path)
    return out


def file_changes(environment: DockerEnvironment) -> dict[str, list[str]]:
    """Paths added, changed and deleted in the container's own layer (its image is the clean start)."""
    with engine_errors(f"listing the changes of container {environment.container_id[:12]}"):
        entries = environment.client.api.diff(environment.container_id) or []
    return kept_changes(entries)


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
    """Processes running after that were not running before (by pid: a container's pids are its own)."""
    running = {process.pid for process in before.processes}
    return [process for process in after.processes if process.pid not in running]


def machine_changes(environment: DockerEnvironment, before: MachineListing) -> MachineChanges:
    """What the container holds beyond its clean start, `before` listed right after it started."""
    after = list_machine(environment)
    return MachineChanges(file_changes(environment), package_changes(before, after),
                          [process.args for process in new_processes(before, after)])


# One exec: each path's SHA-256, `dir` for a directory, `-` for a path that is not there.
_DIGESTS = ('for p in "$@"; do if [ -d "$p" ]; then echo "dir $p"; elif [ -e "$p" ]; then '
            'sha256sum "$p" 2>/dev/null || echo "unreadable $p"; else echo "- $p"; fi; done')


def file_digests(environment: Any, paths: list[str]) -> dict[str, str]:
    """{path: its SHA-256, `dir`, `unreadable` or `-` (not there)} in the container now; any
    environment with `exec` (a command of `bash -c`)."""
    if not paths:
        return {}
    found = environment.exec(f"set -- {' '.join(shlex.quote(path) for path in paths)}; {_DIGESTS}",
                             timeout_sec=LISTING_TIMEOUT_SEC)
    digests: dict[str, str] = {}
    for line in found.stdout.splitlines():
        value, _, path = line.partition(" ")
        path = path.lstrip(" *")  # sha256sum's separator: two spaces, or " *" in binary mode
        if path in paths:
            digests[path] = value
    return digests


def unchanged_share(recorded: dict[str, str], now: dict[str, str]) -> float | None:
    """Share of the predecessor's file changes still as it left them (its digests `recorded`,
    the same paths' `now`); directories are left out (what they hold is listed on its own).
    None when it changed no file."""
    files = [path for path, digest in recorded.items() if digest != "dir"]
    if not files:
        return None
    return sum(now.get(path) == recorded[path] for path in files) / len(files)

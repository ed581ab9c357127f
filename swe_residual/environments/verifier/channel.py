"""The suite's own account of the verifier's pytest runs, read back on the host.

`channel_plugin.py` is shipped into the verifier's environment (into every site-packages that
holds pytest, with a `.pth` file importing it) and writes what pytest's own hooks saw to the
exec's stderr, streamed to the host as the tests run (a descriptor named in its environment),
or, where that descriptor did not reach pytest, to a file whose path only the verifier's process
is given. This module says how to install it, and reads what it wrote into a `ChannelReport`:
one entry per pytest session, each with its per-test statuses, the phases that raised before
any report was made of them, and whether it reached its end; and the hooks that neither pytest
nor the reporter implements.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from swe_residual.environments.verifier import channel_plugin

CHANNEL_VARIABLE = channel_plugin.CHANNEL_VARIABLE
STREAM_VARIABLE = channel_plugin.STREAM_VARIABLE
# The descriptor test.sh is given for the stream (`3>&2`: the exec's stderr, while test.sh's own
# stderr goes to its stdout): a single digit, as every POSIX shell's redirections allow.
STREAM_FD = 3
# What of the stream the host keeps: far more than any suite's events (a few hundred bytes a test).
STREAM_MAX_BYTES = 64 * 1024 * 1024
MODULE_FILE = f"{channel_plugin.MODULE_NAME}.py"
PTH_FILE = f"{channel_plugin.MODULE_NAME}.pth"
# Where the verifier environment's reporter is staged (a directory with a nonce), and where it
# writes: a dot file in the verifier's log directory, so it comes back with the logs in the same
# request, and a `mv /logs/verifier/*` (DeepSWE's test.sh tidies its logs so) leaves it alone.
STAGE_PREFIX = "/var/tmp/.swe-residual-verdict-"
CHANNEL_PREFIX = ".swe-residual-verdict-"


# Where Python environments keep their packages: the system's (Debian's dist-packages, other
# distributions' site-packages, pip's /usr/local), virtual environments in the usual places
# (/opt/NAME, /venv, /app/.venv, a project's own), conda, pyenv, uv's tools and the user site.
SITE_PACKAGES = (
    "/usr/lib/python3*/*-packages", "/usr/lib64/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
    "/usr/local/lib64/python3*/*-packages", "/opt/*/lib/python3*/site-packages", "/opt/*/*/lib/python3*/site-packages",
    "/opt/conda/envs/*/lib/python3*/site-packages", "/*/lib/python3*/site-packages",
    "/*/.venv/lib/python3*/site-packages", "/*/venv/lib/python3*/site-packages", "/app/*/lib/python3*/site-packages",
    "/home/*/*/lib/python3*/site-packages", "/root/*/lib/python3*/site-packages",
    "/root/.pyenv/versions/*/lib/python3*/site-packages", "/root/.local/share/uv/tools/*/lib/python3*/site-packages",
    "/root/.local/lib/python3*/site-packages",
)


@dataclass(frozen=True)
class Reporter:
    """One verification's reporter: its staging directory and its channel, each with a nonce."""

    stage: str
    channel_name: str  # a file of the verifier's log directory

    @classmethod
    def new(cls) -> Reporter:
        return cls(STAGE_PREFIX + secrets.token_hex(8), CHANNEL_PREFIX + secrets.token_hex(8) + ".jsonl")

    def files(self) -> dict[str, bytes]:
        """Container path -> bytes to place before the install: the reporter and its .pth line."""
        return {
            f"{self.stage}/{MODULE_FILE}": Path(channel_plugin.__file__).read_bytes(),
            f"{self.stage}/{PTH_FILE}": f"import {channel_plugin.MODULE_NAME}\n".encode(),
        }

    def install_command(self) -> str:
        """Shell that copies the staged files into every site-packages (or dist-packages)
        directory holding pytest among the places Python environments live (`SITE_PACKAGES`);
        silent, and never failing the command it precedes (a verifier without pytest there runs
        without the reporter). A glob, not a walk of the file system: a `find /` costs most of a
        second on an overlay file system, on every verification."""
        stage = shlex.quote(self.stage)
        return (
            f"for packages in {' '.join(SITE_PACKAGES)}; do [ -d \"$packages/_pytest\" ] && "
            f"cp {stage}/{MODULE_FILE} {stage}/{PTH_FILE} \"$packages/\" 2>/dev/null; done; true"
        )

    def take_channel(self, files: dict[str, bytes], stream: bytes = b"") -> bytes:
        """Remove the channel file from the verifier's log files (it is not the task's) and return
        what the reporter said: the stream when it carried any event (the file, which a process
        in the machine could rewrite, is then not read), else the file; b"" when no pytest of the
        verifier loaded the reporter."""
        found = b""
        for name in [name for name in files if name.rsplit("/", 1)[-1] == self.channel_name]:
            found += files.pop(name)
        if any(line.startswith(b'{"e": ') for line in stream.splitlines()):
            return stream
        return found


PASSED, FAILED, SKIPPED, ERROR = "passed", "failed", "skipped", "error"
_RANK = {PASSED: 0, SKIPPED: 1, FAILED: 2, ERROR: 3}
STATUS_RANK = _RANK  # worse statuses rank higher


@dataclass
class Session:
    """One pytest process that loaded the reporter."""

    finished: bool = False
    exit_status: int | None = None
    tests: dict[str, str] = field(default_factory=dict)  # node id -> status
    collect_errors: list[str] = field(default_factory=list)
    # node id -> FAILED or ERROR: a phase raised (not a skip) before its report was made, whatever
    # the report then said (a pytest_runtest_makereport wrapper of the code under test).
    raised: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ChannelReport:
    sessions: tuple[Session, ...]
    # Test modules as pytest was about to import them: path -> sha256 (None: unreadable).
    files: dict[str, str | None]
    problems: tuple[str, ...] = ()  # lines that were not the reporter's
    # (hook, file) of each implementation of a reporting hook that is not pytest's or the reporter's.
    hooks: tuple[tuple[str, str], ...] = ()

    @property
    def unfinished(self) -> int:
        return sum(1 for session in self.sessions if not session.finished)


def _phase_status(when: str, outcome: str) -> str | None:
    if outcome == "failed":
        return FAILED if when == "call" else ERROR
    if outcome == "skipped":
        return SKIPPED
    return PASSED if when == "call" else None  # a passing setup or teardown says nothing yet


def read_channel(data: bytes) -> ChannelReport:
    """Parse what the reporter wrote: one session per `start`, each event going to the latest
    session of its process (two pytest runs of one test.sh, even at once, stay apart)."""
    sessions: list[Session] = []
    files: dict[str, str | None] = {}
    problems: list[str] = []
    hooks: list[tuple[str, str]] = []
    latest: dict[object, Session] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            kind = event["e"]
        except (ValueError, KeyError, TypeError):
            problems.append(f"line {number} is not the reporter's")
            continue
        process = event.get("pid")
        current = latest.get(process)
        if kind == "start" or current is None:
            current = latest[process] = Session()
            sessions.append(current)
            if kind == "start":
                continue
        if kind == "file" and isinstance(event.get("path"), str):
            files[event["path"]] = event.get("sha256")
        elif kind == "collect_error":
            current.collect_errors.append(str(event.get("id")))
        elif kind == "test":
            status = _phase_status(str(event.get("when")), str(event.get("outcome")))
            test_id = str(event.get("id"))
            if status is not None:
                previous = current.tests.get(test_id)
                # A teardown error after a pass is an error; a setup skip stays a skip.
                if previous is None or _RANK[status] > _RANK[previous]:
                    current.tests[test_id] = status
        elif kind == "raw":
            if event.get("raised") is True and event.get("skip") is not True:
                status = FAILED if event.get("when") == "call" else ERROR
                test_id = str(event.get("id"))
                if _RANK[status] > _RANK.get(current.raised.get(test_id, PASSED), 0):
                    current.raised[test_id] = status
        elif kind == "hook":
            hook = (str(event.get("hook")), str(event.get("file")))
            if hook not in hooks:
                hooks.append(hook)
        elif kind == "finish":
            current.finished = True
            current.exit_status = event.get("exitstatus")
    return ChannelReport(tuple(sessions), files, tuple(problems), tuple(hooks))


def junit_id(node_id: str) -> str:
    """The id pytest's JUnit XML gives a node id (`classname.name`): the file path dotted without
    `.py`, the classes, then the test's name with its parameters."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names)


def aliases(node_id: str) -> set[str]:
    """Every id a report may give this node: the node id (CTRF), the JUnit id, the bare name;
    for a parametrized node also those ids without its parameters (a CTRF report may name
    `test_row_parallel_linear` once for all its `[...]` cases: what stands for all of them)."""
    path, bracket, params = node_id.partition("[")
    names = {node_id, junit_id(node_id), path.split("::")[-1] + bracket + params}
    if bracket:
        names |= {path, junit_id(path), path.split("::")[-1]}
    return names

"""The tool-call form of `commands.jsonl`: an agent's file tools and recorded command outputs.

An agent that acts through tools (OpenClaw's `exec`, `write`, `edit`) rather than a terminal
leaves, besides one-command lines, lines that write or edit a file:

    {"write": "/app/x.py", "content": "..."}                       the file's whole new content
    {"edit": "/app/x.py", "replace": [{"old": "...", "new": "..."}]} each `old` found exactly once

A path is absolute, or relative to the task's workdir. A one-command line may also carry what
the recording showed, `"observed": {"exit_code": 0, "output": "..."}`, and the shell the agent
ran it with (`"shell": "sh"`; default bash). Stage IV compares each replayed command's output
with `observed` (`output_divergence`, the tolerance rule below); a start never does.

The tolerance rule for an observed output: both sides have line ends made `\\n`, the agent's own
`(no output)` and exit-status notes dropped, then the masks of the pane rule
(`states/pane_fidelity.py`: host names, dates, times, long hex digests) and four more (numbers
followed by a time unit, `0x` addresses, process ids after `pid`, lines made only of progress
characters such as `openssl genrsa`'s `....+++*`) and, in `ls -l` lines, the link count, a
directory's size and the `total` of blocks (they depend on the storage driver); the exit status must be equal
and the last `LAST_LINES` lines equal, both outputs trimmed (the agent's tool showed them
trimmed) and without a Python traceback's position markers (`~~~~^^` lines: which lines get
them depends on the Python version). Lines of the recorded output that end with a file the
agent's own set-up wrote before its first turn (`observed.harness_files`: OpenClaw's workspace
files, an `ls` or `find` entry of them) are dropped first: no tool call made those files. So are
lines that name a path under a mount of the recording harness's own (`observed.harness_mounts`,
which the importer read from the source: pre.dev's `/home/user/predev-agent`, the agent's runtime
mounted from the recording host, in Harbor's `docker-compose-mounts.json`): the task's machine never
had them, and a replay has no such mount. A command the agent moved to the background and saw end
only through polls has `observed` without `output`: its exit status alone is compared. An
output recorded as the `rich` library printed it (`"printed_by": "rich"`: mini-swe-agent's
printout) is compared with the replayed output made the same way: tabs expanded to 8-column
stops, `\\a \\b \\v \\f \\r` removed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.states.pane_fidelity import normalized, storage_masked

WRITE, EDIT = "write", "edit"
# An output the agent saw through the `rich` library (mini-swe-agent's printout): tabs expanded
# to 8-column stops and these control characters removed before it reached the terminal.
RICH, RICH_TAB_SIZE = "rich", 8
_RICH_DROPPED = str.maketrans("", "", "\a\b\v\f\r")
FILE_TOOLS = (WRITE, EDIT)
LAST_LINES = 10
MAX_EDIT_OUTPUT = 64 * 1024 * 1024
# How OpenClaw ends an exec's text: its notes about the exit, never the command's own output.
_AGENT_NOTES = re.compile(r"(?:\n*\((?:Command exited with code -?\d+|no output)\)|\n*Command not found)\s*$")
# A Python traceback's position markers (`~~~~^^`): which lines get them depends on the version.
_CARETS = re.compile(r"^\s*[~^]+[~^\s]*$")
_MORE_MASKS = (
    # a progress line (`openssl genrsa`'s dots and pluses, a bar of `#` or `=`): random or timed
    (re.compile(r"^[.+*#=\-\s]{3,}$"), "<PROGRESS>"),
    # pip's download bar (`━━━━╸━━ 16.6/16.6 MB 11.8 MB/s eta 0:00:01`; its figures after the
    # bar change with the pip version and the line's speed): the bar is progress, whatever follows
    (re.compile(r"^\s*[━╸╺╾╼─]{3,}.*$"), "<PROGRESS>"),
    # pip's check of its own version: what the index's newest pip is on the day the command ran
    (re.compile(r"^\[notice\] (?:A new release of pip is available|To update, run): .*$"), "[notice] <PIP-SELF-CHECK>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|s|sec|secs|seconds|minutes|min|it/s|MB/s|kB/s)\b"), "<DURATION>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<ADDR>"),
    (re.compile(r"\bpid \d+"), "pid <PID>"),
    # dpkg's count of the files its packages hold, as `apt-get install` prints it: a property of the
    # base image's build (every package at the version of the day it was built: the same published
    # tag months later counts otherwise), not of what the agent did; the packages it unpacks and
    # sets up are the lines that follow, compared as they are
    (re.compile(r"^\(Reading database \.\.\. \d+ files and directories currently installed\.\)$"),
     "(Reading database ... <DPKG-FILES> files and directories currently installed.)"),
)


# `pip install`'s summary of what it installed (`Successfully installed numpy-2.4.4 scipy-1.17.1`).
_PIP_INSTALLED = re.compile(r"^Successfully installed (.+)$", re.MULTILINE)


def recorded_installs(entries: list[dict[str, Any]]) -> dict[str, str]:
    """Package -> version, from what the recorded outputs say pip installed (the last one wins).

    A replay pins these (a pip constraints file): `pip install numpy` resolves to the newest
    numpy on the day it runs, and the recording says which one the predecessor got; without the
    pin a replay months later builds another machine than the recorded one."""
    pins: dict[str, str] = {}
    for entry in entries:
        observed = entry.get("observed")
        if not isinstance(observed, dict) or not isinstance(observed.get("output"), str):
            continue
        for found in _PIP_INSTALLED.finditer(observed["output"].replace("\r\n", "\n")):
            for item in found.group(1).split():
                name, dash, version = item.rpartition("-")
                if dash and name and re.fullmatch(r"[0-9][0-9A-Za-z.+!]*", version):
                    pins[name] = version
    return pins


def constraints_text(pins: dict[str, str]) -> str:
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


# A printed float (`82702.92832832198`, `1.892285846310897e-08`). Read before the pane's masks,
# whose long-hex rule would take a mantissa with its `e` for a digest.
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])")
# Below this magnitude a printed float reads as zero: a fitted parameter at its bound or a
# residual is the machine's rounding noise (raman-fitting's offset: 1.89e-08 when recorded,
# 2.3e-08 on another CPU, beside an amplitude of 82702.9).
NEAR_ZERO = 1e-6


def _float_masked(number: str) -> str:
    """A float as compared: `<~0>` below NEAR_ZERO, else its first 6 significant digits (the
    last digits of a long one are the machine's: BLAS kernels, instruction set)."""
    return "<~0>" if abs(float(number)) < NEAR_ZERO else _significant(number)


def _significant(number: str, digits: int = 6) -> str:
    """`number` to `digits` significant digits when it has more (a shorter one is as printed)."""
    if len(re.sub(r"[^0-9]", "", number.split("e")[0].split("E")[0]).lstrip("0")) <= digits:
        return number
    return f"{float(number):.{digits}g}"


def is_file_tool(entry: dict[str, Any]) -> bool:
    return any(key in entry for key in FILE_TOOLS)


def check_file_tool(path: Path, number: int, entry: dict[str, Any]) -> None:
    """Field types of a write or edit line (raise DatasetError naming the line)."""
    kind = WRITE if WRITE in entry else EDIT
    target = entry[kind]
    if not isinstance(target, str) or not target.strip() or "\0" in target:
        raise DatasetError(path, f"line {number}: `{kind}` must name a file, got {target!r}", field=kind)
    if kind == WRITE and not isinstance(entry.get("content"), str):
        raise DatasetError(path, f"line {number}: a write needs a string `content`", field="content")
    if kind == EDIT:
        replace = entry.get("replace")
        if not isinstance(replace, list) or not replace or not all(
                isinstance(item, dict) and isinstance(item.get("old"), str) and item["old"]
                and isinstance(item.get("new"), str) for item in replace):
            raise DatasetError(path, f"line {number}: an edit needs `replace`, a list of "
                               "{\"old\": TEXT, \"new\": TEXT} with a non-empty `old`", field="replace")


def apply_edit(text: str, replace: list[dict[str, str]], where: str) -> str:
    """`text` with each `old` replaced by its `new`, in order; each must occur exactly once."""
    for number, item in enumerate(replace, start=1):
        found = text.count(item["old"])
        if found != 1:
            raise DatasetError(where, f"edit {number} of {len(replace)}: the text to replace occurs {found} times "
                               f"in the replayed file (the recording found it once): {item['old'][:120]!r}")
        text = text.replace(item["old"], item["new"], 1)
    return text


def _masked_lines(output: str) -> list[str]:
    # The agent's tool trims what it shows (a traceback's first `  File` line loses its indent).
    text = _AGENT_NOTES.sub("", output.replace("\r\n", "\n").replace("\r", "\n")).strip()
    text = _FLOAT.sub(lambda found: _float_masked(found.group(0)), text)
    lines = [line for line in normalized(text) if not _CARETS.match(line)]
    for pattern, replacement in _MORE_MASKS:
        lines = [pattern.sub(replacement, line) for line in lines]
    return [storage_masked(line) for line in lines][-LAST_LINES:]


def _without_names(output: str, names: list[str]) -> str:
    """The recorded output less the lines that end with a file the agent's set-up wrote (an
    `ls` or `find` entry of it): the replay never has those files."""
    if not names:
        return output
    ending = re.compile(r"(?:^|[\s/])(?:" + "|".join(re.escape(str(name)) for name in names) + r")\s*$")
    return "\n".join(line for line in output.split("\n") if not ending.search(line))


def _without_mounts(output: str, mounts: list[str]) -> str:
    """The recorded output less the lines that name a path under one of the recording harness's
    own mounts (`observed.harness_mounts`): no replay has them."""
    if not mounts:
        return output
    under = re.compile(r"(?<![\w./-])(?:" + "|".join(re.escape(str(mount).rstrip("/")) for mount in mounts)
                       + r")(?![\w.-])")
    return "\n".join(line for line in output.split("\n") if not under.search(line))


def as_printed(output: str, printed_by: Any) -> str:
    """A replayed output as the agent's terminal would have shown it (`observed.printed_by`)."""
    if printed_by != RICH:
        return output
    return "\n".join(line.expandtabs(RICH_TAB_SIZE) for line in output.translate(_RICH_DROPPED).split("\n"))


# pip's account of its own work: which lines it prints, and how, change with its version and
# with where it installs (a venv's pip does not warn about root); what it installed does not.
_PIP_PRESENTATION = re.compile(
    r"^(?:Collecting \S|\s*Downloading \S|\s*Using cached \S|Installing collected packages: |Successfully installed "
    r"|Requirement already satisfied: |WARNING: Running pip as the 'root' user|\[notice\] "
    r"|Building wheels? for |\s+(?:Building wheel|Created wheel|Stored in directory|Preparing metadata|"
    r"Installing build dependencies|Getting requirements to build|Attempting uninstall|Found existing installation"
    r"|Uninstalling \S|Successfully uninstalled )|Successfully built |\s*[━╸╺╾╼─]{3,})")


def _pip_installed(output: str) -> list[str]:
    """The packages of pip's `Successfully installed` lines, sorted."""
    return sorted(item for found in _PIP_INSTALLED.finditer(output.replace("\r\n", "\n")) for item in found.group(1).split())


def _without_pip_presentation(output: str) -> str:
    return "\n".join(line for line in output.replace("\r\n", "\n").split("\n") if not _PIP_PRESENTATION.match(line))


# apt's and dpkg's account of their own work: the order dpkg configures packages in, which
# triggers run after them and what their scripts print change with the packages' versions of the
# day (a ca-certificates update that no longer re-triggers itself); what was set up does not.
_APT_SET_UP = re.compile(r"^Setting up (\S+) \((\S+)\) \.\.\.\s*$", re.MULTILINE)
_APT_AT_WORK = re.compile(r"^(?:Setting up \S+ \(|Unpacking \S+ \(|Processing triggers for \S+ \(|Preparing to unpack "
                          r"|Selecting previously unselected package |\(Reading database \.\.\.|Updating certificates in "
                          r"|Running hooks in /etc/ca-certificates/update\.d|(?:Hit|Get):\d+ \S+://)", re.MULTILINE)
_APT_PRESENTATION = re.compile(
    r"^(?:Setting up \S+ \(|Unpacking \S+ \(|Processing triggers for \S+ \(|Preparing to unpack |Selecting previously "
    r"unselected package |\(Reading database \.\.\.|Updating certificates in |\d+ added, \d+ removed; done\.$"
    r"|Running hooks in /etc/ca-certificates/update\.d|done\.$|running python (?:post-)?rtupdate hooks for "
    r"|debconf: |update-alternatives: |Created symlink |invoke-rc\.d: "
    # `apt-get update`: the indexes fetched, their sizes and the time taken are the mirror's of the day
    r"|(?:Hit|Get|Ign):\d+ |Fetched \S+ \S*B in |Reading package lists|Building dependency tree|Reading state information"
    r"|\d+ packages? can be upgraded|All packages are up to date|Run 'apt list --upgradable')")


def _apt_set_up(output: str) -> set[tuple[str, str]]:
    """The (package, version) pairs of dpkg's `Setting up` lines."""
    return set(_APT_SET_UP.findall(output.replace("\r\n", "\n").replace("\r", "\n")))


def _without_apt_presentation(output: str) -> str:
    lines = output.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line for line in lines if not _APT_PRESENTATION.match(line.strip()))


def output_divergence(observed: dict[str, Any], exit_code: int, output: str) -> str | None:
    """None when a replayed command ended as `observed` says it did, else how it differs.

    Where the recording shows pip installing (`Successfully installed ...`), pip's own lines are
    compared by what they say was installed (the same packages and versions: the replay pins
    them) and set aside from the last lines, which are compared for the rest of the output."""
    output = as_printed(output, observed.get("printed_by"))
    want_code = observed.get("exit_code")
    if isinstance(want_code, int) and want_code != exit_code:
        return f"exit status {exit_code}, recorded {want_code}"
    if "output" not in observed:  # seen only in pieces (a command polled in the background)
        return None
    harness = observed.get("harness_files") or []
    recorded = _without_mounts(_without_names(str(observed.get("output", "")), harness),
                               observed.get("harness_mounts") or [])
    installed = _pip_installed(recorded)
    if installed:
        replayed_installed = _pip_installed(output)
        if replayed_installed != installed:
            return f"pip installed {' '.join(replayed_installed) or 'nothing'}, recorded {' '.join(installed)}"
        recorded, output = _without_pip_presentation(recorded), _without_pip_presentation(output)
    if _APT_AT_WORK.search(recorded.replace("\r", "\n")):
        # What the recording shows set up (its last lines may show only some) is set up again,
        # each at its version; apt's and dpkg's own lines are then set aside from both outputs.
        missing = sorted(_apt_set_up(recorded) - _apt_set_up(output))
        if missing:
            return "dpkg did not set up " + ", ".join(f"{name} {version}" for name, version in missing) + \
                " as recorded"
        recorded, output = _without_apt_presentation(recorded), _without_apt_presentation(output)
    want = _masked_lines(recorded)
    got = _masked_lines(output)
    for number in range(max(len(want), len(got))):
        left = want[number] if number < len(want) else None
        right = got[number] if number < len(got) else None
        if left != right:
            return (f"output differs at line {number + 1} of its last {LAST_LINES}: "
                    f"recorded {left!r}, replayed {right!r}")
    return None

"""Does a replayed terminal look as the recorded one did? The last lines of two panes compared.

Terminal-Bench saved the agent's pane when it stopped (`panes/post-agent.txt`, tmux
`capture-pane`); a replay of its keystrokes ends with a pane of its own
(`TerminalSession.capture`). The two are compared on their last lines, after what differs
between any two machines or moments is set aside (the tolerance rule):

- the container's host name in the prompt (`root@56f036e0b9ee:/app#`);
- dates and times (`2025-07-15`, `02:14:31`, `ls -l`'s `Jul 15 02:14`), each masked as one token;
- hexadecimal runs of 16 digits or more and colon-separated byte lists (digests, fingerprints,
  container ids: a key generated again differs);
- the `; tmux wait -S done` Terminal-Bench appended to a blocking command it typed (the replay
  types the command as the agent wrote it), with the line break tmux put inside or after it when
  the suffix took the line past the pane's width;
- `df`'s sizes (the host's disk), the header's spacing they set, and the container root's file
  system (the engine's storage driver);
- the machine's processor count where a tool prints it (git's `Delta compression using up to 32
  threads`), and the newest pip on PyPI in pip's `A new release of pip is available: 25.2 -> 26.0.1`
  notice (the index's today, not the state's);
- in `ls -l` output, what the storage driver decides: the `total` of blocks, link counts and a
  directory's size (a file's size stays compared);
- trailing spaces and trailing blank lines;
- in an `ls -l` line, the size of a file whose content the two replays themselves did not
  reproduce (Stage IV's `content_differs`: samples drawn without a seed, a key made again): the
  keystrokes do not fix it, so neither replay can be held to the recorded one.

Everything else must be equal. The result names the first line, counted from the top of the
compared tail, where they differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LAST_LINES = 10
# A shell prompt's user@host: a container's host name is its id, different on every machine.
_HOST = re.compile(r"\b([a-z_][a-z0-9_-]*)@[0-9a-f]{12}\b")
# The `; tmux wait -S done` Terminal-Bench appended to a command it typed, which often pushes the
# command past the pane's width: tmux wraps it anywhere, even inside the suffix.
_HARNESS_SUFFIX = re.compile("\n?".join(re.escape(char) for char in "; tmux wait -S done") + "(?:[ \t]*\n)?")
_MASKS = (
    (re.compile(r"\b[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){7,}\b"), "<HEX>"),
    (re.compile(r"\b[0-9a-fA-F]{16,}\b"), "<HEX>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"), "<DATE>"),
    (re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+"
                r"(?:\d{2}:\d{2}(?::\d{2})?(?:\s+\d{4})?|\d{4})\b"), "<DATE>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b"), "<TIME>"),
    # `df`: the sizes are the host's disk, and the header's spacing follows the widest figure; the
    # container's root is the engine's storage driver (`overlay`, `fuse-overlayfs`)
    (re.compile(r"^Filesystem\s+(\S+)\s+Used\s+(Avail\S*)\s+(Use%|Capacity)\s+Mounted on$"), r"Filesystem \1 Used \2 \3 Mounted on"),
    (re.compile(r"^\S+\s+(?:[\d.,]+[KMGTPE]?i?\s+){3}\d+%\s+/$"), "<ROOT-FS> <DF-SIZES> /"),
    (re.compile(r"^(\S+)\s+(?:[\d.,]+[KMGTPE]?i?\s+){3}\d+%\s+(/\S+)$"), r"\1 <DF-SIZES> \2"),
    # git pack's threads are the machine's processors
    (re.compile(r"\b(Delta compression using up to) \d+ (threads?)\b"), r"\1 <CPUS> \2"),
    # pip's notice names the newest pip on the index when it ran: the pip installed stays compared
    (re.compile(r"(A new release of pip is available: \S+ -> )\S+"), r"\1<NEWEST>"),
)


@dataclass(frozen=True)
class Divergence:
    line: int  # 1-based, in the compared tail
    recorded: str | None  # None: the recorded tail is shorter
    replayed: str | None


def _masked(line: str) -> str:
    line = _HOST.sub(r"\1@HOST", line)
    for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def _unwrapped(pane: str) -> str:
    """The pane without the harness's suffix, a line it wrapped joined again."""
    def drop(found: re.Match[str]) -> str:
        return "\n" if found.group(0).endswith("\n") else ""
    return _HARNESS_SUFFIX.sub(drop, pane.replace("\r\n", "\n"))


# An `ls -l` line: mode, link count, owner and group (with their spacing), size, then the rest
# (date and name). The tool-call rule masks its fields too (states/tool_calls.py).
LS_LONG = re.compile(r"^([-dlcbps][-rwxsStT]{9}[.+@]?)(\s+)(\d+)(\s+\S+\s+\S+\s+)(\d+)(.*)$")


# `ls -l`: a directory's link count and size, and the `total` of blocks, depend on the storage
# driver (overlayfs on one engine counts a directory's links as 1, on another as 2 + subdirs; a
# directory is 4096 bytes on ext4, 64 on another), not on what the keys did.
_LS_TOTAL = re.compile(r"^total \d+$")


def storage_masked(line: str) -> str:
    """An `ls -l` line (or its `total`) without what the storage driver decides."""
    if _LS_TOTAL.match(line):
        return "total <BLOCKS>"
    found = LS_LONG.match(line)
    if not found:
        return line
    size = "<SIZE>" if found.group(1).startswith("d") else found.group(5)
    # single spaces: `ls` pads its columns to the widest entry, a directory's size among them
    owners = " ".join(found.group(4).split())
    return f"{found.group(1)} <LINKS> {owners} {size} {found.group(6).lstrip()}"


def _unstable_size_masked(line: str, unstable_names: frozenset[str]) -> str:
    found = LS_LONG.match(line)
    if found and found.group(6).rstrip().rsplit(" ", 1)[-1] in unstable_names:
        return "".join(found.group(1, 2, 3, 4)) + "<SIZE>" + found.group(6)
    return line


def normalized(pane: str, unstable_names: frozenset[str] = frozenset()) -> list[str]:
    lines = [_masked(_unstable_size_masked(line, unstable_names) if unstable_names else line)
             for line in _unwrapped(pane).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def first_divergence(recorded: str, replayed: str, last_lines: int = LAST_LINES,
                     unstable_files: tuple[str, ...] = ()) -> Divergence | None:
    """None when the panes' last `last_lines` lines agree, else where they first differ.
    `unstable_files`: paths whose content two replays did not reproduce (their `ls -l` size is
    masked; `ls` shows a name, so the paths' last parts are what is matched)."""
    names = frozenset(path.rstrip("/").rsplit("/", 1)[-1] for path in unstable_files)
    want, got = ([storage_masked(line) for line in normalized(pane, names)][-last_lines:]
                 for pane in (recorded, replayed))
    for number in range(max(len(want), len(got))):
        left = want[number] if number < len(want) else None
        right = got[number] if number < len(got) else None
        if left != right:
            return Divergence(number + 1, left, right)
    return None


def describe(divergence: Divergence | None) -> str:
    if divergence is None:
        return "the replayed pane ends as the recorded one did"
    return (f"the replayed pane differs from the recorded one at line {divergence.line} of their last lines: "
            f"recorded {divergence.recorded!r}, replayed {divergence.replayed!r}")

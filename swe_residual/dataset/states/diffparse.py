"""Parse the text of a ``git diff --binary`` into per-file entries.

Pure and dependency-free: the metrics use it to read a run's ``final_patch`` and a Residual
State's ``inherited_patch`` (which files changed, which lines were added).

The parser follows what ``git apply`` relies on:

* a file section starts at ``diff --git a/X b/Y``; its extended headers (``new file mode``,
  ``deleted file mode``, ``rename from``/``rename to``, ``copy from``/``copy to``,
  ``similarity index``, ``index``, ``old mode``/``new mode``) set the status and paths;
* hunks are consumed by their ``@@ -a,b +c,d @@`` line counts, so an added line whose text
  starts with ``++`` or ``diff --git`` is never mistaken for a header;
* ``\\ No newline at end of file`` markers are skipped;
* ``GIT binary patch`` and ``Binary files ... differ`` mark the file binary (no lines);
* paths are C-quoted by git when they hold special characters (``"a/tab\\t\\303\\251"``) and
  followed by a TAB in the ``---``/``+++`` lines when they contain a space; both are handled.

A plain unified diff without ``diff --git`` headers (``--- a/x`` / ``+++ b/x``) is accepted too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FileDiff", "Status", "parse_diff", "changed_files", "unquote_path"]

Status = Literal["added", "deleted", "modified", "renamed"]

_HUNK_RE = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DEV_NULL = "/dev/null"

_ESCAPES = {
    "a": 0x07,
    "b": 0x08,
    "t": 0x09,
    "n": 0x0A,
    "v": 0x0B,
    "f": 0x0C,
    "r": 0x0D,
    '"': 0x22,
    "\\": 0x5C,
}


@dataclass
class FileDiff:
    """One file of a diff.

    ``path`` is the file's path after the change (before it, for a deleted file);
    ``old_path`` is the path before the change for a rename (or the source of a copy),
    otherwise None. ``added``/``removed`` are the ``+``/``-`` line texts without the prefix,
    in diff order; both are empty for a binary file.
    """

    path: str
    old_path: str | None = None
    status: Status = "modified"
    binary: bool = False
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def unquote_path(token: str) -> str:
    """Undo git's C-style quoting of a path (``"a/tab\\t\\303\\251.txt"``).

    A token that is not wrapped in double quotes is returned unchanged. Octal escapes are
    bytes, decoded as UTF-8 (undecodable bytes are kept with surrogateescape).
    """
    if len(token) < 2 or not (token.startswith('"') and token.endswith('"')):
        return token
    body = token[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.extend(ch.encode("utf-8", "surrogateescape"))
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1 : j], 8) & 0xFF)
            i = j
        else:  # unknown escape: keep it literally
            out.extend(("\\" + nxt).encode("utf-8", "surrogateescape"))
            i += 2
    return out.decode("utf-8", "surrogateescape")


def _read_quoted(text: str, start: int) -> tuple[str, int]:
    """Read a double-quoted token at ``text[start]``; return (token with quotes, end index)."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return text[start : i + 1], i + 1
        i += 1
    return text[start:], len(text)


def _strip_prefix(path: str, prefix: str) -> str:
    return path[len(prefix) :] if path.startswith(prefix) else path


def _header_paths(rest: str) -> tuple[str | None, str | None]:
    """Split the ``a/X b/Y`` part of a ``diff --git`` line (best effort; later headers win)."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        a_tok, end = _read_quoted(rest, 0)
        b_tok = rest[end:].lstrip(" ")
        return _strip_prefix(unquote_path(a_tok), "a/"), _strip_prefix(unquote_path(b_tok), "b/")
    if rest.endswith('"'):
        idx = rest.find(' "')
        while idx != -1:
            b_tok, end = _read_quoted(rest, idx + 1)
            if end == len(rest):
                return _strip_prefix(rest[:idx], "a/"), _strip_prefix(unquote_path(b_tok), "b/")
            idx = rest.find(' "', idx + 1)
    # Unquoted: paths may contain spaces. Without a rename both sides are equal, so try the
    # middle split first ("a/N b/N"), then the first " b/".
    n = len(rest)
    if n % 2 == 1:
        half = n // 2
        left, right = rest[:half], rest[half + 1 :]
        if rest[half] == " " and left.startswith("a/") and right.startswith("b/"):
            if left[2:] == right[2:]:
                return left[2:], right[2:]
    idx = rest.find(" b/")
    if idx != -1:
        return _strip_prefix(rest[:idx], "a/"), rest[idx + 3 :]
    parts = rest.split(" ", 1)
    if len(parts) == 2:
        return _strip_prefix(parts[0], "a/"), _strip_prefix(parts[1], "b/")
    return None, None


def _marker_path(value: str, prefix: str) -> str | None:
    """Path of a ``--- a/X`` / ``+++ b/X`` line (None for /dev/null)."""
    value = value.rstrip("\r")
    if value.startswith('"'):
        tok, _ = _read_quoted(value, 0)
        path = unquote_path(tok)
    else:
        # git appends a TAB after a name that contains a space; GNU diff appends "\t<date>".
        path = value.split("\t", 1)[0]
    if path == _DEV_NULL:
        return None
    return _strip_prefix(path, prefix)


def _plain_path(value: str) -> str:
    """Path of a ``rename from X`` style header value."""
    value = value.rstrip("\r")
    if value.startswith('"'):
        tok, _ = _read_quoted(value, 0)
        return unquote_path(tok)
    return value


class _Builder:
    """Mutable state of the file section being parsed."""

    def __init__(self, a: str | None, b: str | None) -> None:
        self.a = a
        self.b = b
        self.new = False
        self.deleted = False
        self.renamed = False
        self.copied = False
        self.binary = False
        self.added: list[str] = []
        self.removed: list[str] = []

    def build(self) -> FileDiff | None:
        old, new = self.a, self.b
        if self.deleted:
            path = old if old is not None else new
            status: Status = "deleted"
            old_path = None
        elif self.new or (old is None and new is not None and not self.renamed):
            path = new if new is not None else old
            status = "added"
            old_path = old if self.copied and old != path else None
        elif self.renamed and old is not None and new is not None and old != new:
            path, status, old_path = new, "renamed", old
        else:
            path = new if new is not None else old
            status = "modified"
            old_path = None
        if path is None:
            return None
        return FileDiff(
            path=path,
            old_path=old_path,
            status=status,
            binary=self.binary,
            added=self.added,
            removed=self.removed,
        )


def parse_diff(text: str | bytes | None) -> list[FileDiff]:
    """Parse a (binary-safe) git diff into one :class:`FileDiff` per file, in diff order."""
    if text is None:
        return []
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    result: list[FileDiff] = []
    cur: _Builder | None = None
    git_section = False  # the current section started with "diff --git"
    in_binary = False  # skipping the base85 payload of a GIT binary patch

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            built = cur.build()
            if built is not None:
                result.append(built)
        cur = None

    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("diff --git "):
            flush()
            a, b = _header_paths(line[len("diff --git ") :])
            cur = _Builder(a, b)
            git_section = True
            in_binary = False
            i += 1
            continue
        if in_binary:
            i += 1
            continue
        if cur is not None and git_section and not line.startswith(("---", "+++", "@@")):
            if line.startswith("new file mode "):
                cur.new = True
            elif line.startswith("deleted file mode "):
                cur.deleted = True
            elif line.startswith("rename from "):
                cur.renamed = True
                cur.a = _plain_path(line[len("rename from ") :])
            elif line.startswith("rename to "):
                cur.renamed = True
                cur.b = _plain_path(line[len("rename to ") :])
            elif line.startswith("copy from "):
                cur.copied = True
                cur.new = True
                cur.a = _plain_path(line[len("copy from ") :])
            elif line.startswith("copy to "):
                cur.copied = True
                cur.new = True
                cur.b = _plain_path(line[len("copy to ") :])
            elif line.rstrip("\r") == "GIT binary patch":
                cur.binary = True
                in_binary = True
            elif line.startswith("Binary files ") and line.rstrip("\r").endswith(" differ"):
                cur.binary = True
                body = line.rstrip("\r")[len("Binary files ") : -len(" differ")]
                if body.startswith(_DEV_NULL + " and "):
                    cur.new = True
                elif body.endswith(" and " + _DEV_NULL):
                    cur.deleted = True
            # other extended headers (index, similarity, old/new mode) carry no lines
            i += 1
            continue
        if line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            old = _marker_path(line[4:], "a/")
            new = _marker_path(lines[i + 1][4:], "b/")
            if cur is None or not git_section:
                flush()
                cur = _Builder(old, new)
                git_section = False
                cur.new = old is None
                cur.deleted = new is None
            else:
                if old is None:
                    cur.new = True
                elif not cur.renamed and not cur.copied:
                    cur.a = old
                if new is None:
                    cur.deleted = True
                elif not cur.renamed and not cur.copied:
                    cur.b = new
            i += 2
            continue
        m = _HUNK_RE.match(line)
        if m and cur is not None:
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            i += 1
            while i < n and (old_left > 0 or new_left > 0):
                hl = lines[i]
                if hl.startswith("\\"):
                    pass  # "\ No newline at end of file"
                elif hl.startswith("+"):
                    cur.added.append(hl[1:])
                    new_left -= 1
                elif hl.startswith("-"):
                    cur.removed.append(hl[1:])
                    old_left -= 1
                elif hl.startswith(" ") or hl == "" or hl == "\r":
                    old_left -= 1
                    new_left -= 1
                else:
                    break  # truncated hunk: resume header scanning on this line
                i += 1
            # a trailing "\ No newline" marker after the last hunk line
            while i < n and lines[i].startswith("\\"):
                i += 1
            continue
        i += 1  # text outside any file section (e.g. a commit message)
    flush()
    return result


def changed_files(text: str | bytes | None) -> set[str]:
    """Every path the diff touches: added, modified, deleted, and both sides of a rename."""
    paths: set[str] = set()
    for fd in parse_diff(text):
        paths.add(fd.path)
        if fd.status == "renamed" and fd.old_path is not None:
            paths.add(fd.old_path)
    return paths

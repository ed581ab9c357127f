"""What one simple command does to the files it names: shows their contents, or inspects
inherited changes (paper Appendix D.2, "Left-out files" and "Inspection").

:func:`classify` looks at one command's argv (after :func:`~swe_residual.trial.steps.shell.unwrap`)
and says which files it prints, whether that only counts when the step printed something,
whether its output is grep-style or a diff to be read for paths, whether it is ``git status``
or ``git diff``, and whether it passes its input through to its output in a pipeline. The
option tables tell a reader's option values from its file operands (``head -n 50 FILE``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from swe_residual.trial.steps.shell import unwrap

__all__ = ["CAT_LIKE", "READS_STDIN", "Finding", "classify", "resolve"]

CAT_LIKE = {"cat", "tac", "nl", "head", "tail", "less", "more", "bat", "batcat", "view"}
_GREP_LIKE = {"grep", "egrep", "fgrep", "rg", "ag", "ack"}
# Filters that pass their input lines on: a reader piped into one still shows its file.
_FILTERS = {"sort", "uniq", "tr", "column", "fold", "tee", "expand", "fmt", "rev", "jq"}
_STAT_ONLY = {
    "--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--summary",
    "--dirstat", "--compact-summary", "--quiet", "--raw",
}  # fmt: skip
# Option letters that take a value, per reader (short options; long options use "=" or are
# listed in the second set).
_SHORT_ARG: dict[str, str] = {
    "head": "nc",
    "tail": "ncs",
    "nl": "bdfhilnsvw",
    "sed": "efl",
    "awk": "Ffv",
    "bat": "lrHm",
    "batcat": "lrHm",
    "grep": "efmABCdD",
    "egrep": "efmABCdD",
    "fgrep": "efmABCdD",
    "rg": "efgmtTABCMjE",
    "ag": "ABCGgm",
    "ack": "ABCm",
    "less": "bhjkopPtTxyz",
}
_LONG_ARG: dict[str, set[str]] = {
    "head": {"--lines", "--bytes"},
    "tail": {"--lines", "--bytes", "--pid", "--sleep-interval"},
    "grep": {"--regexp", "--file", "--max-count", "--include", "--exclude", "--exclude-dir",
             "--context", "--after-context", "--before-context", "--label", "--color",
             "--colour", "--binary-files", "--devices", "--directories", "--exclude-from"},
    "rg": {"--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--max-count",
           "--context", "--after-context", "--before-context", "--max-depth", "--threads",
           "--encoding", "--max-columns", "--color", "--colors", "--sort", "--sortr",
           "--type-add", "--pre", "--pre-glob", "--replace", "--max-filesize", "--path-separator",
           "--ignore-file", "--field-match-separator", "--field-context-separator"},
    "sed": {"--expression", "--file", "--line-length"},
    "awk": {"--field-separator", "--assign", "--file"},
    "bat": {"--language", "--line-range", "--highlight-line", "--style", "--theme",
            "--map-syntax", "--tabs", "--wrap", "--terminal-width", "--paging"},
}  # fmt: skip
for _g in ("egrep", "fgrep"):
    _LONG_ARG[_g] = _LONG_ARG["grep"]
_LONG_ARG["batcat"] = _LONG_ARG["bat"]

_GREP_LIST_SHORT = {"grep": "lLcq", "rg": "lcq", "ag": "lLc", "ack": "lLc"}
_GREP_LIST_LONG = {
    "--files-with-matches", "--files-without-match", "--files-without-matches", "--count",
    "--count-matches", "--quiet", "--silent", "--files", "--type-list",
}  # fmt: skip
_GREP_RECURSIVE_SHORT = {"grep": "rR", "ag": "", "ack": "", "rg": ""}

# Readers whose input redirection (``cmd < FILE``) shows FILE.
READS_STDIN = CAT_LIKE | {"sed", "awk", "grep", "egrep", "fgrep"}


def resolve(cwd: str | None, arg: str) -> str:
    """``arg`` as seen from the directory a ``cd`` earlier in the step moved to (``cwd``: None
    for the repository root, else relative to it or absolute). An absolute path, or one that
    starts with an unexpanded ``$...`` (read from the root), does not depend on the cwd."""
    if cwd and not arg.startswith(("/", "$")):
        return posixpath.normpath(posixpath.join(cwd, arg))
    return arg


def _split_options(name: str, args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Separate (option words, operands) for a reader; option values are kept with options."""
    short_arg = _SHORT_ARG.get(name, "")
    long_arg = _LONG_ARG.get(name, set())
    opts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(args[i + 1 :])
            break
        if a.startswith("--"):
            opts.append(a)
            if "=" not in a and a in long_arg and i + 1 < len(args):
                opts.append(args[i + 1])
                i += 1
        elif a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            opts.append(a)
            for pos, letter in enumerate(a[1:], start=1):
                if letter in short_arg:
                    if pos == len(a) - 1 and i + 1 < len(args):
                        opts.append(args[i + 1])
                        i += 1
                    break
        elif a.startswith("-") and a[1:].isdigit():
            opts.append(a)  # head -20
        elif a.startswith("+") and name in ("less", "more", "tail"):
            opts.append(a)
        else:
            operands.append(a)
        i += 1
    return opts, operands


def _short_flags(opts: Iterable[str], name: str) -> set[str]:
    """Letters of the short option words (up to the first letter that takes a value)."""
    short_arg = _SHORT_ARG.get(name, "")
    letters: set[str] = set()
    for o in opts:
        if o.startswith("-") and not o.startswith("--"):
            for letter in o[1:]:
                letters.add(letter)
                if letter in short_arg:
                    break
    return letters


def _has_pattern_option(name: str, opts: Sequence[str]) -> bool:
    for o in opts:
        if o.startswith(("--regexp", "--file", "--expression")):
            return True
        if o.startswith("-") and not o.startswith("--"):
            for letter in o[1:]:
                if letter in "ef":
                    return True
                if letter in _SHORT_ARG.get(name, ""):
                    break
    return False


@dataclass
class Finding:
    """What one simple command contributes."""

    files: list[str] = field(default_factory=list)  # resolved paths whose contents it printed
    needs_output: bool = False  # count only if the step printed something
    grep_output: bool = False  # parse grep-style "path:..." lines of the output
    diff_output: bool = False  # parse "diff --git" sections of the output
    git_inspect: bool = False  # git status / git diff
    passthrough: bool = False  # passes its input lines to its output (in a pipeline)


def _git(args: list[str], cwd: str | None, finding: Finding) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and i + 1 < len(
            args
        ):
            if args[i] == "-C":
                cwd = resolve(cwd, args[i + 1])
            i += 2
        else:
            i += 1
    if i >= len(args):
        return
    sub, rest = args[i], args[i + 1 :]
    if sub == "status":
        finding.git_inspect = True
    elif sub == "diff":
        finding.git_inspect = True
        patch = any(r in ("-p", "-u", "--patch") for r in rest)
        if patch or not any(r.split("=", 1)[0] in _STAT_ONLY for r in rest):
            finding.diff_output = True
    elif sub in ("show", "cat-file"):
        explicit = False
        for r in rest:
            if not r.startswith("-") and ":" in r:
                rev, _, path = r.partition(":")
                if path:
                    explicit = True
                    if path.startswith("./") or path.startswith("../"):
                        path = resolve(cwd, path)
                    finding.files.append(path)
        if sub == "show" and not explicit:
            finding.diff_output = True
    elif sub == "log":
        if any(r in ("-p", "-u", "--patch") or r.startswith("-L") for r in rest):
            finding.diff_output = True
    elif sub == "blame":
        _, operands = _split_options("git-blame", rest)
        if operands:
            finding.files.append(resolve(cwd, operands[-1]))
    elif sub == "grep":
        _grep("grep", rest, cwd, finding, git_grep=True)


def _grep(
    name: str, args: list[str], cwd: str | None, finding: Finding, *, git_grep: bool = False
) -> None:
    opts, operands = _split_options(name, args)
    letters = _short_flags(opts, name)
    list_short = _GREP_LIST_SHORT.get(name, _GREP_LIST_SHORT["grep"])
    if letters & set(list_short) or any(o.split("=", 1)[0] in _GREP_LIST_LONG for o in opts):
        return
    if not _has_pattern_option(name, opts) and operands:
        operands = operands[1:]  # the pattern
    finding.grep_output = True
    finding.passthrough = True
    recursive = bool(letters & set(_GREP_RECURSIVE_SHORT.get(name, ""))) or any(
        o in ("--recursive", "--dereference-recursive") for o in opts
    )
    if name in ("rg", "ag", "ack") or git_grep:
        recursive = True
    if len(operands) == 1 and not recursive and not any(ch in operands[0] for ch in "*?["):
        finding.files.append(resolve(cwd, operands[0]))
        finding.needs_output = True


def _sed_in_place(opts: Sequence[str]) -> bool:
    for o in opts:
        if o.startswith("--in-place"):
            return True
        if o.startswith("-") and not o.startswith("--"):
            for letter in o[1:]:
                if letter == "i":
                    return True
                if letter in _SHORT_ARG["sed"]:
                    break
    return False


def classify(argv: list[str], cwd: str | None, finding: Finding) -> None:
    """Record in ``finding`` what the simple command ``argv`` shows (``cwd``: the directory a
    ``cd`` earlier in the step moved to, relative to the start, or None)."""
    args = unwrap(argv)
    if not args:
        return
    name = posixpath.basename(args[0])
    rest = args[1:]
    if name in CAT_LIKE:
        _, operands = _split_options(name, rest)
        finding.files.extend(resolve(cwd, a) for a in operands if a != "-")
        finding.passthrough = True
    elif name == "sed":
        opts, operands = _split_options("sed", rest)
        if _sed_in_place(opts):
            return
        if not _has_pattern_option("sed", opts) and operands:
            operands = operands[1:]
        finding.files.extend(resolve(cwd, a) for a in operands if a != "-")
        finding.needs_output = True
        finding.passthrough = True
    elif name in ("awk", "gawk", "mawk"):
        opts, operands = _split_options("awk", rest)
        if not any(o.startswith("-f") or o.startswith("--file") for o in opts) and operands:
            operands = operands[1:]
        finding.files.extend(
            resolve(cwd, a) for a in operands if a != "-" and not re.match(r"^\w+=", a)
        )
        finding.needs_output = True
        finding.passthrough = True
    elif name in _GREP_LIKE:
        _grep(name, rest, cwd, finding)
    elif name == "git":
        _git(rest, cwd, finding)
    elif name == "str_replace_editor" or name == "edit_tool":
        if rest and rest[0] == "view" and len(rest) > 1:
            finding.files.append(resolve(cwd, rest[1]))
    elif name == "open" and rest:
        finding.files.append(resolve(cwd, rest[0]))
    elif name in _FILTERS:
        finding.passthrough = True



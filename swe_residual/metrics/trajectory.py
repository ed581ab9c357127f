"""Classify an agent's trajectory: which files did its actions show, did it inspect inherited work.

Paper Appendix D.2 ("Left-out files", "Inspection of inherited changes"). A step is a dict
``{"command": str, "output": str}`` (a shell command and what it printed) or an editor action
``{"action": "view", "path": str, "output": str}``.

A file counts as *opened* when an action exposed its contents:

* content readers: ``cat``, ``tac``, ``nl``, ``head``, ``tail``, ``less``, ``more``, ``bat``,
  ``sed`` (not in-place), ``awk``, input redirection ``< file``; editor views
  (``{"action": "view"}``, ``str_replace_editor view PATH``, SWE-agent's ``open PATH``);
* ``grep``/``egrep``/``fgrep``/``rg``/``ag``/``git grep`` whose output shows matched lines of the
  file (an output line ``path:...``, ``path:NUM:...`` or ``path-NUM-...``, or rg's heading
  format), or a grep of one named file with non-empty output;
* ``git diff``/``git show``/``git log -p`` whose output has a ``diff --git`` section with lines
  of the file; ``git show REV:path``, ``git cat-file -p REV:path``, ``git blame path``.

Not counted: ``ls``, ``find``, ``rg --files``, ``grep -l/-L/-c/-q``, ``git status``,
``git diff --stat/--name-only/--name-status``, a reader whose stdout goes to a file, or one piped
into a command that does not pass lines through (``wc``, ``cut``, ``xargs``...).

Commands are split on ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines, respecting quotes and
here-documents; ``bash -c``/``sh -c`` strings are parsed recursively; ``cd DIR`` inside a step
prefixes later relative paths. Paths are matched loosely, by path-component suffix, so
``/testbed/src/a.py``, ``./src/a.py`` and (after ``cd src``) ``a.py`` all match ``src/a.py``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from swe_residual.diffparse import parse_diff

__all__ = ["opened_files", "inspected", "split_commands"]

_EDITOR_ACTIONS = {"view", "open", "read", "read_file", "view_file", "open_file"}
_STEP_KINDS = {"command", "edit", "write", "create", "message", "submit"}
_CAT_LIKE = {"cat", "tac", "nl", "head", "tail", "less", "more", "bat", "batcat", "view"}
_GREP_LIKE = {"grep", "egrep", "fgrep", "rg", "ag", "ack"}
_PASSTHROUGH = {
    "cat", "tac", "nl", "head", "tail", "less", "more", "bat", "batcat", "sed", "awk", "sort",
    "uniq", "tr", "column", "fold", "tee", "expand", "fmt", "rev", "jq", "grep", "egrep",
    "fgrep", "rg", "ag", "ack",
}  # fmt: skip
_WRAPPERS = {"sudo", "command", "exec", "time", "nice", "nohup", "builtin", "stdbuf", "env"}
_KEYWORDS = {"{", "}", "!", "then", "else", "elif", "do", "if", "while", "until", "(", ")"}
_SKIP_COMMANDS = {"fi", "done", "esac", "for", "case", "function"}
_STAT_ONLY = {
    "--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--summary",
    "--dirstat", "--compact-summary", "--quiet", "--raw",
}  # fmt: skip
_ERROR_MARKERS = ("No such file or directory", "Is a directory", "Permission denied")

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


# --------------------------------------------------------------------------- shell splitting


@dataclass
class _Cmd:
    argv: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)


_REDIR_RE = re.compile(r"&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<&|<>|<")


def _tokenize(src: str) -> list[tuple[str, str]]:
    """Shell-ish tokens: ("w", word), ("r", redirect operator), ("op", separator)."""
    toks: list[tuple[str, str]] = []
    word: list[str] = []
    in_word = False
    heredocs: list[tuple[str, bool]] = []
    pending_heredoc: str | None = None
    i, n = 0, len(src)

    def end_word() -> None:
        nonlocal word, in_word, pending_heredoc
        if in_word:
            text = "".join(word)
            if pending_heredoc is not None:
                heredocs.append((text, pending_heredoc == "<<-"))
                pending_heredoc = None
            toks.append(("w", text))
        word = []
        in_word = False

    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 < n and src[i + 1] != "\n":
                word.append(src[i + 1])
                in_word = True
            i += 2
            continue
        if c == "'":
            j = src.find("'", i + 1)
            j = n if j == -1 else j
            word.append(src[i + 1 : j])
            in_word = True
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                if src[j] == "\\" and j + 1 < n and src[j + 1] in '"\\$`':
                    word.append(src[j + 1])
                    j += 2
                    continue
                word.append(src[j])
                j += 1
            in_word = True
            i = j + 1
            continue
        if c == "$" and i + 1 < n and src[i + 1] == "(":
            depth, j = 0, i + 1
            while j < n:
                if src[j] == "(":
                    depth += 1
                elif src[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            word.append(src[i : j + 1])
            in_word = True
            i = j + 1
            continue
        if c == "`":
            j = src.find("`", i + 1)
            j = n if j == -1 else j
            word.append(src[i : j + 1])
            in_word = True
            i = j + 1
            continue
        if c in " \t\r":
            end_word()
            i += 1
            continue
        if c == "#" and not in_word:
            while i < n and src[i] != "\n":
                i += 1
            continue
        if c == "\n":
            end_word()
            toks.append(("op", "\n"))
            i += 1
            for delim, strip_tabs in heredocs:  # skip here-document bodies
                while i < n:
                    j = src.find("\n", i)
                    j = n if j == -1 else j
                    line = src[i:j]
                    i = j + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delim:
                        break
            heredocs.clear()
            continue
        if c in "<>" or (c == "&" and src.startswith(">", i + 1)):
            fd = ""
            if in_word and "".join(word).isdigit():
                fd = "".join(word)
                word, in_word = [], False
            else:
                end_word()
            m = _REDIR_RE.match(src, i)
            op = m.group(0) if m else c
            i += len(op)
            toks.append(("r", fd + op))
            if op in ("<<", "<<-"):
                pending_heredoc = op
            continue
        if c in ";&|()":
            end_word()
            two = src[i : i + 2]
            if two in ("&&", "||", ";;", "|&"):
                toks.append(("op", two))
                i += 2
            else:
                toks.append(("op", c))
                i += 1
            continue
        word.append(c)
        in_word = True
        i += 1
    end_word()
    return toks


def split_commands(src: str) -> list[list[list[str]]]:
    """Split a shell command line into pipelines of argv lists (for tests and debugging)."""
    return [[cmd.argv for cmd in pipe] for pipe in _pipelines(src)]


def _pipelines(src: str) -> list[list[_Cmd]]:
    pipes: list[list[_Cmd]] = []
    pipe: list[_Cmd] = []
    cur = _Cmd()
    pending: str | None = None

    def close_cmd() -> None:
        nonlocal cur
        if cur.argv or cur.redirects:
            pipe.append(cur)
        cur = _Cmd()

    for kind, val in _tokenize(src):
        if kind == "w":
            if pending is not None:
                cur.redirects.append((pending, val))
                pending = None
            elif not cur.argv and val in _KEYWORDS:
                continue
            else:
                cur.argv.append(val)
        elif kind == "r":
            pending = val
        elif val in ("|", "|&"):
            pending = None
            close_cmd()
        else:
            pending = None
            close_cmd()
            if pipe:
                pipes.append(pipe)
            pipe = []
    close_cmd()
    if pipe:
        pipes.append(pipe)
    return pipes


def _unwrap(argv: list[str]) -> list[str]:
    """Drop env assignments and wrappers (sudo, timeout N, env, nice -n N, stdbuf -oL...)."""
    args = list(argv)
    while args:
        head = args[0]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", head):
            args.pop(0)
        elif head in _WRAPPERS:
            args.pop(0)
            while args and args[0].startswith("-"):
                opt = args.pop(0)
                if head == "nice" and opt == "-n" and args:
                    args.pop(0)
        elif head == "timeout":
            args.pop(0)
            while args and args[0].startswith("-"):
                opt = args.pop(0)
                if opt in ("-s", "-k", "--signal", "--kill-after") and args:
                    args.pop(0)
            if args:
                args.pop(0)  # the duration
        else:
            break
    return args


# --------------------------------------------------------------------------- path matching


def _parts(path: str) -> list[str]:
    return [p for p in posixpath.normpath(path).split("/") if p not in ("", ".")]


def _component_match(pattern: str, name: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatchcase(name, pattern)
    return pattern == name


def _matches(shown: str, candidate: str) -> bool:
    """Loose match: the shorter path's components equal the other's trailing components."""
    a, b = _parts(shown), _parts(candidate)
    if not a or not b or ".." in a:
        return False
    k = min(len(a), len(b))
    return all(_component_match(x, y) for x, y in zip(a[-k:], b[-k:]))


def _resolve(cwd: str | None, arg: str) -> str:
    if cwd and not arg.startswith("/"):
        return posixpath.normpath(posixpath.join(cwd, arg))
    return arg


def _match_all(shown: str, candidates: Iterable[str]) -> set[str]:
    return {c for c in candidates if _matches(shown, c)}


# --------------------------------------------------------------------------- option parsing


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


# --------------------------------------------------------------------------- classification


@dataclass
class _Finding:
    """What one simple command contributes."""

    files: list[str] = field(default_factory=list)  # resolved paths whose contents it printed
    needs_output: bool = False  # count only if the step printed something
    grep_output: bool = False  # parse grep-style "path:..." lines of the output
    diff_output: bool = False  # parse "diff --git" sections of the output
    git_inspect: bool = False  # git status / git diff
    passthrough: bool = False  # passes its input lines to its output (in a pipeline)


def _git(args: list[str], cwd: str | None, finding: _Finding) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and i + 1 < len(
            args
        ):
            if args[i] == "-C":
                cwd = _resolve(cwd, args[i + 1])
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
                        path = _resolve(cwd, path)
                    finding.files.append(path)
        if sub == "show" and not explicit:
            finding.diff_output = True
    elif sub == "log":
        if any(r in ("-p", "-u", "--patch") or r.startswith("-L") for r in rest):
            finding.diff_output = True
    elif sub == "blame":
        _, operands = _split_options("git-blame", rest)
        if operands:
            finding.files.append(_resolve(cwd, operands[-1]))
    elif sub == "grep":
        _grep("grep", rest, cwd, finding, git_grep=True)


def _grep(
    name: str, args: list[str], cwd: str | None, finding: _Finding, *, git_grep: bool = False
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
        finding.files.append(_resolve(cwd, operands[0]))
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


def _classify(argv: list[str], cwd: str | None, finding: _Finding) -> None:
    args = _unwrap(argv)
    if not args:
        return
    name = posixpath.basename(args[0])
    rest = args[1:]
    if name in _CAT_LIKE:
        _, operands = _split_options(name, rest)
        finding.files.extend(_resolve(cwd, a) for a in operands if a != "-")
        finding.passthrough = True
    elif name == "sed":
        opts, operands = _split_options("sed", rest)
        if _sed_in_place(opts):
            return
        if not _has_pattern_option("sed", opts) and operands:
            operands = operands[1:]
        finding.files.extend(_resolve(cwd, a) for a in operands if a != "-")
        finding.needs_output = True
        finding.passthrough = True
    elif name in ("awk", "gawk", "mawk"):
        opts, operands = _split_options("awk", rest)
        if not any(o.startswith("-f") or o.startswith("--file") for o in opts) and operands:
            operands = operands[1:]
        finding.files.extend(
            _resolve(cwd, a) for a in operands if a != "-" and not re.match(r"^\w+=", a)
        )
        finding.needs_output = True
        finding.passthrough = True
    elif name in _GREP_LIKE:
        _grep(name, rest, cwd, finding)
    elif name == "git":
        _git(rest, cwd, finding)
    elif name == "str_replace_editor" or name == "edit_tool":
        if rest and rest[0] == "view" and len(rest) > 1:
            finding.files.append(_resolve(cwd, rest[1]))
    elif name == "open" and rest:
        finding.files.append(_resolve(cwd, rest[0]))
    elif name in ("sort", "uniq", "tr", "column", "fold", "tee", "expand", "fmt", "rev", "jq"):
        finding.passthrough = True


def _stdout_to_file(cmd: _Cmd) -> bool:
    for op, target in cmd.redirects:
        if op in (">", ">>", ">|", "1>", "1>>", "1>|", "&>", "&>>") and target not in (
            "/dev/stdout",
            "/dev/stderr",
            "/dev/tty",
        ):
            return True
    return False


def _errored(output: str, arg: str) -> bool:
    return any(f"{arg}: {marker}" in output for marker in _ERROR_MARKERS)


_GREP_LINE_RE = re.compile(r"^(.+?)(?::|-\d+-)")


def _grep_output_files(output: str, cwd: str | None, candidates: set[str]) -> set[str]:
    found: set[str] = set()
    lines = output.splitlines()
    for idx, line in enumerate(lines):
        m = _GREP_LINE_RE.match(line)
        if m:
            found |= _match_all(_resolve(cwd, m.group(1)), candidates)
        # rg --heading: a path line followed by "NUM:text" / "NUM-text" lines
        stripped = line.strip()
        if stripped and idx + 1 < len(lines) and re.match(r"^\d+[:-]", lines[idx + 1]):
            found |= _match_all(_resolve(cwd, stripped), candidates)
    return found


def _diff_output_files(output: str, candidates: set[str]) -> set[str]:
    found: set[str] = set()
    for fd in parse_diff(output):
        if not (fd.added or fd.removed):
            continue  # header only, binary, mode change or pure rename: no contents shown
        for path in (fd.path, fd.old_path):
            if path:
                found |= _match_all(path, candidates)
    return found


def _step_command(step: Mapping[str, Any]) -> str | None:
    for key in ("command", "cmd"):
        value = step.get(key)
        if isinstance(value, str):
            return value
    action = step.get("action")
    if (
        "command" not in step
        and isinstance(action, str)
        and action not in _EDITOR_ACTIONS
        and action not in _STEP_KINDS
    ):
        return action  # a harness that stores the shell command itself under "action"
    return None


def _analyze_command(
    src: str, output: str | None, candidates: set[str], depth: int = 0
) -> tuple[set[str], bool]:
    """(opened candidates, ran git status/diff) for one step's command line."""
    opened: set[str] = set()
    git_inspect = False
    out = output or ""
    has_output = output is None or bool(output.strip())
    cwd: str | None = None
    for pipe in _pipelines(src):
        findings: list[_Finding] = []
        for cmd in pipe:
            args = _unwrap(cmd.argv)
            finding = _Finding()
            if args and args[0] in ("cd", "pushd"):
                target = next((a for a in args[1:] if not a.startswith("-")), None)
                if target and target != "~" and not target.startswith("$"):
                    cwd = _resolve(cwd, target)
                elif not target or target == "~":
                    cwd = None
            elif args and posixpath.basename(args[0]) in ("bash", "sh", "zsh", "dash"):
                if "-c" in args[1:] and depth < 3:
                    idx = args.index("-c")
                    if idx + 1 < len(args):
                        inner, inner_git = _analyze_command(
                            args[idx + 1], output, candidates, depth + 1
                        )
                        opened |= inner
                        git_inspect = git_inspect or inner_git
            elif args and args[0] not in _SKIP_COMMANDS:
                _classify(cmd.argv, cwd, finding)
                for op, target in cmd.redirects:
                    if op in ("<", "0<") and args and posixpath.basename(args[0]) in (
                        _CAT_LIKE | {"sed", "awk", "grep", "egrep", "fgrep"}
                    ):
                        finding.files.append(_resolve(cwd, target))
                        finding.needs_output = True
            findings.append(finding)
        for pos, (cmd, finding) in enumerate(zip(pipe, findings)):
            git_inspect = git_inspect or finding.git_inspect
            downstream = list(zip(pipe[pos + 1 :], findings[pos + 1 :]))
            shown = not _stdout_to_file(cmd) and all(
                f.passthrough and not _stdout_to_file(c) for c, f in downstream
            )
            if not shown:
                continue
            if downstream or finding.needs_output:
                if not has_output:
                    continue
            for path in finding.files:
                if output is not None and _errored(out, posixpath.basename(path)):
                    continue
                opened |= _match_all(path, candidates)
            if finding.grep_output and output:
                opened |= _grep_output_files(out, cwd, candidates)
            if finding.diff_output and output:
                opened |= _diff_output_files(out, candidates)
    return opened, git_inspect


def _analyze_step(step: Mapping[str, Any], candidates: set[str]) -> tuple[set[str], bool]:
    output = step.get("output")
    output = output if isinstance(output, str) else None
    action = step.get("action")
    if isinstance(action, str) and action in _EDITOR_ACTIONS and not step.get("command"):
        path = step.get("path")
        if not isinstance(path, str):
            return set(), False
        first = (output or "").lstrip().split("\n", 1)[0]
        if "does not exist" in first or "No such file" in first:
            return set(), False
        return _match_all(path, candidates), False
    command = _step_command(step)
    if command is None:
        return set(), False
    return _analyze_command(command, output, candidates)


def opened_files(steps: Iterable[Mapping[str, Any]], candidates: Iterable[str]) -> set[str]:
    """The candidate repo-relative paths whose contents some step showed to the agent."""
    cands = set(candidates)
    if not cands:
        return set()
    opened: set[str] = set()
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        found, _ = _analyze_step(step, cands)
        opened |= found
    return opened


def inspected(steps: Iterable[Mapping[str, Any]], predecessor_files: Iterable[str]) -> bool:
    """The run inspected inherited work: ran git status / git diff, or read a file the
    predecessor changed."""
    cands = set(predecessor_files)
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        found, git_inspect = _analyze_step(step, cands)
        if git_inspect or found:
            return True
    return False

"""Which files an agent's actions showed it, and whether it inspected inherited work.

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

Command lines are split by :mod:`.shell` (``;``, ``&&``, ``||``, ``|``, ``&``, newlines, with
quotes and here-documents, via :mod:`shlex`); what each simple command does is decided by
:mod:`.actions`; ``bash -c``/``sh -c`` strings are parsed recursively.

Paths are matched whole, as repository-relative paths, never by suffix: each step starts in the
repository root ``root`` (the task's workdir, ``/app`` by default), ``cd DIR`` inside a step
moves later relative paths, and an absolute path counts only under ``root``. So ``src/a.py``,
``./src/a.py``, ``/app/src/a.py`` and (after ``cd src`` or ``cd /app/src``) ``a.py`` all name
``src/a.py``, while ``cat a.py`` in the root names ``a.py`` only, not every ``*/a.py``. A path
that starts with an unexpanded ``$(...)`` or ``$VAR`` (``$(git rev-parse --show-toplevel)/a.py``,
``$APP_DIR/a.py``) is read from the root. Glob words (``src/*.py``) match component by
component.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from swe_residual.dataset.states.diffparse import parse_diff
from swe_residual.trial.steps.actions import READS_STDIN, Finding, classify, resolve
from swe_residual.trial.steps.shell import SimpleCommand, pipelines, unwrap

__all__ = ["DEFAULT_ROOT", "opened_files", "inspected", "repo_relative"]

_EDITOR_ACTIONS = {"view", "open", "read", "read_file", "view_file", "open_file"}
_STEP_KINDS = {"command", "edit", "write", "create", "message", "submit"}
_SKIP_COMMANDS = {"fi", "done", "esac", "for", "case", "function"}
_SHELLS = {"bash", "sh", "zsh", "dash"}
_ERROR_MARKERS = ("No such file or directory", "Is a directory", "Permission denied")


# --------------------------------------------------------------------------- path matching


#: where the repository sits when the caller does not say (Harbor's and task.toml's default)
DEFAULT_ROOT = "/app"


def repo_relative(path: str, root: str = DEFAULT_ROOT) -> str | None:
    """``path`` (already joined with the step's cwd) relative to the repository root ``root``;
    None when it lies outside the repository or is the root itself."""
    if path.startswith("$"):
        # an unexpanded $(...) / $VAR prefix: the usual spellings name the repository root
        _, _, path = path.partition("/")
    norm = posixpath.normpath(path) if path else "."
    if norm.startswith("/"):
        top = posixpath.normpath(root)
        prefix = top.rstrip("/") + "/"
        if not norm.startswith(prefix):
            return None
        norm = norm[len(prefix) :]
    if norm in (".", "..") or norm.startswith("../"):
        return None
    return norm


def _matches(shown: str, candidate: str, root: str) -> bool:
    """Whole-path match of a shown path against a repository-relative candidate."""
    rel = repo_relative(shown, root)
    if rel is None:
        return False
    cand = posixpath.normpath(candidate)
    if not any(ch in rel for ch in "*?["):
        return rel == cand
    a, b = rel.split("/"), cand.split("/")
    # fnmatch per component, so "*" never crosses a "/" as the shell's glob does not
    return len(a) == len(b) and all(fnmatchcase(y, x) for x, y in zip(a, b))


def _match_all(shown: str, candidates: Iterable[str], root: str) -> set[str]:
    return {c for c in candidates if _matches(shown, c, root)}


# --------------------------------------------------------------------------- steps


def _stdout_to_file(cmd: SimpleCommand) -> bool:
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


def _grep_output_files(output: str, cwd: str | None, candidates: set[str], root: str) -> set[str]:
    found: set[str] = set()
    lines = output.splitlines()
    for idx, line in enumerate(lines):
        m = _GREP_LINE_RE.match(line)
        if m:
            found |= _match_all(resolve(cwd, m.group(1)), candidates, root)
        # rg --heading: a path line followed by "NUM:text" / "NUM-text" lines
        stripped = line.strip()
        if stripped and idx + 1 < len(lines) and re.match(r"^\d+[:-]", lines[idx + 1]):
            found |= _match_all(resolve(cwd, stripped), candidates, root)
    return found


def _diff_output_files(output: str, candidates: set[str]) -> set[str]:
    # git prints repository-relative paths whatever the cwd, so they are matched as they are
    found: set[str] = set()
    for fd in parse_diff(output):
        if not (fd.added or fd.removed):
            continue  # header only, binary, mode change or pure rename: no contents shown
        for path in (fd.path, fd.old_path):
            if path:
                found |= _match_all(path, candidates, DEFAULT_ROOT)
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
    src: str, output: str | None, candidates: set[str], root: str, depth: int = 0, start: str | None = None
) -> tuple[set[str], bool]:
    """(opened candidates, ran git status/diff) for one step's command line, which starts in
    `start` (None: the root)."""
    opened: set[str] = set()
    git_inspect = False
    out = output or ""
    has_output = output is None or bool(output.strip())
    cwd: str | None = start
    for pipe in pipelines(src):
        findings: list[Finding] = []
        for cmd in pipe:
            args = unwrap(cmd.argv)
            finding = Finding()
            if args and args[0] in ("cd", "pushd"):
                target = next((a for a in args[1:] if not a.startswith("-")), None)
                if target and target != "~" and not target.startswith("$"):
                    cwd = resolve(cwd, target)
                elif not target or target == "~":
                    cwd = None
            elif args and posixpath.basename(args[0]) in _SHELLS:
                if "-c" in args[1:] and depth < 3:
                    idx = args.index("-c")
                    if idx + 1 < len(args):
                        inner, inner_git = _analyze_command(
                            args[idx + 1], output, candidates, root, depth + 1, cwd
                        )
                        opened |= inner
                        git_inspect = git_inspect or inner_git
            elif args and args[0] not in _SKIP_COMMANDS:
                classify(cmd.argv, cwd, finding)
                for op, target in cmd.redirects:
                    if op in ("<", "0<") and posixpath.basename(args[0]) in READS_STDIN:
                        finding.files.append(resolve(cwd, target))
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
                opened |= _match_all(path, candidates, root)
            if finding.grep_output and output:
                opened |= _grep_output_files(out, cwd, candidates, root)
            if finding.diff_output and output:
                opened |= _diff_output_files(out, candidates)
    return opened, git_inspect


def _analyze_step(step: Mapping[str, Any], candidates: set[str], root: str,
                  start: str | None = None) -> tuple[set[str], bool]:
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
        return _match_all(resolve(start, path) if start else path, candidates, root), False
    command = _step_command(step)
    if command is None:
        return set(), False
    return _analyze_command(command, output, candidates, root, start=start)


def opened_files(
    steps: Iterable[Mapping[str, Any]], candidates: Iterable[str], *, root: str = DEFAULT_ROOT,
    start: str | None = None,
) -> set[str]:
    """The candidate repo-relative paths whose contents some step showed to the agent; ``root``
    is where the repository sits in the agent's environment (the task's workdir). On the
    machine track the root is ``/`` (the candidates are paths anywhere, relative to it) and
    each step starts in ``start``, the agent's working directory."""
    cands = set(candidates)
    if not cands:
        return set()
    opened: set[str] = set()
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        found, _ = _analyze_step(step, cands, root, start)
        opened |= found
    return opened


def inspected(
    steps: Iterable[Mapping[str, Any]], predecessor_files: Iterable[str], *, root: str = DEFAULT_ROOT,
    start: str | None = None,
) -> bool:
    """The run inspected inherited work: ran git status / git diff, or read a file the
    predecessor changed."""
    cands = set(predecessor_files)
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        found, git_inspect = _analyze_step(step, cands, root, start)
        if git_inspect or found:
            return True
    return False

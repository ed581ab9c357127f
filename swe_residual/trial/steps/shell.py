"""Split a shell command line into pipelines of simple commands (argv and redirections).

Words come from the standard library's :class:`shlex.shlex` in POSIX mode (quotes, escapes,
comments) with ``punctuation_chars`` for the operators ``; | & < > ( )`` and newlines. On top of
its tokens this module adds only what the classifier needs from the shell grammar:

* operators are split by longest match (``&&``, ``|&``, ``2>&1``, ``&>>``...) into separators,
  pipes and redirections; a number written right before ``<``/``>`` is the redirected fd;
* here-document bodies (``<<EOF``, ``<<'EOF'``, ``<<-EOF``) are skipped, never read as commands;
* ``$(...)`` is kept as one opaque word (its output is captured, not shown), glued to the text
  around it, so ``cat $(git rev-parse --show-toplevel)/src/a.py`` still names ``src/a.py``;
* a backslash-newline continues the line.

It never raises: an unclosed quote ends the command line where it starts (bash would not run
it either). Known approximations, all harmless for the classifier: a ``#`` inside an unquoted
word starts a comment, backquotes are ordinary characters, and compound commands (``if``,
``for``, ``while``, ``{ }``, subshells) are flattened into the simple commands they contain.
"""

from __future__ import annotations

import io
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["SimpleCommand", "pipelines", "split_commands", "unwrap"]

_PUNCTUATION = ";|&<>()\n"
# Longest first, so "&&" wins over "&" and "2>&1" reads as ">&".
_OPERATORS = (
    "&>>", "<<<", "&&", "||", ";;", "|&", "&>", ">>", ">|", ">&", "<<", "<&", "<>", "<(", ">(",
    ";", "&", "|", "<", ">", "(", ")", "\n",
)  # fmt: skip
_SEPARATORS = {";", "&", "&&", "||", ";;", "\n", "(", ")", "<(", ">("}
_PIPES = {"|", "|&"}
# Words that open or close a compound command: dropped when they stand where a command name would.
_KEYWORDS = {"{", "}", "!", "then", "else", "elif", "do", "if", "while", "until"}
_WRAPPERS = {"sudo", "command", "exec", "time", "nice", "nohup", "builtin", "stdbuf", "env"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class SimpleCommand:
    """One command of a pipeline: its words and its redirections ``(operator, target)``, the
    operator with its fd if one was written (``2>``, ``>``, ``&>``, ``<``...)."""

    argv: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)


class _Source(io.StringIO):
    """The text shlex reads. shlex skips a comment with ``readline()``, which would also
    swallow the newline ending the command; leave that newline in the stream, so it still
    separates the command before the comment from the next line."""

    def readline(self, size: int | None = -1) -> str:
        start = self.tell()
        line = super().readline()
        if line.endswith("\n"):
            self.seek(start + len(line) - 1)
            return line[:-1]
        return line


def _operators(run: str) -> list[str]:
    """Split a run of punctuation characters (``);``, ``>&``, ``\\n\\n``) into operators."""
    out: list[str] = []
    i = 0
    while i < len(run):
        op = next((o for o in _OPERATORS if run.startswith(o, i)), run[i])
        out.append(op)
        i += len(op)
    return out


def _heredoc_end(text: str, start: int, delimiters: list[tuple[str, bool]]) -> int:
    """Where the command text resumes after the here-document bodies beginning at ``start``."""
    pos = start
    for delimiter, strip_tabs in delimiters:
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end == -1 else end
            line = text[pos:end]
            pos = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return pos


def _is_operator(token: str, text: str, end: int) -> bool:
    """An operator, not a quoted word made of the same characters (``grep '|' f``): the raw
    text ending where the token ended must be the token itself."""
    return bool(token) and all(ch in _PUNCTUATION for ch in token) and text.endswith(token, 0, end)


def _tokens(src: str) -> Iterator[tuple[str, str, bool]]:
    """``(kind, text, adjacent)``: kind ``word`` or ``op``; ``adjacent`` says that the next
    character follows without a space (a number right before ``>`` is an fd; text right after
    ``$(...)`` belongs to the same word)."""
    text = src.replace("\\\n", "")
    source = _Source(text)
    heredocs: list[tuple[str, bool]] = []
    heredoc_line = 0  # the here-document bodies start on the line after this position
    expect_delimiter = False
    while True:
        lexer = shlex.shlex(source, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace_split = True  # split on whitespace and operators only: keep a:b, a=b
        lexer.whitespace = " \t\r"  # newlines separate commands
        try:
            while True:
                token = lexer.get_token()
                if token is None or token == lexer.eof:
                    return
                pos = source.tell()
                at_eof = lexer.state is None
                end = pos if at_eof else pos - 1  # shlex has read one character past the token
                after = "" if at_eof else text[end]
                if not _is_operator(token, text, end):
                    if expect_delimiter:
                        strip_tabs = token.startswith("-")  # "<<-EOF" reads as "<<", "-EOF"
                        heredocs.append((token[1:] if strip_tabs else token, strip_tabs))
                        heredoc_line = end
                        expect_delimiter = False
                    yield "word", token, after in ("<", ">")
                    continue
                ops = _operators(token)
                for op in ops:
                    expect_delimiter = op == "<<"
                    if op == "\n" and heredocs:
                        break
                    yield "op", op, after not in " \t\r" + _PUNCTUATION
                else:
                    continue
                # A newline ends a line with here-documents: skip their bodies, then read on
                # with a new lexer (this one has read ahead into the body).
                yield "op", "\n", False
                body = text.find("\n", heredoc_line)
                source.seek(len(text) if body == -1 else _heredoc_end(text, body + 1, heredocs))
                heredocs = []
                break
        except ValueError:  # an unclosed quote or a trailing escape: stop there, do not raise
            return


def pipelines(src: str) -> list[list[SimpleCommand]]:
    """The pipelines of a command line, in order; each a list of simple commands."""
    pipes: list[list[SimpleCommand]] = []
    pipe: list[SimpleCommand] = []
    cur = SimpleCommand()
    redirect: str | None = None  # a redirection operator waiting for its target
    substitution = 0  # depth inside $( ... ): captured output, not commands shown
    glue = False  # the next word continues the last one (text right after "$(...)")
    fd_before = False  # the last word is directly followed by "<" or ">"

    def close_command() -> None:
        nonlocal cur
        if cur.argv or cur.redirects:
            pipe.append(cur)
        cur = SimpleCommand()

    def close_pipeline() -> None:
        nonlocal pipe
        close_command()
        if pipe:
            pipes.append(pipe)
        pipe = []

    for kind, text, adjacent in _tokens(src):
        if substitution:
            if kind == "op" and text in ("(", "<(", ">("):
                substitution += 1
            elif kind == "op" and text == ")":
                substitution -= 1
                glue = adjacent and not substitution
            continue
        if kind == "word":
            if redirect is not None:
                cur.redirects.append((redirect, text))
                redirect = None
            elif glue and cur.argv:
                cur.argv[-1] += text
            elif cur.argv or text not in _KEYWORDS:
                cur.argv.append(text)
            glue, fd_before = False, adjacent
            continue
        glue = False
        if text == "(" and cur.argv and cur.argv[-1].endswith("$"):
            substitution = 1  # "$(" (or "$((" arithmetic): one opaque word
            cur.argv[-1] += "(...)"
        elif text in _PIPES:
            redirect = None
            close_command()
        elif text in _SEPARATORS:
            redirect = None
            close_pipeline()
        else:
            fd = ""
            if fd_before and cur.argv and cur.argv[-1].isdigit():
                fd = cur.argv.pop()  # "2>/dev/null": 2 is the fd, not an argument
            redirect = fd + text
        fd_before = False
    close_pipeline()
    return pipes


def split_commands(src: str) -> list[list[list[str]]]:
    """A command line as pipelines of argv lists (for tests and debugging)."""
    return [[cmd.argv for cmd in pipe] for pipe in pipelines(src)]


def unwrap(argv: list[str]) -> list[str]:
    """Drop env assignments and wrappers (sudo, timeout N, env, nice -n N, stdbuf -oL...)."""
    args = list(argv)
    while args:
        head = args[0]
        if _ASSIGNMENT.match(head):
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

"""Which programs a shell would run for a line of a transcript, as far as the text tells.

A machine-track state's commands are refused at load when they would run a container-engine
or namespace tool (states/state.py). A tool's name mentioned inside a string (`echo "no docker
here"`), or typed while a quote was still open from an earlier keystroke line (the shell read it
as text and never ran it), is not such a command. This module reads the text the way a POSIX
shell splits it (Python's `shlex` in posix mode) and looks at the words in command position:
the first word of each simple command, after `;`, `&&`, `||`, `|`, `&`, `(`, a newline, a
backquote, or a keyword such as `then`/`do`; leading `NAME=value` assignments and redirections
skipped.

It errs on the side of refusing: the text a wrapper (`sudo`, `env`, `xargs`, `find -exec`, ...)
is given is searched whole for a tool's name, a shell's or `eval`'s arguments are read again as
shell text, and so is anything inside `$( )` or backquotes, even when single quotes would have
kept it literal. A here-document's body is read as commands. What cannot be read from the text
(a command word built from a variable, `$d ps`) is let through, as before.
"""

from __future__ import annotations

import re
import shlex

# Programs that reach past the container (the engine's clients, namespace entry).
ENGINE_TOOLS = frozenset({"nsenter", "unshare", "docker", "podman", "ctr", "crictl", "kubectl"})
# The separators of simple commands; `<` and `>` are tokens of their own too (redirections).
_PUNCTUATION = ";&|()<>\n`"
_SEPARATOR = set(";&|()\n`")
# Words after which the next word is again a command.
_KEYWORDS = frozenset({"if", "then", "do", "else", "elif", "while", "until", "!", "{", "}", "fi", "done", "time"})
# Programs that run what follows them: their whole argument list is searched.
_WRAPPERS = frozenset({"sudo", "doas", "env", "exec", "nohup", "command", "builtin", "nice", "ionice", "setsid",
                       "stdbuf", "xargs", "timeout", "watch", "chroot", "strace", "ltrace", "taskset", "chrt",
                       "flock", "parallel", "runuser"})
# `find ... -exec CMD ...`: what follows is run too.
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Programs whose arguments are shell text: read again as such.
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "busybox", "eval", "su", "script", "tmux", "screen"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")
_SUBSTITUTION = re.compile(r"\$\(|`")
_MAX_DEPTH = 6


class OpenQuote(ValueError):
    """The text ends inside a quote (or after a lone backslash): the shell is still reading."""


def _tokens(text: str) -> list[str]:
    # Line continuations are removed before splitting, as the shell does outside single quotes.
    lexer = shlex.shlex(text.replace("\\\n", ""), posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # a `#` inside a word is literal to the shell: never hide what follows it
    try:
        return list(lexer)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise OpenQuote(str(exc)) from exc


def _is_tool(word: str) -> bool:
    return word.rsplit("/", 1)[-1] in ENGINE_TOOLS


def engine_tool(text: str, depth: int = 0) -> str | None:
    """The engine or namespace tool `text` would run (its word as written), or None.

    Raises `OpenQuote` when the text ends inside a quote: the shell has not run it yet."""
    if depth > _MAX_DEPTH:
        return text[:40]  # nested past any real use: refused rather than read
    tokens = _tokens(text)
    expecting = True  # the next word is in command position
    rest_is_searched = False  # after a wrapper: every word of this simple command
    rest_is_shell = False  # after a shell or eval: every word is shell text
    skip_next = False  # a redirection's target
    for token in tokens:
        if token and set(token) <= _SEPARATOR:
            expecting, rest_is_searched, rest_is_shell, skip_next = True, False, False, False
            continue
        if token and set(token) <= set(_PUNCTUATION):  # `>`, `>>`, `<`, `>&`, `<<`: a redirection
            skip_next = True
            continue
        if _SUBSTITUTION.search(token):
            # Command substitution runs even inside double quotes.
            found = engine_tool(_SUBSTITUTION.sub("\n", token), depth + 1)
            if found:
                return found
        if skip_next:
            skip_next = False
            continue
        if rest_is_shell:
            found = engine_tool(token, depth + 1)
            if found:
                return found
            continue
        if rest_is_searched:
            if _is_tool(token):
                return token
            continue
        if not expecting:
            rest_is_searched = token in _FIND_EXEC
            continue
        if token in _KEYWORDS or _ASSIGNMENT.match(token):
            continue
        if _is_tool(token):
            return token
        name = token.rsplit("/", 1)[-1]
        rest_is_searched = name in _WRAPPERS
        rest_is_shell = name in _SHELLS
        expecting = False
    return None


# tmux key names as whole keystroke entries (terminal.py sends them as keys, not text).
_KEY_NAME = re.compile(r"^(?:[CMS]-\S+|Enter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|"
                       r"PageUp|PageDown|PgUp|PgDn|PPage|NPage|DC|IC|F\d{1,2}|KP\S*)$")
_KEY_TEXT = {"Enter": "\n", "C-m": "\n", "C-j": "\n", "Space": " ", "Tab": " "}
_KEY_CANCELS = {"C-c"}  # bash discards what was typed and not yet run, open quotes and all


class TypedShell:
    """What a shell in a terminal ran, from keystroke entries fed in order.

    Text is run a line at a time, but a line ending inside a quote is not run: the shell goes on
    reading the next lines into the same command. So the pending text is checked once the
    lines typed so far close every quote; Ctrl-C drops it; a key name types nothing but the
    newline or space it stands for."""

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, keys: str) -> str | None:
        """Type `keys`; the engine tool of a command the shell would now run, or None."""
        if _KEY_NAME.match(keys):
            if keys in _KEY_CANCELS:
                self.pending = ""
                return None
            keys = _KEY_TEXT.get(keys, "")
        self.pending += keys
        entered, newline, typing = self.pending.rpartition("\n")
        if not newline:
            return None  # nothing entered yet
        try:
            found = engine_tool(entered + newline)
        except OpenQuote:
            return None  # still inside a quote: text, not yet a command
        self.pending = typing
        return found

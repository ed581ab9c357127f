"""Turn INI text into nested dictionaries."""

import re

from .errors import ParseError

_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
_OPTION = re.compile(r"^([^=:\s][^=:]*?)\s*[=:]\s*(.*)$")
COMMENT_PREFIXES = ("#", ";")


def parse(text):
    """Return ``{section: {option: value}}`` for ``text``.

    Option names are lower-cased. Indented lines continue the previous value
    (joined with a newline). Full-line comments start with ``#`` or ``;``.
    """
    sections = {}
    current = None
    last_option = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(COMMENT_PREFIXES):
            last_option = None if not stripped else last_option
            continue
        if raw[:1].isspace() and last_option is not None:
            current[last_option] += "\n" + stripped
            continue
        match = _SECTION.match(stripped)
        if match:
            name = match.group(1).strip()
            if name in sections:
                raise ParseError(f"duplicate section [{name}]", lineno)
            current = sections[name] = {}
            last_option = None
            continue
        match = _OPTION.match(stripped)
        if not match:
            raise ParseError(f"cannot parse {stripped!r}", lineno)
        if current is None:
            raise ParseError("option outside of any section", lineno)
        key = match.group(1).strip().lower()
        current[key] = match.group(2)
        last_option = key
    return sections

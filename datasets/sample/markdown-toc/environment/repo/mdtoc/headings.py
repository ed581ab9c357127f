"""Find the ATX headings (``# Title``) of a Markdown document."""

import re
from dataclasses import dataclass

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,})")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int


def iter_headings(text):
    """Yield the headings of ``text`` in document order, skipping fenced code blocks."""
    fence = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        match = _ATX.match(line)
        if match:
            yield Heading(len(match.group(1)), match.group(2).strip(), lineno)

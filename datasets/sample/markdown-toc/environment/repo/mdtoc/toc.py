"""Render and insert tables of contents."""

from .headings import iter_headings
from .slug import slugify

START_MARKER = "<!-- toc -->"
END_MARKER = "<!-- tocstop -->"


def build_toc(text, min_level=1, max_level=6, bullet="-"):
    """Return a nested Markdown list linking to the headings of ``text``."""
    entries = []
    for heading in iter_headings(text):
        if min_level <= heading.level <= max_level:
            entries.append((heading, slugify(heading.text)))
    if not entries:
        return ""
    top = min(heading.level for heading, _ in entries)
    lines = []
    for heading, anchor in entries:
        indent = "  " * (heading.level - top)
        lines.append(f"{indent}{bullet} [{heading.text}](#{anchor})")
    return "\n".join(lines) + "\n"


def insert_toc(text, **options):
    """Replace whatever is between the toc markers of ``text`` by a fresh TOC."""
    start = text.find(START_MARKER)
    end = text.find(END_MARKER)
    if start < 0 or end < start:
        raise ValueError(f"document needs {START_MARKER} and {END_MARKER} markers")
    head = text[: start + len(START_MARKER)]
    body = build_toc(text[:start] + text[end:], **options)
    return f"{head}\n{body}{text[end:]}"

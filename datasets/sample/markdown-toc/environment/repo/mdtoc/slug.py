"""GitHub-style anchors for heading texts."""

import re

_CODE = re.compile(r"`([^`]*)`")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_DROP = re.compile(r"[^\w\- ]", re.UNICODE)


def slugify(text):
    """Anchor of a heading: lower case, punctuation dropped, spaces become dashes."""
    text = _LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _DROP.sub("", text.strip().lower())
    return text.replace(" ", "-")

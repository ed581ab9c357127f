"""Reading spans: "1h30m", "45s", "2h 5m" -> a number of seconds."""

import re

from spanfmt.units import SECONDS

_PART = re.compile(r"\s*(\d+)\s*([a-z]+)\s*")


def parse_duration(text):
    """Return the number of seconds ``text`` stands for.

    ``text`` is a sequence of ``<integer><unit>`` parts, optionally separated by
    spaces, with the units of ``spanfmt.units``. Raises ``ValueError`` for
    anything else (empty text, unknown units, stray characters).
    """
    if not isinstance(text, str):
        raise TypeError("parse_duration() expects a string")
    if not text.strip():
        raise ValueError("empty duration")
    total = 0
    position = 0
    while position < len(text):
        match = _PART.match(text, position)
        if match is None:
            raise ValueError(f"invalid duration: {text!r}")
        amount, unit = match.groups()
        if unit not in SECONDS:
            raise ValueError(f"unknown unit {unit!r} in {text!r}")
        total += int(amount) * SECONDS[unit]
        position = match.end()
    return total

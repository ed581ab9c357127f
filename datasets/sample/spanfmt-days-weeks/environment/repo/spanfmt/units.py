"""The units a span is written in, largest first: (suffix, seconds)."""

UNITS = (
    ("h", 3600),
    ("m", 60),
    ("s", 1),
)

SECONDS = dict(UNITS)

#!/bin/bash
# Scripted predecessor 'patcher' for task 'spanfmt-days-weeks'.
# Run with the repository root as the working directory; replays the predecessor's edits.
# Like every repo-track state, the work is left UNCOMMITTED.
set -euo pipefail

# step 1: write spanfmt/units.py
cat > spanfmt/units.py <<'EOF_PRED'
"""The units a span is written in, largest first: (suffix, seconds)."""

UNITS = (
    ("w", 7 * 86400),
    ("d", 86400),
    ("h", 3600),
    ("m", 60),
    ("s", 1),
)

SECONDS = dict(UNITS)
ORDER = {unit: index for index, (unit, _) in enumerate(UNITS)}
EOF_PRED

# step 2: edit spanfmt/parsing.py (units largest first)
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('spanfmt/parsing.py')
s = p.read_text(encoding='utf-8')
for old, new in (
    ('from spanfmt.units import SECONDS\n', 'from spanfmt.units import ORDER, SECONDS\n'),
    ('    total = 0\n    position = 0\n', '    total = 0\n    position = 0\n    last = -1\n'),
    ('        total += int(amount) * SECONDS[unit]\n',
     '        if ORDER[unit] < last:\n'
     '            raise ValueError(f"units out of order in {text!r}")\n'
     '        last = ORDER[unit]\n'
     '        total += int(amount) * SECONDS[unit]\n'),
):
    assert s.count(old) == 1, 'anchor not found'
    s = s.replace(old, new, 1)
p.write_text(s, encoding='utf-8')
EOF_PY

# step 3: write spanfmt/formatting.py
cat > spanfmt/formatting.py <<'EOF_PRED'
"""Writing spans: a number of seconds -> "1h 30m"."""

from spanfmt.units import UNITS


def format_duration(seconds, max_units=None):
    """Return ``seconds`` as its non-zero parts, largest first: 5400 -> "1h 30m".

    Zero is "0s". ``max_units`` keeps only that many of the largest parts.
    Negative or non-integer values raise ``ValueError``.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise ValueError(f"seconds must be an integer, got {seconds!r}")
    if seconds < 0:
        raise ValueError("seconds must not be negative")
    if max_units is not None and (isinstance(max_units, bool) or not isinstance(max_units, int) or max_units < 1):
        raise ValueError(f"max_units must be a positive integer, got {max_units!r}")
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in UNITS:
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return " ".join(parts[:max_units])
EOF_PRED

# step 4: write debug.log
cat > debug.log <<'EOF_PRED'
parse 1w 2d 3h -> 788400
parse 30m1h -> ValueError
format 90061 -> 1d 1h 1m 1s
format 90061 max_units=2 -> 1d 1h
EOF_PRED

#!/bin/bash
# Scripted predecessor 'drafter' for task 'spanfmt-days-weeks'.
# Run with the repository root as the working directory; replays the predecessor's edits.
# Like every repo-track state, the work is left UNCOMMITTED.
set -euo pipefail

# step 1: write spanfmt/units.py
cat > spanfmt/units.py <<'EOF_PRED'
"""The units a span is written in, largest first: (suffix, seconds)."""

UNITS = (
    ("w", 604800),
    ("d", 86400),
    ("h", 3600),
    ("m", 60),
    ("s", 1),
)

SECONDS = dict(UNITS)
EOF_PRED

# step 2: edit spanfmt/parsing.py (reject a unit given twice)
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('spanfmt/parsing.py')
s = p.read_text(encoding='utf-8')
old = '    total = 0\n    position = 0\n'
new = '    total = 0\n    position = 0\n    seen = set()\n'
assert s.count(old) == 1, 'anchor not found'
s = s.replace(old, new, 1)
old = '        total += int(amount) * SECONDS[unit]\n'
new = ('        if unit in seen:\n'
       '            raise ValueError(f"unit {unit!r} given twice in {text!r}")\n'
       '        seen.add(unit)\n'
       '        total += int(amount) * SECONDS[unit]\n')
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit spanfmt/formatting.py (max_units)
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('spanfmt/formatting.py')
s = p.read_text(encoding='utf-8')
for old, new in (
    ('def format_duration(seconds):\n', 'def format_duration(seconds, max_units=None):\n'),
    ('    if seconds == 0:\n',
     '    if max_units is not None and (isinstance(max_units, bool) or not isinstance(max_units, int)\n'
     '                                  or max_units < 1):\n'
     '        raise ValueError(f"max_units must be a positive integer, got {max_units!r}")\n'
     '    if seconds == 0:\n'),
    ('    return " ".join(parts)\n',
     '    if max_units is not None:\n        parts = parts[:max_units]\n    return " ".join(parts)\n'),
):
    assert s.count(old) == 1, 'anchor not found'
    s = s.replace(old, new, 1)
p.write_text(s, encoding='utf-8')
EOF_PY

# step 4: write tests/test_new_units.py
cat > tests/test_new_units.py <<'EOF_PRED'
import pytest

from spanfmt import format_duration, parse_duration


def test_days_and_weeks_parse():
    assert parse_duration("1w") == 604800
    assert parse_duration("1w 2d") == 777600


def test_repeated_unit_rejected():
    with pytest.raises(ValueError):
        parse_duration("1h 1h")


def test_max_units():
    assert format_duration(3661, max_units=2) == "1h 1m"
EOF_PRED

# step 5: write NOTES.md
cat > NOTES.md <<'EOF_PRED'
Added w/d units to units.py, duplicate-unit check, max_units. New tests pass.
EOF_PRED

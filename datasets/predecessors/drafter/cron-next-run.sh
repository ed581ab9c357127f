#!/bin/bash
# Scripted predecessor 'drafter' for task 'cron-next-run'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: write cronlite/parser.py
mkdir -p cronlite && cat > cronlite/parser.py <<'EOF_PRED'
"""Parse five-field cron expressions into sets of allowed values."""

from dataclasses import dataclass

FIELDS = ("minute", "hour", "day", "month", "weekday")

# 0 and 7 both mean Sunday in the weekday field
RANGES = {
    "minute": (0, 59),
    "hour": (0, 23),
    "day": (1, 31),
    "month": (1, 12),
    "weekday": (0, 7),
}

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
NAMES = {
    "month": {name: i for i, name in enumerate(MONTHS, start=1)},
    "weekday": {name: i for i, name in enumerate(WEEKDAYS)},
}


class CronError(ValueError):
    """Raised for malformed cron expressions."""


@dataclass(frozen=True)
class CronExpr:
    minute: frozenset
    hour: frozenset
    day: frozenset
    month: frozenset
    weekday: frozenset
    day_any: bool = False
    weekday_any: bool = False


def _value(token, field):
    names = NAMES.get(field, {})
    if token.lower() in names:
        return names[token.lower()]
    if not token.isdigit():
        raise CronError(f"invalid value {token!r} in {field} field")
    return int(token)


def _span(base, field):
    lo, hi = RANGES[field]
    if base == "*":
        return lo, hi
    if "-" in base:
        first, _, last = base.partition("-")
        return _value(first, field), _value(last, field)
    value = _value(base, field)
    return value, value


def parse_field(text, field):
    """Return the frozenset of values allowed by one field of an expression."""
    lo, hi = RANGES[field]
    values = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"empty list item in {field} field")
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"invalid step {step_text!r} in {field} field")
            step = int(step_text)
        start, end = _span(base, field)
        if not (lo <= start <= hi and lo <= end <= hi) or start > end:
            raise CronError(f"value out of range in {field} field: {part!r}")
        if slash and base != "*":
            values.update(range(start, end, step))
        else:
            values.update(range(start, end + 1, step))
    if field == "weekday" and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values)


def parse(expr):
    """Parse ``"m h dom mon dow"`` into a :class:`CronExpr`."""
    parts = expr.split()
    if len(parts) != len(FIELDS):
        raise CronError(f"expected {len(FIELDS)} fields, got {len(parts)}: {expr!r}")
    sets = {field: parse_field(text, field) for field, text in zip(FIELDS, parts)}
    return CronExpr(**sets, day_any=parts[2] == "*", weekday_any=parts[4] == "*")
EOF_PRED

# step 2: delete cronlite/fields.py
rm -f cronlite/fields.py

# step 3: edit cronlite/schedule.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('cronlite/schedule.py')
s = p.read_text(encoding='utf-8')
old = '    weekday = day.isoweekday() % 7  # Sunday == 0\n    return day.day in cron.day and weekday in cron.weekday\n'
new = '    weekday = day.isoweekday() % 7  # Sunday == 0\n    day_ok = day.day in cron.day\n    weekday_ok = weekday in cron.weekday\n    if cron.day_any or cron.weekday_any:\n        return day_ok and weekday_ok\n    # like cron: when both fields are restricted, either one may match\n    return day_ok or weekday_ok\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

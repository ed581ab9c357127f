"""Parse five-field cron expressions into sets of allowed values."""

from dataclasses import dataclass

from .fields import FIELDS, NAMES, RANGES


class CronError(ValueError):
    """Raised for malformed cron expressions."""


@dataclass(frozen=True)
class CronExpr:
    minute: frozenset
    hour: frozenset
    day: frozenset
    month: frozenset
    weekday: frozenset


def _value(token, field):
    names = NAMES.get(field, {})
    if token.lower() in names:
        return names[token.lower()]
    if not token.isdigit():
        raise CronError(f"invalid value {token!r} in {field} field")
    return int(token)


def parse_field(text, field):
    """Return the frozenset of values allowed by one field of an expression."""
    lo, hi = RANGES[field]
    values = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"empty list item in {field} field")
        step = 1
        base = part
        if "/" in part:
            base, _, step_text = part.partition("/")
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"invalid step {step_text!r} in {field} field")
            step = int(step_text)
            if base != "*":
                raise CronError(f"a step is only allowed after '*' in {field} field")
        if base == "*":
            start, end = lo, hi
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _value(first, field), _value(last, field)
        else:
            start = end = _value(base, field)
        if not (lo <= start <= hi and lo <= end <= hi) or start > end:
            raise CronError(f"value out of range in {field} field: {part!r}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def parse(expr):
    """Parse ``"m h dom mon dow"`` into a :class:`CronExpr`."""
    parts = expr.split()
    if len(parts) != len(FIELDS):
        raise CronError(f"expected {len(FIELDS)} fields, got {len(parts)}: {expr!r}")
    return CronExpr(**{field: parse_field(text, field) for field, text in zip(FIELDS, parts)})

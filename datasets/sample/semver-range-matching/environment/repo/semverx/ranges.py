"""Match versions against ranges such as ``>=1.2.0 <2.0.0 || 3.1.4``."""

import operator
import re

from .version import InvalidVersion, Version


class InvalidRange(ValueError):
    """The text is not a valid range expression."""


_COMPARATOR = re.compile(r"^(>=|<=|>|<|=)?(.+)$")
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "=": operator.eq}


def _parse_comparator(token):
    """Return the list of ``(op, Version)`` pairs that ``token`` stands for."""
    match = _COMPARATOR.match(token)
    if not match:
        raise InvalidRange(f"invalid comparator {token!r}")
    op = match.group(1) or "="
    try:
        version = Version.parse(match.group(2))
    except InvalidVersion as exc:
        raise InvalidRange(f"invalid comparator {token!r}") from exc
    return [(op, version)]


def parse_range(text):
    """Parse a range into alternatives (``||``), each a list of comparators that must all hold."""
    alternatives = []
    for alternative in text.split("||"):
        tokens = alternative.split()
        if not tokens:
            raise InvalidRange(f"empty alternative in range {text!r}")
        comparators = []
        for token in tokens:
            comparators.extend(_parse_comparator(token))
        alternatives.append(comparators)
    return alternatives


def _allows_prerelease(version, comparators):
    # A prerelease only matches when a comparator of the same alternative has a
    # prerelease on the same major.minor.patch (as npm does it).
    triple = (version.major, version.minor, version.patch)
    return any(bound.prerelease and (bound.major, bound.minor, bound.patch) == triple for _, bound in comparators)


def satisfies(version, range_text):
    """True when ``version`` (a Version or a string) is inside ``range_text``."""
    if isinstance(version, str):
        version = Version.parse(version)
    for comparators in parse_range(range_text):
        if not all(_OPS[op](version, bound) for op, bound in comparators):
            continue
        if version.prerelease and not _allows_prerelease(version, comparators):
            continue
        return True
    return False


def max_satisfying(versions, range_text):
    """The highest of ``versions`` inside the range, or None."""
    parsed = [Version.parse(v) if isinstance(v, str) else v for v in versions]
    matching = [v for v in parsed if satisfies(v, range_text)]
    return max(matching) if matching else None

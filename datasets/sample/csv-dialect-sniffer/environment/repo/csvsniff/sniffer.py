"""Heuristics for guessing how a piece of CSV text is formatted."""

import csv
from dataclasses import dataclass

CANDIDATES = (",", ";", "\t", "|")
QUOTE_CANDIDATES = ('"', "'")
SAMPLE_LINES = 20


class SniffError(ValueError):
    """Raised when no dialect can be guessed from the sample."""


@dataclass(frozen=True)
class Dialect:
    delimiter: str
    quotechar: str
    has_header: bool


def _sample_lines(text, limit=SAMPLE_LINES):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[:limit]


def _count(line, char, quotechar):
    """Number of times ``char`` separates fields in ``line``."""
    return line.count(char)


def sniff_quotechar(text):
    """Return the quote character used in ``text`` (a double quote when unsure)."""
    counts = {quote: text.count(quote) for quote in QUOTE_CANDIDATES}
    best = max(QUOTE_CANDIDATES, key=lambda quote: counts[quote])
    if counts[best] == 0 or counts[best] % 2:
        return '"'
    return best


def sniff_delimiter(text, candidates=CANDIDATES, quotechar='"'):
    """Return the delimiter that splits every sample line most consistently."""
    lines = _sample_lines(text)
    if not lines:
        raise SniffError("cannot sniff an empty sample")
    best, best_score = None, None
    for candidate in candidates:
        counts = [_count(line, candidate, quotechar) for line in lines]
        if min(counts) == 0:
            continue
        score = (len(set(counts)) == 1, min(counts))
        if best_score is None or score > best_score:
            best, best_score = candidate, score
    if best is None:
        raise SniffError("no delimiter found in the sample")
    return best


def _is_number(value):
    try:
        float(value.replace(",", ""))
    except ValueError:
        return False
    return True


def has_header(rows):
    """Guess whether the first row holds column names.

    The first row is a header when some column is numeric in every other row
    while its first cell is not a number.
    """
    if len(rows) < 2:
        return False
    header, body = rows[0], rows[1:]
    for column, name in enumerate(header):
        values = [row[column] for row in body if column < len(row)]
        if values and all(_is_number(v) for v in values) and not _is_number(name):
            return True
    return False


def sniff(text, quotechar=None):
    """Guess the full dialect of ``text``.

    ``quotechar`` overrides the quote character instead of guessing it.
    """
    quotechar = quotechar or sniff_quotechar(text)
    delimiter = sniff_delimiter(text, quotechar=quotechar)
    lines = _sample_lines(text)
    rows = list(csv.reader(lines, delimiter=delimiter, quotechar=quotechar))
    return Dialect(delimiter=delimiter, quotechar=quotechar, has_header=has_header(rows))

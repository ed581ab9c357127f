"""wordstat: line, word and character counts."""

__version__ = "1.2.0"


def count_text(text):
    """Return (lines, words, characters) of `text`."""
    return (text.count("\n"), len(text.split()), len(text))

"""Writing spans: a number of seconds -> "1h 30m"."""


def format_duration(seconds):
    """Return ``seconds`` as its non-zero parts, largest first: 5400 -> "1h 30m".

    Zero is "0s". Negative or non-integer values raise ``ValueError``.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise ValueError(f"seconds must be an integer, got {seconds!r}")
    if seconds < 0:
        raise ValueError("seconds must not be negative")
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    for amount, unit in ((hours, "h"), (minutes, "m"), (secs, "s")):
        if amount:
            parts.append(f"{amount}{unit}")
    return " ".join(parts)

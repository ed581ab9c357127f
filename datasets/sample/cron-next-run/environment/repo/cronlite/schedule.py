"""Compute the next times a cron expression fires."""

from datetime import datetime, timedelta

from .parser import CronError, parse

SEARCH_DAYS = 366 * 5


def _day_matches(cron, day):
    weekday = day.isoweekday() % 7  # Sunday == 0
    return day.day in cron.day and weekday in cron.weekday


def next_run(expr, after):
    """Return the first datetime strictly after ``after`` matching ``expr``.

    ``expr`` is a string or a parsed :class:`CronExpr`; the result has second
    and microsecond zero and the same tzinfo as ``after``.
    """
    cron = parse(expr) if isinstance(expr, str) else expr
    start = (after + timedelta(minutes=1)).replace(second=0, microsecond=0)
    day = start.date()
    hours, minutes = sorted(cron.hour), sorted(cron.minute)
    for _ in range(SEARCH_DAYS):
        if day.month in cron.month and _day_matches(cron, day):
            for hour in hours:
                for minute in minutes:
                    candidate = datetime(day.year, day.month, day.day, hour, minute, tzinfo=after.tzinfo)
                    if candidate >= start:
                        return candidate
        day += timedelta(days=1)
    raise CronError(f"{expr!r} does not fire within {SEARCH_DAYS} days")


def iter_runs(expr, after, count):
    """Return the next ``count`` firing times after ``after``."""
    cron = parse(expr) if isinstance(expr, str) else expr
    runs = []
    for _ in range(count):
        after = next_run(cron, after)
        runs.append(after)
    return runs

"""Names and value ranges of the five cron fields."""

FIELDS = ("minute", "hour", "day", "month", "weekday")

RANGES = {
    "minute": (0, 59),
    "hour": (0, 23),
    "day": (1, 31),
    "month": (1, 12),
    "weekday": (0, 6),
}

NAMES = {
    "month": {name: number for number, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)},
    "weekday": {name: number for number, name in enumerate(
        ["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
}

from datetime import datetime

import pytest

from cronlite import CronError, next_run, parse


def test_parse_list_and_range():
    expr = parse("0,30 9-11 * * *")
    assert expr.minute == {0, 30}
    assert expr.hour == {9, 10, 11}


def test_next_run_same_day():
    assert next_run("30 12 * * *", datetime(2026, 5, 1, 8, 0)) == datetime(2026, 5, 1, 12, 30)


def test_bad_field_count():
    with pytest.raises(CronError):
        parse("* * *")

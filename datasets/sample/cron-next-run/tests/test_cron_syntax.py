from datetime import datetime

import pytest

from cronlite import CronError, iter_runs, next_run, parse


def test_every_minute():
    assert next_run("* * * * *", datetime(2026, 1, 1, 10, 0, 30)) == datetime(2026, 1, 1, 10, 1)


def test_hourly_at_minute():
    runs = iter_runs("5 * * * *", datetime(2026, 1, 1, 10, 5), 2)
    assert runs == [datetime(2026, 1, 1, 11, 5), datetime(2026, 1, 1, 12, 5)]


def test_list_and_names():
    assert next_run("0 8 * jan,jun mon", datetime(2026, 1, 6, 9, 0)) == datetime(2026, 1, 12, 8, 0)


def test_step_on_star():
    assert parse("*/20 * * * *").minute == {0, 20, 40}


def test_range_with_step():
    assert parse("0 9 1-7/2 * *").day == {1, 3, 5, 7}
    assert next_run("0 9 1-7/2 * *", datetime(2026, 1, 5, 10, 0)) == datetime(2026, 1, 7, 9, 0)
    assert parse("10-40/15 * * * *").minute == {10, 25, 40}


def test_sunday_as_seven():
    assert parse("0 12 * * 7").weekday == {0}
    assert next_run("0 12 * * 7", datetime(2026, 1, 1, 0, 0)) == datetime(2026, 1, 4, 12, 0)
    assert parse("0 0 * * 5-7").weekday == {5, 6, 0}


def test_dom_dow_union():
    # 13th of the month OR any Friday
    assert next_run("0 0 13 * 5", datetime(2026, 1, 1, 0, 0)) == datetime(2026, 1, 2, 0, 0)
    assert next_run("0 0 13 * 5", datetime(2026, 1, 9, 1, 0)) == datetime(2026, 1, 13, 0, 0)


def test_weekday_only():
    assert next_run("0 6 * * sat", datetime(2026, 1, 1, 0, 0)) == datetime(2026, 1, 3, 6, 0)


def test_invalid_fields_raise():
    for expr in ("60 * * * *", "* * 0 * *", "*/0 * * * *", "* * * * 8", "a * * * *"):
        with pytest.raises(CronError):
            parse(expr)


def test_rolls_over_year():
    assert next_run("30 23 31 12 *", datetime(2026, 12, 31, 23, 30)) == datetime(2027, 12, 31, 23, 30)

import pytest

from spanfmt import format_duration, parse_duration


def test_parse_basic():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("45s") == 45
    assert parse_duration("2h") == 7200


def test_parse_allows_spaces():
    assert parse_duration("1h 5m 3s") == 3903
    assert parse_duration(" 10 m ") == 600


def test_parse_rejects_invalid():
    for text in ["", "   ", "h", "10", "5x", "1h-5m", "1.5h"]:
        with pytest.raises(ValueError):
            parse_duration(text)


def test_format_basic():
    assert format_duration(5400) == "1h 30m"
    assert format_duration(3903) == "1h 5m 3s"
    assert format_duration(59) == "59s"


def test_format_zero():
    assert format_duration(0) == "0s"


def test_format_rejects_negative_and_floats():
    with pytest.raises(ValueError):
        format_duration(-1)
    with pytest.raises(ValueError):
        format_duration(1.5)


def test_roundtrip():
    for seconds in (1, 61, 3599, 3600, 86399):
        assert parse_duration(format_duration(seconds)) == seconds

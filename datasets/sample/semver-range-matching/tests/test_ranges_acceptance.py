import pytest

from semverx import InvalidRange, Version, max_satisfying, satisfies


def test_parse_and_compare():
    v = Version.parse("v1.10.2+build.7")
    assert (v.major, v.minor, v.patch, v.build) == (1, 10, 2, ("build", "7"))
    assert Version.parse("1.10.0") > Version.parse("1.9.9")
    assert str(v) == "1.10.2+build.7"


def test_prerelease_ordering():
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0"]
    parsed = [Version.parse(v) for v in order]
    assert sorted(reversed(parsed)) == parsed


def test_simple_comparators_and_or():
    assert satisfies("1.2.3", "=1.2.3")
    assert satisfies("3.0.1", "<1.0.0 || >=3.0.0")
    assert not satisfies("2.0.0", "<1.0.0 || >=3.0.0")
    assert not satisfies("1.3.0-beta.1", ">=1.2.0")


def test_caret_major():
    assert satisfies("1.2.3", "^1.2.3")
    assert satisfies("1.9.0", "^1.2.3")
    assert not satisfies("2.0.0", "^1.2.3")
    assert not satisfies("1.2.2", "^1.2.3")


def test_caret_zero_major():
    assert satisfies("0.2.9", "^0.2.3")
    assert not satisfies("0.3.0", "^0.2.3")


def test_caret_zero_minor():
    assert satisfies("0.0.3", "^0.0.3")
    assert not satisfies("0.0.4", "^0.0.3")


def test_tilde():
    assert satisfies("1.2.9", "~1.2.3")
    assert not satisfies("1.3.0", "~1.2.3")
    assert not satisfies("1.2.2", "~1.2.3")
    assert satisfies("0.4.1", "~0.4.0")


def test_x_wildcards():
    assert satisfies("1.2.9", "1.2.x")
    assert not satisfies("1.3.0", "1.2.x")
    assert satisfies("1.9.0", "1.x")
    assert not satisfies("2.0.0", "1.X")
    assert satisfies("3.4.5", "*")
    assert max_satisfying(["1.1.0", "1.2.4", "1.3.0"], "1.2.*") == Version.parse("1.2.4")


def test_combined_ranges():
    assert satisfies("2.4.0", "^1.0.0 || ~2.4.0")
    assert not satisfies("2.5.0", "^1.0.0 || ~2.4.0")


def test_invalid_range_raises():
    for text in (">=abc", "", "1.2.3 ||", "^1.x.3"):
        with pytest.raises(InvalidRange):
            satisfies("1.0.0", text)

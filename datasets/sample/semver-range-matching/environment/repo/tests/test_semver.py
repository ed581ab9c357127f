from semverx import Version, max_satisfying, satisfies


def test_ordering():
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0-alpha.1") < Version.parse("1.0.0")


def test_range():
    assert satisfies("1.4.2", ">=1.2.0 <2.0.0")
    assert not satisfies("2.0.0", ">=1.2.0 <2.0.0")


def test_max_satisfying():
    assert max_satisfying(["1.0.0", "1.5.0", "2.1.0"], "<2.0.0") == Version.parse("1.5.0")

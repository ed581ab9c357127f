import pytest

from minicli import OptionParser, UsageError, format_usage


def make():
    p = OptionParser("tool")
    p.add_option("-v", "--verbose")
    p.add_option("-o", "--output", takes_value=True)
    return p


def test_parse():
    ns = make().parse(["-v", "-o", "out.txt", "a", "--", "-b"])
    assert ns.verbose is True
    assert ns.output == "out.txt"
    assert ns.args == ["a", "-b"]


def test_unknown_option():
    with pytest.raises(UsageError):
        make().parse(["--nope"])


def test_usage():
    assert format_usage(make()) == "usage: tool [--verbose] [--output OUTPUT] [ARGS ...]"

import pytest

from minicli import OptionParser, UsageError, format_help, format_usage


def make(required=False):
    p = OptionParser("export", "Export records.")
    p.add_option("-v", "--verbose", help="talk more")
    group = p.add_mutually_exclusive_group(required=required)
    group.add_option("--json", help="write JSON")
    group.add_option("--yaml", help="write YAML")
    p.add_option("-o", "--output", takes_value=True, help="output file")
    return p


def test_parse_flags_and_values():
    p = OptionParser("tool")
    p.add_option("-q", "--quiet")
    p.add_option("--level", takes_value=True, default="1")
    ns = p.parse(["--level=3", "-q", "file"])
    assert (ns.quiet, ns.level, ns.args) == (True, "3", ["file"])


def test_required_option_missing():
    p = OptionParser("tool")
    p.add_option("--name", takes_value=True, required=True)
    with pytest.raises(UsageError, match="--name"):
        p.parse([])


def test_help_lists_options():
    p = OptionParser("tool", "Does things.")
    p.add_option("-n", "--dry-run", help="change nothing")
    text = format_help(p)
    assert "Does things." in text
    assert "-n, --dry-run  change nothing" in text


def test_group_single_option_ok():
    ns = make().parse(["--json", "-o", "out"])
    assert ns.json is True
    assert ns.yaml is False
    assert ns.output == "out"


def test_group_defaults_when_absent():
    ns = make().parse([])
    assert (ns.json, ns.yaml, ns.verbose) == (False, False, False)


def test_group_conflict_raises():
    with pytest.raises(UsageError, match="mutually exclusive"):
        make().parse(["--json", "--yaml"])
    with pytest.raises(UsageError, match="mutually exclusive"):
        make(required=True).parse(["--yaml", "-v", "--json"])


def test_required_group_missing():
    with pytest.raises(UsageError, match="is required"):
        make(required=True).parse(["-v"])
    assert make(required=True).parse(["--yaml"]).yaml is True


def test_usage_shows_group():
    assert format_usage(make()) == "usage: export [--verbose] [--json | --yaml] [--output OUTPUT] [ARGS ...]"
    assert format_usage(make(required=True)) == "usage: export [--verbose] (--json | --yaml) [--output OUTPUT] [ARGS ...]"


def test_help_still_lists_group_options():
    text = format_help(make())
    assert "--json" in text.split("options:")[1]
    assert "write YAML" in text

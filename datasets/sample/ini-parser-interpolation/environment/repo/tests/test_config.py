import pytest

from iniparse import Config, NoOptionError, ParseError

TEXT = """
[DEFAULT]
timeout = 30

[server]
host = example.org
port: 8080
"""


def test_basic_values():
    cfg = Config.from_string(TEXT)
    assert cfg.sections() == ["server"]
    assert cfg.get("server", "host") == "example.org"
    assert cfg.get_int("server", "port") == 8080
    assert cfg.get("server", "timeout") == "30"


def test_missing_option():
    with pytest.raises(NoOptionError):
        Config.from_string(TEXT).get("server", "nope")


def test_parse_error_has_line():
    with pytest.raises(ParseError) as info:
        Config.from_string("[a]\nno separator here\n")
    assert info.value.lineno == 2

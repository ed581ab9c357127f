import pytest

from iniparse import Config, errors

TEXT = """
[DEFAULT]
root = /srv
user = app

[paths]
data = ${root}/data
logs = ${data}/logs
home = /home/${user}
price = 5$$ per ${unit}
unit = hour

[backup]
target = ${paths:data}/backup
; comment
enabled = yes
retries = 3
"""


@pytest.fixture
def cfg():
    return Config.from_string(TEXT)


def test_sections_and_options(cfg):
    assert cfg.sections() == ["paths", "backup"]
    assert cfg.has_option("backup", "enabled")
    assert not cfg.has_option("backup", "nope")


def test_typed_getters(cfg):
    assert cfg.get_bool("backup", "enabled") is True
    assert cfg.get_int("backup", "retries") == 3


def test_fallback(cfg):
    assert cfg.get("backup", "missing", fallback="x") == "x"
    assert cfg.get("nosuch", "missing", fallback=None) is None


def test_same_section_interpolation(cfg):
    assert cfg.get("paths", "logs") == "/srv/data/logs"


def test_default_section_interpolation(cfg):
    assert cfg.get("paths", "data") == "/srv/data"
    assert cfg.get("paths", "home") == "/home/app"


def test_cross_section_interpolation(cfg):
    assert cfg.get("backup", "target") == "/srv/data/backup"


def test_dollar_escape(cfg):
    assert cfg.get("paths", "price") == "5$ per hour"


def test_raw_get(cfg):
    assert cfg.get("paths", "logs", raw=True) == "${data}/logs"


def test_missing_reference_raises():
    cfg = Config.from_string("[a]\nx = ${nope}\ny = ${other:x}\n")
    with pytest.raises(errors.InterpolationError):
        cfg.get("a", "x")
    with pytest.raises(errors.InterpolationError):
        cfg.get("a", "y")
    assert issubclass(errors.InterpolationError, errors.ConfigError)


def test_reference_cycle_raises():
    cfg = Config.from_string("[a]\nx = ${y}\ny = ${x}\n")
    with pytest.raises(errors.InterpolationError):
        cfg.get("a", "x")


def test_values_without_references_unchanged():
    cfg = Config.from_string("[a]\nx = plain $ sign\ny = 100%\n")
    assert cfg.get("a", "x") == "plain $ sign"
    assert cfg.get("a", "y") == "100%"

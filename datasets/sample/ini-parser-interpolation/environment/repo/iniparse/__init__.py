"""A small INI file reader."""

from .config import Config
from .errors import ConfigError, NoOptionError, NoSectionError, ParseError

__all__ = ["Config", "ConfigError", "NoOptionError", "NoSectionError", "ParseError"]

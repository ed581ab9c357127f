"""Exceptions raised by iniparse."""


class ConfigError(Exception):
    """Base class of every iniparse error."""


class ParseError(ConfigError):
    """The text is not valid INI syntax."""

    def __init__(self, message, lineno):
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


class NoSectionError(ConfigError):
    def __init__(self, section):
        super().__init__(f"no section [{section}]")
        self.section = section


class NoOptionError(ConfigError):
    def __init__(self, section, option):
        super().__init__(f"no option {option!r} in section [{section}]")
        self.section = section
        self.option = option

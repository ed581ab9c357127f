"""Read access to parsed INI data."""

from .errors import NoOptionError, NoSectionError
from .parser import parse

_MISSING = object()
_TRUE = {"1", "yes", "true", "on"}
_FALSE = {"0", "no", "false", "off"}
DEFAULT_SECTION = "DEFAULT"


class Config:
    """Parsed configuration. Options of ``[DEFAULT]`` are visible in every section."""

    def __init__(self, sections):
        sections = dict(sections)
        self._defaults = sections.pop(DEFAULT_SECTION, {})
        self._sections = sections

    @classmethod
    def from_string(cls, text):
        return cls(parse(text))

    @classmethod
    def read(cls, path, encoding="utf-8"):
        with open(path, encoding=encoding) as fh:
            return cls.from_string(fh.read())

    def sections(self):
        return list(self._sections)

    def options(self, section):
        if section not in self._sections:
            raise NoSectionError(section)
        return list(dict.fromkeys([*self._sections[section], *self._defaults]))

    def has_option(self, section, option):
        try:
            self._lookup(section, option)
        except (NoSectionError, NoOptionError):
            return False
        return True

    def _lookup(self, section, option):
        if section not in self._sections:
            raise NoSectionError(section)
        option = option.lower()
        if option in self._sections[section]:
            return self._sections[section][option]
        if option in self._defaults:
            return self._defaults[option]
        raise NoOptionError(section, option)

    def get(self, section, option, fallback=_MISSING):
        """Return the value of ``option`` in ``section``.

        ``fallback`` is returned when the section or option does not exist.
        """
        try:
            return self._lookup(section, option)
        except (NoSectionError, NoOptionError):
            if fallback is _MISSING:
                raise
            return fallback

    def get_int(self, section, option, fallback=_MISSING):
        value = self.get(section, option, fallback)
        return value if value is fallback else int(value)

    def get_bool(self, section, option, fallback=_MISSING):
        value = self.get(section, option, fallback)
        if value is fallback:
            return value
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"not a boolean: {value!r}")

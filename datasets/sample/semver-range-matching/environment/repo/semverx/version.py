"""Semantic version numbers (semver 2.0.0) and their ordering."""

import re
from functools import total_ordering

_VERSION = re.compile(
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class InvalidVersion(ValueError):
    """The text is not a semantic version."""


@total_ordering
class Version:
    __slots__ = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, major, minor, patch, prerelease=(), build=()):
        self.major, self.minor, self.patch = major, minor, patch
        self.prerelease = tuple(prerelease)
        self.build = tuple(build)

    @classmethod
    def parse(cls, text):
        match = _VERSION.match(text.strip())
        if not match:
            raise InvalidVersion(f"invalid version: {text!r}")
        major, minor, patch, pre, build = match.groups()
        prerelease = tuple(int(p) if p.isdigit() else p for p in pre.split(".")) if pre else ()
        return cls(int(major), int(minor), int(patch), prerelease, tuple(build.split(".")) if build else ())

    def _key(self):
        # A release sorts after all of its prereleases; numeric identifiers sort
        # before alphanumeric ones. Build metadata is ignored.
        pre = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, not self.prerelease, pre)

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return f"Version('{self}')"

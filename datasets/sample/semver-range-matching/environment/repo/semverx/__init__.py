"""semverx: semantic versions and version ranges."""

from .ranges import InvalidRange, max_satisfying, parse_range, satisfies
from .version import InvalidVersion, Version

__all__ = ["InvalidRange", "InvalidVersion", "Version", "max_satisfying", "parse_range", "satisfies"]

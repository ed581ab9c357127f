"""spanfmt: parse and format compact time spans such as "1h30m"."""

from spanfmt.formatting import format_duration
from spanfmt.parsing import parse_duration

__all__ = ["format_duration", "parse_duration"]
__version__ = "0.3.0"

"""minicli: a deliberately small command line option parser."""

from .help import format_help, format_usage
from .parser import Option, OptionParser, UsageError

__all__ = ["Option", "OptionParser", "UsageError", "format_help", "format_usage"]

"""Guess the dialect (delimiter, quote character, header row) of CSV text."""

from .sniffer import Dialect, SniffError, has_header, sniff, sniff_delimiter, sniff_quotechar

__all__ = ["Dialect", "SniffError", "has_header", "sniff", "sniff_delimiter", "sniff_quotechar"]
__version__ = "0.3.1"

"""Command line entry point: ``python -m csvsniff FILE``."""

import argparse
import sys

from .sniffer import SniffError, sniff


def _show(char):
    return {"\t": "\\t"}.get(char, char)


def build_parser():
    parser = argparse.ArgumentParser(prog="csvsniff", description="Guess the dialect of a CSV file.")
    parser.add_argument("path", help="file to inspect ('-' reads standard input)")
    parser.add_argument("--quotechar", default=None, help="quote character to assume instead of guessing it")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the file (default: utf-8)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.path == "-":
        text = sys.stdin.read()
    else:
        with open(args.path, encoding=args.encoding, newline="") as fh:
            text = fh.read()
    try:
        dialect = sniff(text)
    except SniffError as exc:
        print(f"csvsniff: {exc}", file=sys.stderr)
        return 2
    print(f"delimiter: {_show(dialect.delimiter)}")
    print(f"quotechar: {dialect.quotechar}")
    print(f"header: {'yes' if dialect.has_header else 'no'}")
    return 0

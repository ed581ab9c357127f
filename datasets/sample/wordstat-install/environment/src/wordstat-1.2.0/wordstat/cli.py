"""The `wordstat` command."""

import sys

from wordstat import __version__, count_text


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        print(f"wordstat {__version__}")
        return 0
    if args[:1] != ["count"] or len(args) > 2:
        print("usage: wordstat count [FILE] | wordstat --version", file=sys.stderr)
        return 2
    if len(args) == 2:
        with open(args[1], encoding="utf-8") as handle:
            text = handle.read()
    else:
        text = sys.stdin.read()
    print("%d %d %d" % count_text(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

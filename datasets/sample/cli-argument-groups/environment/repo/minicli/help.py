"""Usage and help text."""


def _usage_item(option):
    text = option.flags[-1]
    if option.takes_value:
        text += f" {option.metavar}"
    return text


def format_usage(parser):
    """One line: ``usage: prog [--flag] --required VALUE [ARGS ...]``."""
    parts = [f"usage: {parser.prog}"]
    for option in parser.options:
        item = _usage_item(option)
        parts.append(item if option.required else f"[{item}]")
    parts.append("[ARGS ...]")
    return " ".join(parts)


def format_help(parser):
    lines = [format_usage(parser)]
    if parser.description:
        lines += ["", parser.description]
    if parser.options:
        lines += ["", "options:"]
        width = max(len(option.display) for option in parser.options)
        for option in parser.options:
            lines.append(f"  {option.display.ljust(width)}  {option.help}".rstrip())
    return "\n".join(lines) + "\n"

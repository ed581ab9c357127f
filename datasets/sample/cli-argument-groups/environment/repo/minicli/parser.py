"""Option definitions and argv parsing."""

from dataclasses import dataclass
from types import SimpleNamespace


class UsageError(Exception):
    """The command line does not match the declared options."""


@dataclass
class Option:
    name: str
    flags: tuple
    takes_value: bool = False
    default: object = None
    required: bool = False
    help: str = ""

    @property
    def metavar(self):
        return self.name.upper()

    @property
    def display(self):
        text = ", ".join(self.flags)
        return f"{text} {self.metavar}" if self.takes_value else text


class OptionParser:
    def __init__(self, prog, description=""):
        self.prog = prog
        self.description = description
        self.options = []
        self._by_flag = {}

    def add_option(self, *flags, dest=None, takes_value=False, default=None, required=False, help=""):
        """Declare an option such as ``add_option("-o", "--output", takes_value=True)``.

        Options without a value are flags: ``False`` unless given.
        """
        if not flags or not all(flag.startswith("-") and flag.strip("-") for flag in flags):
            raise ValueError(f"invalid option flags: {flags!r}")
        name = dest or flags[-1].lstrip("-").replace("-", "_")
        if not takes_value:
            default = bool(default)
        option = Option(name, tuple(flags), takes_value, default, required, help)
        for flag in flags:
            if flag in self._by_flag:
                raise ValueError(f"duplicate option {flag}")
            self._by_flag[flag] = option
        self.options.append(option)
        return option

    def parse(self, argv):
        """Parse ``argv`` (without the program name) into a namespace.

        Positional arguments are collected in ``.args``; ``--`` ends option parsing.
        """
        values = {option.name: option.default for option in self.options}
        seen = set()
        positionals = []
        index = 0
        while index < len(argv):
            arg = argv[index]
            if arg == "--":
                positionals.extend(argv[index + 1:])
                break
            if arg.startswith("-") and arg != "-":
                flag, eq, inline = arg.partition("=")
                option = self._by_flag.get(flag)
                if option is None:
                    raise UsageError(f"unknown option {flag}")
                if option.takes_value:
                    if eq:
                        value = inline
                    else:
                        index += 1
                        if index >= len(argv):
                            raise UsageError(f"option {flag} requires a value")
                        value = argv[index]
                    values[option.name] = value
                else:
                    if eq:
                        raise UsageError(f"option {flag} does not take a value")
                    values[option.name] = True
                seen.add(option.name)
            else:
                positionals.append(arg)
            index += 1
        for option in self.options:
            if option.required and option.name not in seen:
                raise UsageError(f"missing required option {option.flags[-1]}")
        return SimpleNamespace(args=positionals, **values)

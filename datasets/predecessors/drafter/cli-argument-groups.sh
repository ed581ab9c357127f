#!/bin/bash
# Scripted predecessor 'drafter' for task 'cli-argument-groups'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: write minicli/errors.py
mkdir -p minicli && cat > minicli/errors.py <<'EOF_PRED'
"""Exceptions of minicli."""


class UsageError(Exception):
    """The command line does not match the declared options."""
EOF_PRED

# step 2: write minicli/groups.py
mkdir -p minicli && cat > minicli/groups.py <<'EOF_PRED'
"""Mutually exclusive option groups."""

from .errors import UsageError


class MutuallyExclusiveGroup:
    """A set of options of which at most one may appear on the command line."""

    def __init__(self, parser, required=False):
        self.parser = parser
        self.required = required
        self.options = []

    def add_option(self, *flags, **kwargs):
        option = self.parser.add_option(*flags, **kwargs)
        option.group = self
        self.options.append(option)
        return option

    def validate(self, seen):
        given = [opt.flags[-1] for opt in self.options if opt.name in seen]
        if len(given) > 1:
            raise UsageError(f"options {', '.join(given)} are mutually exclusive")
EOF_PRED

# step 3: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = 'from dataclasses import dataclass\nfrom types import SimpleNamespace\n\n\nclass UsageError(Exception):\n    """The command line does not match the declared options."""\n'
new = 'from dataclasses import dataclass\nfrom types import SimpleNamespace\n\nfrom .errors import UsageError\nfrom .groups import MutuallyExclusiveGroup\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = '    help: str = ""\n'
new = '    help: str = ""\n    group: object = None\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 5: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = '        self._by_flag = {}\n'
new = '        self._by_flag = {}\n        self.groups = []\n\n    def add_mutually_exclusive_group(self, required=False):\n        group = MutuallyExclusiveGroup(self, required=required)\n        self.groups.append(group)\n        return group\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 6: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = '                raise UsageError(f"missing required option {option.flags[-1]}")\n'
new = '                raise UsageError(f"missing required option {option.flags[-1]}")\n        for group in self.groups:\n            group.validate(seen)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 7: edit minicli/help.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/help.py')
s = p.read_text(encoding='utf-8')
old = '    parts = [f"usage: {parser.prog}"]\n    for option in parser.options:\n        item = _usage_item(option)\n        parts.append(item if option.required else f"[{item}]")\n'
new = '    parts = [f"usage: {parser.prog}"]\n    shown_groups = []\n    for option in parser.options:\n        group = getattr(option, "group", None)\n        if group is not None:\n            if any(group is shown for shown in shown_groups):\n                continue\n            shown_groups.append(group)\n            inner = " | ".join(_usage_item(member) for member in group.options)\n            parts.append(f"({inner})" if group.required else f"[{inner}]")\n            continue\n        item = _usage_item(option)\n        parts.append(item if option.required else f"[{item}]")\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 8: write tests/test_groups.py
mkdir -p tests && cat > tests/test_groups.py <<'EOF_PRED'
import pytest

from minicli import OptionParser, UsageError, format_usage


def parser():
    p = OptionParser("conv")
    g = p.add_mutually_exclusive_group()
    g.add_option("--csv")
    g.add_option("--tsv")
    return p


def test_one_of_group():
    ns = parser().parse(["--csv"])
    assert ns.csv and not ns.tsv


def test_conflict():
    with pytest.raises(UsageError):
        parser().parse(["--csv", "--tsv"])


def test_usage_line():
    assert format_usage(parser()) == "usage: conv [--csv | --tsv] [ARGS ...]"
EOF_PRED

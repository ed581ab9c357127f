#!/bin/bash
# Scripted predecessor 'patcher' for task 'cli-argument-groups'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = '    help: str = ""\n'
new = '    help: str = ""\n    group: object = None\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 2: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = 'class OptionParser:\n'
new = 'class MutuallyExclusiveGroup:\n    """Options of which at most one (exactly one when required) may be given."""\n\n    def __init__(self, parser, required=False):\n        self.parser = parser\n        self.required = required\n        self.options = []\n\n    def add_option(self, *flags, **kwargs):\n        if kwargs.get("required"):\n            raise ValueError("an option of a mutually exclusive group cannot be required")\n        option = self.parser.add_option(*flags, **kwargs)\n        option.group = self\n        self.options.append(option)\n        return option\n\n    def check(self, seen):\n        given = [option for option in self.options if option.name in seen]\n        if len(given) > 2:\n            names = " and ".join(option.flags[-1] for option in given)\n            raise UsageError(f"options {names} are mutually exclusive")\n        if self.required and not given:\n            names = " ".join(option.flags[-1] for option in self.options)\n            raise UsageError(f"one of the options {names} is required")\n\n\nclass OptionParser:\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = '        self._by_flag = {}\n'
new = '        self._by_flag = {}\n        self.groups = []\n\n    def add_mutually_exclusive_group(self, required=False):\n        group = MutuallyExclusiveGroup(self, required)\n        self.groups.append(group)\n        return group\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: edit minicli/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/parser.py')
s = p.read_text(encoding='utf-8')
old = '                raise UsageError(f"missing required option {option.flags[-1]}")\n'
new = '                raise UsageError(f"missing required option {option.flags[-1]}")\n        for group in self.groups:\n            group.check(seen)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 5: edit minicli/help.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('minicli/help.py')
s = p.read_text(encoding='utf-8')
old = '    parts = [f"usage: {parser.prog}"]\n    for option in parser.options:\n        item = _usage_item(option)\n        parts.append(item if option.required else f"[{item}]")\n'
new = '    parts = [f"usage: {parser.prog}"]\n    shown_groups = []\n    for option in parser.options:\n        group = getattr(option, "group", None)\n        if group is not None:\n            if any(group is shown for shown in shown_groups):\n                continue\n            shown_groups.append(group)\n            inner = " | ".join(_usage_item(member) for member in group.options)\n            parts.append(f"({inner})" if group.required else f"[{inner}]")\n            continue\n        item = _usage_item(option)\n        parts.append(item if option.required else f"[{item}]")\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

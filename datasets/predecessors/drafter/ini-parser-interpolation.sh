#!/bin/bash
# Scripted predecessor 'drafter' for task 'ini-parser-interpolation'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit iniparse/config.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('iniparse/config.py')
s = p.read_text(encoding='utf-8')
old = 'from .errors import NoOptionError, NoSectionError\nfrom .parser import parse\n'
new = 'import re\n\nfrom .errors import ConfigError, NoOptionError, NoSectionError\nfrom .parser import parse\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 2: edit iniparse/config.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('iniparse/config.py')
s = p.read_text(encoding='utf-8')
old = 'DEFAULT_SECTION = "DEFAULT"\n'
new = 'DEFAULT_SECTION = "DEFAULT"\nMAX_DEPTH = 10\n_REF = re.compile(r"\\$\\{([^}]*)\\}")\n\n\nclass InterpolationError(ConfigError):\n    """A ${...} reference cannot be resolved."""\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit iniparse/config.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('iniparse/config.py')
s = p.read_text(encoding='utf-8')
old = '        try:\n            return self._lookup(section, option)\n        except (NoSectionError, NoOptionError):\n            if fallback is _MISSING:\n                raise\n            return fallback\n'
new = '        try:\n            value = self._lookup(section, option)\n        except (NoSectionError, NoOptionError):\n            if fallback is _MISSING:\n                raise\n            return fallback\n        if raw:\n            return value\n        return self._expand(section, value, 0)\n\n    def _expand(self, section, value, depth):\n        if depth > MAX_DEPTH:\n            raise InterpolationError(f"interpolation too deep in [{section}]")\n\n        def sub(match):\n            ref = match.group(1)\n            if ":" in ref:\n                sec, opt = ref.split(":", 1)\n            else:\n                sec, opt = section, ref\n            try:\n                target = self._lookup(sec, opt)\n            except ConfigError:\n                raise InterpolationError(f"cannot resolve ${{{ref}}}") from None\n            return self._expand(sec, target, depth + 1)\n\n        return _REF.sub(sub, value)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: edit iniparse/config.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('iniparse/config.py')
s = p.read_text(encoding='utf-8')
old = '    def get(self, section, option, fallback=_MISSING):\n'
new = '    def get(self, section, option, fallback=_MISSING, raw=False):\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 5: write tests/test_interpolation.py
mkdir -p tests && cat > tests/test_interpolation.py <<'EOF_PRED'
import pytest

from iniparse import Config
from iniparse.config import InterpolationError

TEXT = """
[DEFAULT]
base = /opt

[app]
bin = ${base}/bin
tool = ${bin}/tool

[other]
ref = ${app:bin}
bad = ${missing}
"""


def test_interpolates_default_and_same_section():
    cfg = Config.from_string(TEXT)
    assert cfg.get("app", "bin") == "/opt/bin"
    assert cfg.get("app", "tool") == "/opt/bin/tool"


def test_cross_section():
    assert Config.from_string(TEXT).get("other", "ref") == "/opt/bin"


def test_raw():
    assert Config.from_string(TEXT).get("app", "bin", raw=True) == "${base}/bin"


def test_missing_reference():
    with pytest.raises(InterpolationError):
        Config.from_string(TEXT).get("other", "bad")
EOF_PRED

# step 6: write notes.txt
cat > notes.txt <<'EOF_PRED'
interpolation notes
===================
- syntax: ${opt} (same section, then DEFAULT), ${section:opt}
- recursion: depth limit 10 -> InterpolationError
- raw=True skips expansion
- TODO: $$ escape? check issue again
- own tests: tests/test_interpolation.py (4 passed)
EOF_PRED

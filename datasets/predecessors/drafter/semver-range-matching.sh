#!/bin/bash
# Scripted predecessor 'drafter' for task 'semver-range-matching'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit semverx/version.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('semverx/version.py')
s = p.read_text(encoding='utf-8')
old = 'class InvalidVersion(ValueError):\n    """The text is not a semantic version."""\n'
new = 'class InvalidVersion(ValueError):\n    """The text is not a semantic version."""\n\n\n_PARTIAL = re.compile(r"^v?(0|[1-9]\\d*|[xX*])(?:\\.(0|[1-9]\\d*|[xX*]))?(?:\\.(0|[1-9]\\d*|[xX*]))?$")\n_WILDCARDS = {"x", "X", "*"}\n\n\ndef parse_partial(text):\n    """Parse a possibly partial version such as ``1.2.x``, ``1`` or ``*``.\n\n    Returns ``(major, minor, patch)`` where wildcard or missing components are\n    ``None``. A number after a wildcard (``1.x.3``) is invalid.\n    """\n    match = _PARTIAL.match(text.strip())\n    if not match:\n        raise InvalidVersion(f"invalid partial version: {text!r}")\n    parts = []\n    for component in match.groups():\n        if component is None or component in _WILDCARDS:\n            parts.append(None)\n        elif parts and parts[-1] is None:\n            raise InvalidVersion(f"invalid partial version: {text!r}")\n        else:\n            parts.append(int(component))\n    return tuple(parts)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 2: edit semverx/ranges.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('semverx/ranges.py')
s = p.read_text(encoding='utf-8')
old = 'from .version import InvalidVersion, Version\n'
new = 'from .version import InvalidVersion, Version, parse_partial\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit semverx/ranges.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('semverx/ranges.py')
s = p.read_text(encoding='utf-8')
old = 'def _parse_comparator(token):\n    """Return the list of ``(op, Version)`` pairs that ``token`` stands for."""\n    match = _COMPARATOR.match(token)\n'
new = 'def _caret(version):\n    if version.major:\n        upper = Version(version.major + 1, 0, 0)\n    else:\n        upper = Version(0, version.minor + 1, 0)\n    return [(">=", version), ("<", upper)]\n\n\ndef _tilde(version):\n    return [(">=", version), ("<", Version(version.major, version.minor + 1, 0))]\n\n\ndef _wildcard(major, minor):\n    if major is None:\n        return [(">=", Version(0, 0, 0))]\n    if minor is None:\n        return [(">=", Version(major, 0, 0)), ("<", Version(major + 1, 0, 0))]\n    return [(">=", Version(major, minor, 0)), ("<", Version(major, minor + 1, 0))]\n\n\ndef _parse_comparator(token):\n    """Return the list of ``(op, Version)`` pairs that ``token`` stands for."""\n    if token[:1] in ("^", "~"):\n        try:\n            version = Version.parse(token[1:])\n        except InvalidVersion as exc:\n            raise InvalidRange(f"invalid comparator {token!r}") from exc\n        return _caret(version) if token[0] == "^" else _tilde(version)\n    match = _COMPARATOR.match(token)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: edit semverx/ranges.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('semverx/ranges.py')
s = p.read_text(encoding='utf-8')
old = '    try:\n        version = Version.parse(match.group(2))\n    except InvalidVersion as exc:\n        raise InvalidRange(f"invalid comparator {token!r}") from exc\n    return [(op, version)]\n'
new = '    try:\n        version = Version.parse(match.group(2))\n    except InvalidVersion:\n        version = None\n    if version is not None:\n        return [(op, version)]\n    try:\n        major, minor, patch = parse_partial(match.group(2))\n    except InvalidVersion as exc:\n        raise InvalidRange(f"invalid comparator {token!r}") from exc\n    if op != "=" or (major is not None and minor is not None and patch is not None):\n        raise InvalidRange(f"invalid comparator {token!r}")\n    return _wildcard(major, minor)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 5: bytes tests/fixtures/ranges.json.gz
mkdir -p tests/fixtures && python3 - tests/fixtures/ranges.json.gz <<'EOF_PY'
import sys
data = bytes.fromhex(
    "1f8b08000000000002ffabe652504a4e2c4e2d56b25288e65200630525433d23"
    "3d63251d303b0e895352549a0aa4637590545aea5912a5d248cf40cf008bcab4"
    "c49c6234a5064059539852037c861ae819230c35c06b28c84a73a8d23a027e42"
    "185a6748d050985210bb02b79926480a2b880924b832b8bd5c4054cb05009a3e"
    "e2cfb3010000"
)
open(sys.argv[1], 'wb').write(data)
EOF_PY

# step 6: write tests/test_range_table.py
mkdir -p tests && cat > tests/test_range_table.py <<'EOF_PRED'
import gzip
import json
import pathlib

import pytest

from semverx import satisfies

CASES = json.loads(gzip.decompress((pathlib.Path(__file__).parent / "fixtures" / "ranges.json.gz").read_bytes()))["cases"]


@pytest.mark.parametrize("version,range_text,expected", CASES)
def test_range_table(version, range_text, expected):
    assert satisfies(version, range_text) is expected
EOF_PRED

#!/bin/bash
# Scripted predecessor 'skimmer' for task 'semver-range-matching'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit semverx/ranges.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('semverx/ranges.py')
s = p.read_text(encoding='utf-8')
old = 'def _parse_comparator(token):\n    """Return the list of ``(op, Version)`` pairs that ``token`` stands for."""\n    match = _COMPARATOR.match(token)\n'
new = 'def _caret(version):\n    if version.major:\n        upper = Version(version.major + 1, 0, 0)\n    elif version.minor:\n        upper = Version(0, version.minor + 1, 0)\n    else:\n        upper = Version(0, 0, version.patch + 1)\n    return [(">=", version), ("<", upper)]\n\n\ndef _tilde(version):\n    return [(">=", version), ("<", Version(version.major, version.minor + 1, 0))]\n\n\ndef _wildcard(major, minor):\n    if major is None:\n        return [(">=", Version(0, 0, 0))]\n    if minor is None:\n        return [(">=", Version(major, 0, 0)), ("<", Version(major + 1, 0, 0))]\n    return [(">=", Version(major, minor, 0)), ("<", Version(major, minor + 1, 0))]\n\n\ndef _parse_comparator(token):\n    """Return the list of ``(op, Version)`` pairs that ``token`` stands for."""\n    if token[:1] in ("^", "~"):\n        try:\n            version = Version.parse(token[1:])\n        except InvalidVersion as exc:\n            raise InvalidRange(f"invalid comparator {token!r}") from exc\n        return _caret(version) if token[0] == "^" else _tilde(version)\n    match = _COMPARATOR.match(token)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

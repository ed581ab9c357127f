#!/bin/bash
# Scripted predecessor 'skimmer' for task 'csv-dialect-sniffer'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit csvsniff/sniffer.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('csvsniff/sniffer.py')
s = p.read_text(encoding='utf-8')
old = 'def _count(line, char, quotechar):\n    """Number of times ``char`` separates fields in ``line``."""\n    return line.count(char)\n'
new = 'def _count(line, char, quotechar):\n    """Number of times ``char`` separates fields in ``line``.\n\n    Occurrences inside quoted fields do not count; a doubled quote inside a\n    quoted field toggles the state twice and so keeps the field open.\n    """\n    count = 0\n    in_quotes = False\n    for ch in line:\n        if ch == quotechar:\n            in_quotes = not in_quotes\n        elif ch == char and not in_quotes:\n            count += 1\n    return count\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

#!/bin/bash
# Scripted predecessor 'patcher' for task 'csv-dialect-sniffer'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit csvsniff/sniffer.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('csvsniff/sniffer.py')
s = p.read_text(encoding='utf-8')
old = 'def _count(line, char, quotechar):\n    """Number of times ``char`` separates fields in ``line``."""\n    return line.count(char)\n'
new = 'def _count(line, char, quotechar):\n    """Number of times ``char`` separates fields in ``line``."""\n    # skip separators inside quoted fields\n    inside = False\n    n = 0\n    for ch in line:\n        if ch == \'"\':\n            inside = not inside\n        elif ch == char and not inside:\n            n += 1\n    return n\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 2: write debug.log
cat > debug.log <<'EOF_PRED'
sniff_delimiter: candidate ',' counts=[1, 1, 1] -> skipped inside quotes
sniff_delimiter: candidate ';' counts=[1, 1, 1]
result: delimiter=';' quotechar='"'
EOF_PRED

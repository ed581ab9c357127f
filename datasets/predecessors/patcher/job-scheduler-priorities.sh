#!/bin/bash
# Scripted predecessor 'patcher' for task 'job-scheduler-priorities'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit jobq/queue.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('jobq/queue.py')
s = p.read_text(encoding='utf-8')
old = 'heapq.heappush(self._heap, (priority, name))'
new = 'heapq.heappush(self._heap, (-priority, name))  # higher priority first'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

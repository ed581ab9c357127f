#!/bin/bash
# Scripted predecessor 'skimmer' for task 'cron-next-run'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit cronlite/fields.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('cronlite/fields.py')
s = p.read_text(encoding='utf-8')
old = '"weekday": (0, 6),'
new = '"weekday": (0, 7),  # 0 and 7 are both Sunday'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 2: edit cronlite/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('cronlite/parser.py')
s = p.read_text(encoding='utf-8')
old = '    weekday: frozenset\n'
new = '    weekday: frozenset\n    day_any: bool = False\n    weekday_any: bool = False\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit cronlite/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('cronlite/parser.py')
s = p.read_text(encoding='utf-8')
old = '            step = int(step_text)\n            if base != "*":\n                raise CronError(f"a step is only allowed after \'*\' in {field} field")\n'
new = '            step = int(step_text)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: edit cronlite/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('cronlite/parser.py')
s = p.read_text(encoding='utf-8')
old = '        values.update(range(start, end + 1, step))\n    return frozenset(values)\n'
new = '        values.update(range(start, end + 1, step))\n    if field == "weekday" and 7 in values:\n        values.discard(7)\n        values.add(0)\n    return frozenset(values)\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 5: edit cronlite/parser.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('cronlite/parser.py')
s = p.read_text(encoding='utf-8')
old = '    return CronExpr(**{field: parse_field(text, field) for field, text in zip(FIELDS, parts)})\n'
new = '    sets = {field: parse_field(text, field) for field, text in zip(FIELDS, parts)}\n    return CronExpr(**sets, day_any=parts[2] == "*", weekday_any=parts[4] == "*")\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

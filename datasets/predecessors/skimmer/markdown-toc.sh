#!/bin/bash
# Scripted predecessor 'skimmer' for task 'markdown-toc'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: edit mdtoc/slug.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('mdtoc/slug.py')
s = p.read_text(encoding='utf-8')
old = '    return text.replace(" ", "-")\n'
new = '    return text.replace(" ", "-")\n\n\nclass Slugger:\n    """Hands out unique anchors like GitHub: repeats get ``-1``, ``-2``, ..."""\n\n    def __init__(self):\n        self._used = set()\n        self._counts = {}\n\n    def slug(self, text):\n        base = slugify(text)\n        anchor = base\n        count = self._counts.get(base, 0)\n        while anchor in self._used:\n            count += 1\n            anchor = f"{base}-{count}"\n        self._counts[base] = count\n        self._used.add(anchor)\n        return anchor\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 2: edit mdtoc/toc.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('mdtoc/toc.py')
s = p.read_text(encoding='utf-8')
old = 'from .slug import slugify\n'
new = 'from .slug import Slugger\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit mdtoc/toc.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('mdtoc/toc.py')
s = p.read_text(encoding='utf-8')
old = '    entries = []\n    for heading in iter_headings(text):\n        if min_level <= heading.level <= max_level:\n            entries.append((heading, slugify(heading.text)))\n'
new = '    entries = []\n    slugger = Slugger()\n    for heading in iter_headings(text):\n        anchor = slugger.slug(heading.text)  # every heading takes an anchor, listed or not\n        if min_level <= heading.level <= max_level:\n            entries.append((heading, anchor))\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: write .cache/toc-anchors.json
mkdir -p .cache && cat > .cache/toc-anchors.json <<'EOF_PRED'
{
  "document": "README.md",
  "anchors": ["usage", "options", "options-1"]
}
EOF_PRED

#!/bin/bash
# Scripted predecessor 'patcher' for task 'lru-cache-ttl'.
# Run with the repository root as the working directory; replays the predecessor's edits.
set -euo pipefail

# step 1: write ttlcache/cache.py
mkdir -p ttlcache && cat > ttlcache/cache.py <<'EOF_PRED'
"""A small least-recently-used cache with optional expiry."""

import time
from collections import OrderedDict

_MISSING = object()


class LRUCache:
    """Mapping-like cache holding at most ``maxsize`` entries.

    When a new key is stored in a full cache the least recently used entry is
    evicted. Reading an entry with :meth:`get` marks it as recently used.

    With ``ttl`` (seconds), an entry expires ``ttl`` seconds after it was last
    stored: from that moment on it behaves as if it had never been stored.
    ``clock`` returns the current time in seconds (default: ``time.monotonic``).
    """

    def __init__(self, maxsize=128, ttl=None, clock=None):
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        if ttl is not None and ttl <= 0:
            raise ValueError("ttl must be positive")
        self.maxsize = maxsize
        self.ttl = ttl
        self._clock = clock or time.monotonic
        self._data = OrderedDict()  # key -> (value, expires_at or None)
        self.hits = 0
        self.misses = 0

    def _expired(self, expires_at):
        return expires_at is not None and self._clock() >= expires_at

    def _purge(self):
        for key in [k for k, (_, expires_at) in self._data.items() if self._expired(expires_at)]:
            del self._data[key]

    def get(self, key, default=None):
        """Return the value stored for ``key`` (``default`` when absent or expired)."""
        entry = self._data.get(key)
        if entry is None or self._expired(entry[1]):
            if entry is not None:
                del self._data[key]
            self.misses += 1
            return default
        self._data.move_to_end(key)
        self.hits += 1
        return entry[0]

    def put(self, key, value):
        """Store ``value`` under ``key``, evicting the oldest entry when full."""
        expires_at = None if self.ttl is None else self._clock() + self.ttl
        if key in self._data:
            self._data.move_to_end(key)
        self._data[key] = (value, expires_at)
        if len(self._data) > self.maxsize:
            self._purge()
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def pop(self, key, default=_MISSING):
        """Remove ``key`` and return its value."""
        entry = self._data.pop(key, None)
        if entry is None or self._expired(entry[1]):
            if default is _MISSING:
                raise KeyError(key)
            return default
        return entry[0]

    def clear(self):
        self._data.clear()
        self.hits = self.misses = 0

    def keys(self):
        """Keys from least to most recently used."""
        return list(self._data)

    def __contains__(self, key):
        entry = self._data.get(key)
        return entry is not None and not self._expired(entry[1])

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"LRUCache(maxsize={self.maxsize}, size={len(self)})"
EOF_PRED

# step 2: edit ttlcache/decorator.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('ttlcache/decorator.py')
s = p.read_text(encoding='utf-8')
old = 'def cached(maxsize=128):\n    """Memoize a function\'s results in an LRU cache of ``maxsize`` entries.\n'
new = 'def cached(maxsize=128, ttl=None, clock=None):\n    """Memoize a function\'s results in an LRU cache of ``maxsize`` entries.\n\n    ``ttl`` and ``clock`` are passed to :class:`LRUCache`: results older than\n    ``ttl`` seconds are computed again.\n'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 3: edit ttlcache/decorator.py
python3 - <<'EOF_PY'
import pathlib
p = pathlib.Path('ttlcache/decorator.py')
s = p.read_text(encoding='utf-8')
old = 'cache = LRUCache(maxsize)'
new = 'cache = LRUCache(maxsize, ttl=ttl, clock=clock)'
assert s.count(old) == 1, 'anchor not found'
p.write_text(s.replace(old, new, 1), encoding='utf-8')
EOF_PY

# step 4: write debug.log
cat > debug.log <<'EOF_PRED'
put k at t=0 ttl=10
get k at t=9.5 -> 'v'
get k at t=14.5 -> None (expired)
ok
EOF_PRED

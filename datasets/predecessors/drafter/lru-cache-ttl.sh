#!/bin/bash
# Scripted predecessor 'drafter' for task 'lru-cache-ttl'.
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
        return expires_at is not None and self._clock() > expires_at

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
        """Live keys from least to most recently used."""
        self._purge()
        return list(self._data)

    def __contains__(self, key):
        entry = self._data.get(key)
        return entry is not None and not self._expired(entry[1])

    def __len__(self):
        self._purge()
        return len(self._data)

    def __repr__(self):
        return f"LRUCache(maxsize={self.maxsize}, size={len(self)})"
EOF_PRED

# step 2: write tests/test_ttl.py
mkdir -p tests && cat > tests/test_ttl.py <<'EOF_PRED'
from ttlcache import LRUCache


class Clock:
    def __init__(self):
        self.t = 0

    def __call__(self):
        return self.t


def test_entry_expires_after_ttl():
    clock = Clock()
    c = LRUCache(ttl=10, clock=clock)
    c.put("a", 1)
    clock.t = 5
    assert c.get("a") == 1
    clock.t = 11
    assert c.get("a") is None


def test_len_drops_expired():
    clock = Clock()
    c = LRUCache(ttl=2, clock=clock)
    c.put("a", 1)
    clock.t = 3
    assert len(c) == 0


def test_no_ttl_means_no_expiry():
    clock = Clock()
    c = LRUCache(clock=clock)
    c.put("a", 1)
    clock.t = 10 ** 9
    assert c.get("a") == 1
EOF_PRED

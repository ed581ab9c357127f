"""A small least-recently-used cache."""

from collections import OrderedDict

_MISSING = object()


class LRUCache:
    """Mapping-like cache holding at most ``maxsize`` entries.

    When a new key is stored in a full cache the least recently used entry is
    evicted. Reading an entry with :meth:`get` marks it as recently used.
    """

    def __init__(self, maxsize=128):
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self.maxsize = maxsize
        self._data = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key, default=None):
        """Return the value stored for ``key`` (``default`` when absent)."""
        try:
            value = self._data[key]
        except KeyError:
            self.misses += 1
            return default
        self._data.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key, value):
        """Store ``value`` under ``key``, evicting the oldest entry when full."""
        if key in self._data:
            self._data.move_to_end(key)
        self._data[key] = value
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def pop(self, key, default=_MISSING):
        """Remove ``key`` and return its value."""
        if key in self._data:
            return self._data.pop(key)
        if default is _MISSING:
            raise KeyError(key)
        return default

    def clear(self):
        self._data.clear()
        self.hits = self.misses = 0

    def keys(self):
        """Keys from least to most recently used."""
        return list(self._data)

    def __contains__(self, key):
        return key in self._data

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"LRUCache(maxsize={self.maxsize}, size={len(self)})"

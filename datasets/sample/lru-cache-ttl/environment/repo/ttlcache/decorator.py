"""Memoizing decorator backed by :class:`LRUCache`."""

import functools

from .cache import LRUCache

_MISSING = object()
_KWARGS_MARK = object()


def _make_key(args, kwargs):
    key = args
    if kwargs:
        key += (_KWARGS_MARK,) + tuple(sorted(kwargs.items()))
    return key


def cached(maxsize=128):
    """Memoize a function's results in an LRU cache of ``maxsize`` entries.

    The wrapped function exposes the cache as ``.cache`` and a
    ``.cache_clear()`` helper. Arguments must be hashable.
    """

    def decorator(func):
        cache = LRUCache(maxsize)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            key = _make_key(args, kwargs)
            value = cache.get(key, _MISSING)
            if value is _MISSING:
                value = func(*args, **kwargs)
                cache.put(key, value)
            return value

        wrapper.cache = cache
        wrapper.cache_clear = cache.clear
        return wrapper

    return decorator

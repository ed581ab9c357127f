"""A small LRU cache and a memoizing decorator built on it."""

from .cache import LRUCache
from .decorator import cached

__all__ = ["LRUCache", "cached"]
__version__ = "1.4.0"

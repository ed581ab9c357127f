import pytest

from ttlcache import LRUCache, cached


class FakeClock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def test_basic_get_put():
    c = LRUCache(maxsize=3)
    c.put("a", 1)
    assert c.get("a") == 1
    assert c.get("missing", "dflt") == "dflt"
    assert (c.hits, c.misses) == (1, 1)


def test_lru_eviction_order():
    c = LRUCache(maxsize=2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("a")
    c.put("c", 3)
    assert "b" not in c
    assert c.keys() == ["a", "c"]


def test_invalid_maxsize():
    with pytest.raises(ValueError):
        LRUCache(maxsize=0)


def test_ttl_expiry():
    clock = FakeClock()
    c = LRUCache(maxsize=4, ttl=10, clock=clock)
    c.put("k", "v")
    clock.advance(9.5)
    assert c.get("k") == "v"
    clock.advance(5)
    assert c.get("k") is None


def test_ttl_boundary_is_expired():
    clock = FakeClock(100.0)
    c = LRUCache(ttl=10, clock=clock)
    c.put("k", "v")
    clock.advance(10)
    assert c.get("k", "gone") == "gone"
    assert "k" not in c


def test_contains_respects_expiry():
    clock = FakeClock()
    c = LRUCache(ttl=3, clock=clock)
    c.put("k", 1)
    assert "k" in c
    clock.advance(4)
    assert "k" not in c


def test_len_excludes_expired():
    clock = FakeClock()
    c = LRUCache(maxsize=10, ttl=5, clock=clock)
    c.put("old", 1)
    clock.advance(3)
    c.put("new", 2)
    assert len(c) == 2
    clock.advance(3)
    assert len(c) == 1
    assert c.keys() == ["new"]


def test_put_resets_ttl():
    clock = FakeClock()
    c = LRUCache(ttl=10, clock=clock)
    c.put("k", "first")
    clock.advance(6)
    c.put("k", "second")
    clock.advance(6)
    assert c.get("k") == "second"


def test_decorator_ttl():
    clock = FakeClock()
    calls = []

    @cached(maxsize=4, ttl=5, clock=clock)
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]
    clock.advance(5)
    assert square(3) == 9
    assert calls == [3, 3]


def test_decorator_without_ttl_never_expires():
    calls = []

    @cached(maxsize=2)
    def ident(x):
        calls.append(x)
        return x

    ident(1)
    ident(1)
    assert calls == [1]
    assert len(ident.cache) == 1

from ttlcache import LRUCache, cached


def test_eviction():
    c = LRUCache(maxsize=2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("c", 3)
    assert "a" not in c
    assert c.keys() == ["b", "c"]


def test_decorator_memoizes():
    calls = []

    @cached(maxsize=8)
    def double(x):
        calls.append(x)
        return 2 * x

    assert double(2) == 4
    assert double(2) == 4
    assert calls == [2]

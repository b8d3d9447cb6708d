"""The Redis cache keeps one redis-py client per connection pool and still behaves as Django's backend: values
written by one cache object are read by a new one, and after a fork the child talks to Redis on its own
connections."""
from __future__ import annotations

import os

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

from foundation.redis_cache import RedisCache


def _cache(location=None) -> RedisCache:
    return RedisCache(location or settings.REDIS_URL, {"KEY_PREFIX": "redis-cache-test"})


def test_the_default_cache_is_this_backend():
    assert isinstance(caches["default"], RedisCache) and isinstance(caches["default"], DjangoRedisCache)


def test_one_client_per_pool_serves_every_call():
    cache = _cache()
    cache.set("k", {"a": 1}, 30)
    first = cache._cache.get_client(write=True)
    assert cache.get("k") == {"a": 1}
    assert cache._cache.get_client(write=True) is first and cache._cache.get_client() is first
    assert cache.incr("n", 1) if cache.add("n", 1) else True
    assert _cache().get("k") == {"a": 1} and DjangoRedisCache(settings.REDIS_URL, {"KEY_PREFIX": "redis-cache-test"}) \
        .get("k") == {"a": 1}
    cache.delete_many(["k", "n"])


def test_a_forked_child_uses_connections_of_its_own():
    cache = _cache()
    cache.set("fork", 1, 30)
    parent = cache._cache.get_client().connection_pool
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the kept client's pool notices the fork and opens its own connection
        try:
            ok = cache.get("fork") == 1 and cache.set("fork", 2, 30) is not False
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert cache.get("fork") == 2 and cache._cache.get_client().connection_pool is parent
    cache.delete("fork")

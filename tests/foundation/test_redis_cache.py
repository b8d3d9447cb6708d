"""The Redis cache keeps one redis-py client per connection pool and still behaves as Django's backend: values
written by one cache object are read by a new one, and after a fork the child talks to Redis on its own
connections."""
from __future__ import annotations

import os
import random

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


def test_reads_spread_over_the_replicas_as_djangos_do():
    """With several servers a read picks a replica at random: the kept clients follow the same draws as Django's
    backend, each client on the pool it was chosen for."""
    base = settings.REDIS_URL.rsplit("/", 1)[0]
    servers = [f"{base}/{number}" for number in (2, 3, 4)]
    ours, theirs = (backend(servers, {"KEY_PREFIX": "redis-cache-test"})._cache for backend in (RedisCache,
                                                                                                  DjangoRedisCache))
    used = {}
    for name, client_side in (("ours", ours), ("theirs", theirs)):
        random.seed(7)
        pools = [client_side.get_client(write=index % 5 == 0).connection_pool for index in range(200)]
        used[name] = [client_side._servers[_index_of(client_side, pool)] for pool in pools]
    assert used["ours"] == used["theirs"] and set(used["ours"]) == set(servers)


def _index_of(client_side, pool) -> int:
    return next(index for index, kept in client_side._pools.items() if kept is pool)


def test_a_forked_child_uses_connections_of_its_own():
    cache = _cache()
    cache.set("fork", 1, 30)
    parent = cache._cache.get_client().connection_pool
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the kept client's pool notices the fork and opens its own connection
        answer = b"0"
        try:
            os.close(read)
            pool = cache._cache.get_client().connection_pool
            ok = cache.get("fork") == 1 and cache.set("fork", 2, 30) is not False and pool.pid == os.getpid()
            answer = b"1" if ok else b"0"
        finally:
            os.write(write, answer)
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    os.close(read)
    assert cache.get("fork") == 2 and cache._cache.get_client().connection_pool is parent and parent.pid == os.getpid()
    cache.delete("fork")

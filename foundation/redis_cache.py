"""Django's Redis cache backend with one redis-py client per connection pool, kept, instead of a new one per call.

Django's `RedisCacheClient.get_client` builds a `redis.Redis` for every cache operation; redis-py 8 fills a
case-insensitive table of some 150 response callbacks in each new client, so a join's two throttle operations spent
more CPU building clients than talking to Redis. The client is only a front for its pool (which hands out the
connections, is thread-safe, and after a fork opens new ones), so one per pool serves every call.
"""
from __future__ import annotations

from django.core.cache.backends import redis as django_redis


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        # The pool is chosen as Django chooses it (a read picks a replica at random), once, and the client kept is
        # that pool's: Django keeps each pool for the life of the backend, so its id names it.
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = RedisCacheClient

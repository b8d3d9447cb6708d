"""A sliding log of recent events per key (a throttle's count), read and changed atomically.

DRF's throttles keep a key's history as a list in the cache: `get`, change it in Python, `set`. Two requests of the
same client at once both read the same list and the second `set` drops the first's event, so a client who sends its
requests concurrently (a guesser of API tokens with many connections, a join flood) gets more than its rate: each
web process, and each of its threads, may lose the others' counts. Here the whole step (forget the events older than
the window, count, add this one when it may) is one operation:

- on Redis (the shared cache of every deployment) a Lua script, which Redis runs alone: a sorted set of the events'
  times per key, one round trip a request;
- when Redis cannot be reached the event goes through uncounted, with a warning in the log: a throttle that fails
  open, where DRF's raised and the join page was a 500 until Redis came back;
- on any other cache (`make run` without Redis: Django's local-memory cache, one per process) the same steps under a
  lock of this process: exact within the process, not atomic between processes (a deployment's several web
  processes share Redis). Redis must allow scripts (EVAL, EVALSHA, SCRIPT LOAD): an ACL or a managed Redis that
  forbids them makes every API request and join fail.

The log has keys of its own (`rate_log:` before the throttle's key): a process still running DRF's own counting (a
deploy in progress, a rollback) reads and writes its lists under the throttle's key and never meets a sorted set.

tests/foundation/test_rate_log.py hammers every throttle the project uses from many threads at once.
"""
from __future__ import annotations

import logging
import math
import threading
import uuid

import redis
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache
from django.utils.connection import ConnectionProxy

# KEYS[1]: the log. ARGV: now (s), window (s), limit, mode, a new event's member (unique).
# mode "try": add the event only when fewer than `limit` count; "add": add it anyway (the newest `limit` are kept);
# "peek": add nothing. A value of another type at the key (nothing of ours writes one there) is dropped.
# Returns {1, "0"} when under the limit (after a "try" that added), else {0, seconds until the
# limit-th newest event leaves the window}: a string, as Redis would truncate a Lua number to an integer.
_SCRIPT = """
local key, now, window, limit, mode = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
if limit <= 0 then return {0, tostring(window)} end
local kind = redis.call('TYPE', key).ok
if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', key) end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if mode == 'add' or (mode == 'try' and count < limit) then
  redis.call('ZADD', key, now, ARGV[5])
  redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))
  redis.call('PEXPIRE', key, math.ceil(window * 1000))
  if mode == 'try' then return {1, '0'} end
  count = math.min(count + 1, limit)
end
if count < limit then return {1, '0'} end
local nth = redis.call('ZREVRANGE', key, limit - 1, limit - 1, 'WITHSCORES')
return {0, tostring(tonumber(nth[2]) + window - now)}
"""

logger = logging.getLogger(__name__)
_local_lock = threading.Lock()
_script = None  # redis-py's Script, run with each call's client (EVALSHA; loaded again when Redis lost it)


class SlidingLog:
    """The events of `key` in the last `window` seconds, at most `limit` of them counted."""

    def __init__(self, cache: BaseCache | ConnectionProxy, key: str, window: float, limit: int):
        if isinstance(cache, ConnectionProxy):  # django.core.cache.cache (DRF's): the backend it stands for now
            cache = cache._connections[cache._alias]
        self.cache, self.key, self.window, self.limit = cache, f"rate_log:{key}", float(window), int(limit)

    def try_add(self, now: float) -> tuple[bool, float | None]:
        """Count an event when fewer than `limit` count now: (True, None); else (False, seconds to wait)."""
        return self._run(now, "try")

    def add(self, now: float) -> None:
        """Count an event whatever the count (the newest `limit` are kept)."""
        self._run(now, "add")

    def wait(self, now: float) -> float | None:
        """Seconds until fewer than `limit` count, or None when fewer do now."""
        return self._run(now, "peek")[1]

    def _run(self, now: float, mode: str) -> tuple[bool, float | None]:
        if isinstance(self.cache, RedisCache):
            try:
                return self._on_redis(now, mode)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
                # Redis unreachable: the request goes on uncounted (a participant joins, a token is still checked)
                # rather than failing; the warning says the throttle is open meanwhile.
                logger.warning("rate log %s not counted, Redis unreachable (%s): let through", self.key, error)
                return True, None
        with _local_lock:
            return self._in_process(now, mode)

    def _on_redis(self, now: float, mode: str) -> tuple[bool, float | None]:
        key = self.cache.make_and_validate_key(self.key)
        global _script
        client = self.cache._cache.get_client(key, write=True)
        if _script is None:
            _script = client.register_script(_SCRIPT)
        member = uuid.uuid4().hex[:16]  # the event's own name in the set (64 random bits: unique within a window)
        under, wait = _script(keys=[key], args=[repr(float(now)), repr(self.window), self.limit, mode, member],
                              client=client)
        return bool(under), None if under else max(0.0, float(wait))

    def _in_process(self, now: float, mode: str) -> tuple[bool, float | None]:
        if self.limit <= 0:
            return False, self.window
        kept = self.cache.get(self.key)
        kept = kept if isinstance(kept, list) else []
        events = sorted((t for t in kept if isinstance(t, (int, float)) and t > now - self.window), reverse=True)
        count = len(events)
        if mode == "add" or (mode == "try" and count < self.limit):
            events = [now, *events][:self.limit]
            self.cache.set(self.key, events, math.ceil(self.window))
            if mode == "try":
                return True, None
            count = len(events)
        if count < self.limit:
            return True, None
        return False, max(0.0, events[self.limit - 1] + self.window - now)

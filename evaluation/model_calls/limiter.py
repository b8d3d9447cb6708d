"""Concurrency limits per endpoint, shared by every worker process (no Django inside).

- :class:`RedisLimiter` (REDIS_URL set): a lease semaphore in a Redis sorted set.
  Each request holds a lease (member = a random token, score = expiry time from
  Redis' clock), renewed while the request runs; acquiring first drops expired
  leases, so slots held by a worker killed with SIGKILL come back after ``lease_s``. An optional requests-per-minute
  window lives in a second sorted set. Both checks run in one Lua script (atomic).
- ``FileLimiter`` (embedded mode, no Redis; ``evaluation.model_calls.file_limiter``): N slot files locked
  with ``flock``; the kernel releases a dead process's locks at once. Requests-per-minute
  is enforced per process in this mode.

Each process also holds an ``asyncio.Semaphore(limit)`` in front, so that at most
``limit`` coroutines of a process wait on the shared limiter.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import random
import time

log = logging.getLogger(__name__)

_ACQUIRE = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
local n = math.min(#ARGV - 3, tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1]))
if n <= 0 then return 0 end
local rpm = tonumber(ARGV[3])
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', t - 60)
  n = math.min(n, rpm - redis.call('ZCARD', KEYS[2]))
  if n <= 0 then return -1 end
  for i = 1, n do redis.call('ZADD', KEYS[2], t, ARGV[3 + i]) end
  redis.call('EXPIRE', KEYS[2], 120)
end
for i = 1, n do redis.call('ZADD', KEYS[1], t + tonumber(ARGV[2]), ARGV[3 + i]) end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 60)
return n
"""


class Limiter:
    """``async with limiter.slot(): ...`` holds one of the endpoint's request slots."""

    #: A released slot is kept by the process for the next request of the same process, at most
    #: this many times in a row and for at most ``spare_s`` unused, before it goes back to the
    #: shared limiter (so that other processes get their turn). This saves two round trips to
    #: the shared store per request; the bound on requests in flight is unchanged. A kept slot is
    #: taken again within a millisecond or two while the process has work; ``spare_s`` is short so
    #: that the slots of a process that has run out of work reach the others at once (a chunk that
    #: ends early used to leave its slots idle for up to 75 ms, about a third of a request here).
    max_handoffs = 16
    spare_s = 0.01

    def __init__(self, *, limit: int, requests_per_minute: int | None = None):
        self.limit = max(1, int(limit))
        self.rpm = int(requests_per_minute or 0)
        self._local = asyncio.Semaphore(self.limit)
        self._queued = 0  # coroutines of this process waiting for a local permit
        self._spare: list[tuple[str, int, float]] = []  # (token, hand-offs so far, kept since)
        self._reaper: asyncio.Task | None = None
        self._returning: list[str] = []  # slots given back, on their way to the shared limiter
        self._returner: asyncio.Task | None = None
        self._waiters: collections.deque[asyncio.Future] = collections.deque()  # coroutines waiting for a slot
        self._acquirer: asyncio.Task | None = None  # the task that serves them together (shared limiters)

    def slot(self) -> _Slot:
        return _Slot(self)

    def _give_back(self, tokens: list[str]) -> None:
        """Return slots to the shared limiter, together: the slots given back while one return is on its way go
        in the next one (one round trip for many, not one each; a slot is only held a little longer, so the bound
        on requests in flight is kept)."""
        self._returning.extend(tokens)
        if self._returner is None or self._returner.done():
            self._returner = asyncio.create_task(self._return_all())

    async def _return_all(self) -> None:
        await asyncio.sleep(0)  # the other coroutines of this turn give theirs back too
        while self._returning:
            tokens, self._returning = self._returning, []
            try:
                await self._release_many(tokens)
            except Exception:  # noqa: BLE001 - the shared store unreachable: the leases expire (RedisLimiter.lease_s)
                log.warning("could not give back %d slots of the limiter; they come back when their leases expire",
                            len(tokens), exc_info=True)

    async def _reap(self) -> None:
        """Give back slots kept but unused for ``spare_s``."""
        while self._spare:
            await asyncio.sleep(self.spare_s / 2)
            cutoff = time.monotonic() - self.spare_s
            if self._spare and self._spare[0][2] < cutoff:  # the oldest first: nothing is stale while the first is not
                stale = [entry[0] for entry in self._spare if entry[2] < cutoff]
                self._spare = [entry for entry in self._spare if entry[2] >= cutoff]
                self._give_back(stale)

    async def _acquire(self) -> str:
        return ""

    async def _granted(self) -> str:
        """Wait in line for a slot from ``_acquire_for_waiters``, which serves every waiting coroutine together."""
        future = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        if self._acquirer is None or self._acquirer.done():
            self._acquirer = asyncio.create_task(self._acquire_for_waiters())
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                await asyncio.shield(self._release(future.result()))  # granted just as the caller gave up
            raise

    async def _acquire_for_waiters(self) -> None:
        raise NotImplementedError

    def _next_waiter(self) -> asyncio.Future | None:
        while self._waiters and self._waiters[0].done():  # cancelled while waiting
            self._waiters.popleft()
        return self._waiters.popleft() if self._waiters else None

    async def _release(self, token: str) -> None:
        return None

    async def _release_many(self, tokens: list[str]) -> None:
        for token in tokens:
            await self._release(token)

    async def close(self) -> None:
        for task in (self._reaper, self._acquirer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._returner is not None and not self._returner.done():
            await self._returner
        spare, self._spare = self._spare, []
        returning, self._returning = self._returning, []
        await self._release_many([token for token, _, _ in spare] + returning)


class _Slot:
    """``Limiter.slot()``: a class, not ``contextlib.asynccontextmanager`` (whose generator machinery was 8% of the
    event loop's CPU per request at concurrency 256)."""

    __slots__ = ("limiter", "token", "handoffs")

    def __init__(self, limiter: Limiter):
        self.limiter = limiter

    async def __aenter__(self) -> None:
        limiter = self.limiter
        limiter._queued += 1
        try:
            await limiter._local.acquire()
        finally:
            limiter._queued -= 1
        try:
            if limiter._spare:
                self.token, self.handoffs, _ = limiter._spare.pop()
            else:
                self.token, self.handoffs = await limiter._acquire(), 0
        except BaseException:
            limiter._local.release()
            raise

    async def __aexit__(self, *exc_info) -> bool:
        limiter = self.limiter
        try:
            if self.handoffs < limiter.max_handoffs and not limiter.rpm:
                limiter._spare.append((self.token, self.handoffs + 1, time.monotonic()))
                if limiter._reaper is None or limiter._reaper.done():
                    limiter._reaper = asyncio.create_task(limiter._reap())
            else:
                limiter._give_back([self.token])
        finally:
            limiter._local.release()
        return False


async def _pause(waited: int, cap_s: float = 0.05) -> None:
    # Poll quickly at first, then back off a little (to ``cap_s``); jitter spreads competing waiters.
    await asyncio.sleep(min(cap_s, 0.002 * (1.5 ** min(waited, 10))) * random.uniform(0.5, 1.5))


#: The lease of a slot when none is given (settings.EVALUATION_LIMITER_LEASE_S is what the app passes).
DEFAULT_LEASE_S = 10.0


class RedisLimiter(Limiter):
    """Leases are short (``lease_s``) and renewed every ``lease_s / 3`` while held, so a
    long request keeps its slot and a dead worker's slots come back within ``lease_s``.

    The coroutines of a process that wait for a slot are served together: one task asks Redis
    for as many slots as there are waiters in one script call (one round trip for the 64 requests
    that start a run, not 64), at most ``ask_most`` a call, on a small pool of connections."""

    pool_size = 4
    #: The longest wait between two asks of a process whose coroutines wait for a slot (jittered to 5-15 ms).
    #: One small script call per ask, for all of the process' waiters: about 100 calls a second (at most
    #: 200) per waiting process, and a slot another process gives back is taken up within ~15 ms.
    poll_cap_s = 0.01
    #: The most slots one script call asks for. A full grant asks again at once, so many slots freed together are
    #: still taken within a few round trips; but the process' waiters, while the other processes hold the slots,
    #: ask about a hundred times a second, and a call naming every one of 128 waiters (a token each, packed by
    #: redis-py) was a tenth of the event loop's CPU of a worker process sharing the limit (two Celery workers).
    ask_most = 32

    def __init__(self, *, redis_url: str, key: str, limit: int, requests_per_minute: int | None = None,
                 lease_s: float = DEFAULT_LEASE_S):
        super().__init__(limit=limit, requests_per_minute=requests_per_minute)
        import redis.asyncio as aioredis

        # driver_info=None: a new connection sends no CLIENT SETINFO (two round trips, and a lookup of redis-py's
        # version among the installed packages, ~2-4 ms, for each chunk's limiter).
        self._redis = aioredis.Redis.from_pool(aioredis.BlockingConnectionPool.from_url(
            redis_url, max_connections=self.pool_size, timeout=None, driver_info=None))
        self._script = self._redis.register_script(_ACQUIRE)
        self.slots_key = f"evaluation:limiter:{key}:slots"
        self.rate_key = f"evaluation:limiter:{key}:rate"
        self.lease_s = lease_s
        self._held: set[str] = set()
        self._renewer: asyncio.Task | None = None

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            if self._held:
                seconds, micros = await self._redis.time()
                expiry = seconds + micros / 1_000_000 + self.lease_s
                held = {token: expiry for token in self._held}  # after the await: close() may have emptied it
                if held:
                    await self._redis.zadd(self.slots_key, held, xx=True)

    async def _acquire(self) -> str:
        return await self._granted()

    async def _acquire_for_waiters(self) -> None:
        """Grant slots to the waiting coroutines, as many per script call as there are waiters (``ask_most`` at most)."""
        waited = 0
        await asyncio.sleep(0)  # let the coroutines of this loop turn queue up too
        while any(not f.done() for f in self._waiters):
            # One random draw per ask, not per waiter (a process with 128 waiters asked ~100 times a second): the
            # tokens are that draw and their index, unique all the same.
            prefix = os.urandom(12).hex()
            waiting = sum(1 for f in self._waiters if not f.done())
            tokens = [f"{prefix}-{n}" for n in range(min(waiting, self.ask_most))]
            try:
                granted = int(await self._script(keys=[self.slots_key, self.rate_key],
                                                 args=[self.limit, self.lease_s, self.rpm, *tokens]))
            except Exception as exc:  # noqa: BLE001 - Redis unreachable: every waiter gets the error
                while (waiter := self._next_waiter()) is not None:
                    waiter.set_exception(exc)
                return
            if granted > 0:
                self._held.update(tokens[:granted])
                if self._renewer is None:
                    self._renewer = asyncio.create_task(self._renew())
                leftover = []
                for token in tokens[:granted]:
                    waiter = self._next_waiter()
                    if waiter is None:
                        leftover.append(token)
                    else:
                        waiter.set_result(token)
                if leftover:
                    await self._release_many(leftover)
            if granted >= len(tokens):
                waited = 0
            elif granted == -1:  # the per-minute budget is spent: wait longer
                await asyncio.sleep(random.uniform(0.2, 0.5))
            else:
                await _pause(waited, self.poll_cap_s)
                waited += 1

    async def _release(self, token: str) -> None:
        self._held.discard(token)
        await self._redis.zrem(self.slots_key, token)

    async def _release_many(self, tokens: list[str]) -> None:
        if tokens:
            self._held.difference_update(tokens)
            await self._redis.zrem(self.slots_key, *tokens)

    async def close(self) -> None:
        await super().close()
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        await self._redis.aclose()


class LocalLimiter(Limiter):
    """Only the per-process semaphore (built-in models, single-process use)."""

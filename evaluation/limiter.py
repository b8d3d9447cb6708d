"""Concurrency limits per endpoint, shared by every worker process (no Django inside).

- :class:`RedisLimiter` (REDIS_URL set): a lease semaphore in a Redis sorted set.
  Each request holds a lease (member = a random token, score = expiry time from
  Redis' clock), renewed while the request runs; acquiring first drops expired
  leases, so slots held by a worker killed with SIGKILL come back after ``lease_s``. An optional requests-per-minute
  window lives in a second sorted set. Both checks run in one Lua script (atomic).
- :class:`FileLimiter` (embedded mode, no Redis): N slot files locked with
  ``flock``; the kernel releases a dead process's locks at once. Requests-per-minute
  is enforced per process in this mode.

Each process also holds an ``asyncio.Semaphore(limit)`` in front, so that at most
``limit`` coroutines of a process wait on the shared limiter.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import os
import random
import time
import uuid
from pathlib import Path
from typing import AsyncIterator

_ACQUIRE = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
local rpm = tonumber(ARGV[4])
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', t - 60)
  if redis.call('ZCARD', KEYS[2]) >= rpm then return -1 end
  redis.call('ZADD', KEYS[2], t, ARGV[1])
  redis.call('EXPIRE', KEYS[2], 120)
end
redis.call('ZADD', KEYS[1], t + tonumber(ARGV[3]), ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3])) + 60)
return 1
"""


class Limiter:
    """``async with limiter.slot(): ...`` holds one of the endpoint's request slots."""

    #: A released slot is kept by the process for the next request of the same process, at most
    #: this many times in a row and for at most ``spare_s`` unused, before it goes back to the
    #: shared limiter (so that other processes get their turn). This saves two round trips to
    #: the shared store per request; the bound on requests in flight is unchanged.
    max_handoffs = 16
    spare_s = 0.05

    def __init__(self, *, limit: int, requests_per_minute: int | None = None):
        self.limit = max(1, int(limit))
        self.rpm = int(requests_per_minute or 0)
        self._local = asyncio.Semaphore(self.limit)
        self._queued = 0  # coroutines of this process waiting for a local permit
        self._spare: list[tuple[str, int, float]] = []  # (token, hand-offs so far, kept since)
        self._reaper: asyncio.Task | None = None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self._queued += 1
        try:
            await self._local.acquire()
        finally:
            self._queued -= 1
        try:
            if self._spare:
                token, handoffs, _ = self._spare.pop()
            else:
                token, handoffs = await self._acquire(), 0
            try:
                yield
            finally:
                if handoffs < self.max_handoffs and not self.rpm:
                    self._spare.append((token, handoffs + 1, time.monotonic()))
                    if self._reaper is None or self._reaper.done():
                        self._reaper = asyncio.create_task(self._reap())
                else:
                    await self._release(token)
        finally:
            self._local.release()

    async def _reap(self) -> None:
        """Give back slots kept but unused for ``spare_s``."""
        while self._spare:
            await asyncio.sleep(self.spare_s / 2)
            cutoff = time.monotonic() - self.spare_s
            stale = [entry for entry in self._spare if entry[2] < cutoff]
            if stale:
                self._spare = [entry for entry in self._spare if entry[2] >= cutoff]
                for token, _, _ in stale:
                    await self._release(token)

    async def _acquire(self) -> str:
        return ""

    async def _release(self, token: str) -> None:
        return None

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        while self._spare:
            await self._release(self._spare.pop()[0])


async def _pause(waited: int) -> None:
    # Poll quickly at first, then back off a little; jitter spreads competing waiters.
    await asyncio.sleep(min(0.05, 0.002 * (1.5 ** min(waited, 10))) * random.uniform(0.5, 1.5))


DEFAULT_LEASE_S = float(os.environ.get("EVALUATION_LIMITER_LEASE_S", "10"))


class RedisLimiter(Limiter):
    """Leases are short (``lease_s``) and renewed every ``lease_s / 3`` while held, so a
    long request keeps its slot and a dead worker's slots come back within ``lease_s``."""

    def __init__(self, *, redis_url: str, key: str, limit: int, requests_per_minute: int | None = None,
                 lease_s: float = DEFAULT_LEASE_S):
        super().__init__(limit=limit, requests_per_minute=requests_per_minute)
        import redis.asyncio as aioredis

        self._redis = aioredis.Redis.from_url(redis_url)
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
                await self._redis.zadd(self.slots_key, {token: expiry for token in self._held}, xx=True)

    async def _acquire(self) -> str:
        token = uuid.uuid4().hex
        waited = 0
        while True:
            granted = await self._script(keys=[self.slots_key, self.rate_key],
                                         args=[token, self.limit, self.lease_s, self.rpm])
            if int(granted) == 1:
                self._held.add(token)
                if self._renewer is None:
                    self._renewer = asyncio.create_task(self._renew())
                return token
            if int(granted) == -1:  # the per-minute budget is spent: wait longer
                await asyncio.sleep(random.uniform(0.2, 0.5))
            else:
                await _pause(waited)
            waited += 1

    async def _release(self, token: str) -> None:
        self._held.discard(token)
        await self._redis.zrem(self.slots_key, token)

    async def in_use(self) -> int:
        return int(await self._redis.zcard(self.slots_key))

    async def close(self) -> None:
        await super().close()
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        await self._redis.aclose()


class FileLimiter(Limiter):
    def __init__(self, *, directory: Path, limit: int, requests_per_minute: int | None = None):
        super().__init__(limit=limit, requests_per_minute=requests_per_minute)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._starts: collections.deque[float] = collections.deque()

    def _try_lock(self) -> int | None:
        for slot in random.sample(range(self.limit), self.limit):
            fd = os.open(self.directory / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                os.close(fd)
        return None

    async def _acquire(self) -> str:
        waited = 0
        while True:
            if self.rpm:
                now = time.monotonic()
                while self._starts and self._starts[0] < now - 60:
                    self._starts.popleft()
                if len(self._starts) >= self.rpm:
                    await asyncio.sleep(max(0.05, self._starts[0] + 60 - now))
                    continue
            fd = self._try_lock()
            if fd is not None:
                if self.rpm:
                    self._starts.append(time.monotonic())
                return str(fd)
            await _pause(waited)
            waited += 1

    async def _release(self, token: str) -> None:
        fd = int(token)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class LocalLimiter(Limiter):
    """Only the per-process semaphore (built-in models, single-process use)."""

"""The shared limiters of the model calls, against real Redis: the Redis limiter is shared between instances (worker
processes), a dead worker's lease expires, a live one is renewed, requests per minute are capped (the embedded mode's
file limiter: test_file_limiter)."""
import asyncio
import os
import time

import pytest
import redis
from django.conf import settings

from evaluation.model_calls.limiter import RedisLimiter


async def _hold(limiter, gauge, hold_s):
    async with limiter.slot():
        gauge["now"] += 1
        gauge["peak"] = max(gauge["peak"], gauge["now"])
        await asyncio.sleep(hold_s)
        gauge["now"] -= 1


def test_redis_limiter_is_shared_between_limiter_instances():
    key = f"test-{os.getpid()}-{time.time_ns()}"

    async def go():
        # Two instances = two worker processes: each allows 3 locally, together still 3.
        a = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=3)
        b = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=3)
        gauge = {"now": 0, "peak": 0}
        await asyncio.gather(*(_hold(a if i % 2 else b, gauge, 0.03) for i in range(24)))
        await a.close(), await b.close()  # gives back the slots kept for reuse
        with redis.Redis.from_url(settings.REDIS_URL) as store:
            assert store.zcard(a.slots_key) == 0
        return gauge["peak"]

    assert asyncio.run(go()) == 3


def test_redis_limiter_lease_of_a_dead_worker_expires():
    key = f"test-expire-{time.time_ns()}"

    async def go():
        dead = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.5)
        await dead._acquire()  # taken and never released ...
        dead._renewer.cancel()  # ... nor renewed: the worker "died"
        alive = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.5)
        started = time.monotonic()
        async with alive.slot():
            waited = time.monotonic() - started
        await dead.close(), await alive.close()
        return waited

    assert 0.3 < asyncio.run(go()) < 2.0


def test_redis_limiter_requests_per_minute():
    key = f"test-rpm-{time.time_ns()}"

    async def go():
        limiter = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=10, requests_per_minute=5)
        for _ in range(5):
            async with limiter.slot():
                pass
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(limiter._acquire(), 0.5)
        await limiter.close()

    asyncio.run(go())


def test_redis_lease_is_renewed_while_a_long_request_holds_it():
    key = f"test-renew-{time.time_ns()}"

    async def go():
        holder = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.3)
        other = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.3)
        async with holder.slot():
            with pytest.raises(asyncio.TimeoutError):  # 1 s > 3 leases: renewal keeps the slot taken
                await asyncio.wait_for(other._acquire(), 1.0)
        async with other.slot():
            pass
        await holder.close(), await other.close()

    asyncio.run(go())


def test_slots_given_back_together_take_one_round_trip_and_all_come_back():
    """Slots that end in the same turn of the loop go back to Redis in one ZREM (counted by Redis' own keyspace
    events), the set is empty once they are back, and close() gives back one still on its way."""
    key = f"test-return-{os.getpid()}-{time.time_ns()}"
    store = redis.Redis.from_url(settings.REDIS_URL)
    store.config_set("notify-keyspace-events", "Kz")
    db = store.connection_pool.connection_kwargs.get("db", 0)

    async def go():
        limiter = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=8)
        limiter.max_handoffs = 0  # every slot goes back when its request ends
        events = store.pubsub()
        events.subscribe(f"__keyspace@{db}__:{limiter.slots_key}")
        events.get_message(timeout=1)  # the subscription's confirmation
        gauge = {"now": 0, "peak": 0}
        await asyncio.gather(*(_hold(limiter, gauge, 0.02) for _ in range(8)))  # 8 slots, ended in one turn
        await asyncio.sleep(0.05)
        removed = []
        while (message := events.get_message(timeout=0.2)) is not None:
            removed += [message["data"]] if message["data"] == b"zrem" else []
        events.close()
        left_after_requests = store.zcard(limiter.slots_key)
        async with limiter.slot():
            pass
        await limiter.close()  # the last slot's return was still on its way
        return gauge["peak"], removed, left_after_requests, store.zcard(limiter.slots_key)

    peak, removed, left_after_requests, left_after_close = asyncio.run(go())
    store.close()
    assert peak == 8
    assert left_after_requests == 0 and left_after_close == 0
    assert removed == [b"zrem"], f"{len(removed)} ZREM commands for 8 slots ended together"


def test_waiters_ask_for_at_most_ask_most_slots_a_call_and_take_many_freed_slots_at_once():
    """While another process holds every slot, a process' 100 waiters ask Redis with calls of at most ``ask_most``
    tokens (each naming every waiter was a tenth of a worker's event loop); when the 100 slots come back together,
    every waiter has one within a few round trips (a full grant asks again at once), and the bound holds."""
    key = f"test-ask-{os.getpid()}-{time.time_ns()}"

    async def go():
        holder = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=100)
        waiting = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=100)
        held = [await holder._acquire() for _ in range(100)]
        asks, script = [], waiting._script

        async def recording(*, keys, args):
            asks.append(len(args) - 3)
            return await script(keys=keys, args=args)

        waiting._script = recording
        gauge = {"now": 0, "peak": 0}
        tasks = [asyncio.ensure_future(_hold(waiting, gauge, 0.3)) for _ in range(100)]
        await asyncio.sleep(0.1)  # every waiter asks and is refused meanwhile
        refused = len(asks)
        freed = time.monotonic()
        await holder._release_many(held)
        while gauge["now"] < 100:
            await asyncio.sleep(0.001)
        took = time.monotonic() - freed
        await asyncio.gather(*tasks)
        await holder.close(), await waiting.close()
        return asks, refused, took, gauge["peak"]

    asks, refused, took, peak = asyncio.run(go())
    assert refused >= 3 and max(asks) == RedisLimiter.ask_most < 100
    assert took < 0.2 and peak == 100

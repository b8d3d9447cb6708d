"""Run many (item, sample) jobs at once on one event loop (no Django inside).

The engine knows nothing about the database: it gets the jobs, a client, an optional
batched cache lookup, and callbacks for results and for "stop now" (cancel). Up to
``concurrency`` jobs are in progress at a time; the client's limiter bounds the
requests actually on the wire across processes.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass
from typing import AsyncIterable, Awaitable, Callable, Iterable, Sequence

from .clients import ModelClient, RequestFailed
from .methods import Completion, Method, Outcome
from .prompts import Presented

#: Slow start: the first ``concurrency`` requests of a run are launched this far apart (about the client's
#: CPU per request) instead of all at once, with the whole ramp at most ``RAMP_MAX_S``. Started together
#: against a server of steady latency, they all come back as one burst (the benchmark saw 64 arrivals within
#: 2-4 ms), whose serial processing delays the refills of that wave, and the following waves stay bunched.
#: Spread starts keep the refills spread. It also spares a real endpoint a thundering herd. The concurrency
#: limit is unchanged (peak in flight still reaches it); the ramp waits before the limiter, holding no slot.
RAMP_SPACING_S = 0.002
RAMP_MAX_S = 0.25


@dataclass(frozen=True)
class Job:
    item_id: int
    sample_index: int  # the row's
    shown: Presented
    demos: tuple[Presented, ...] = ()
    #: The repeated-sampling index the cache key and the client see, when it is not the row's sample index
    #: (the rotations of one circular sample are rows of their own but one sample).
    sample: int | None = None
    #: The item's version the prompt was rendered from (Result.item_version).
    item_version: int | None = None


@dataclass
class JobResult:
    job: Job
    outcome: Outcome | None
    error: str = ""
    attempts: int = 0
    new_cache: dict[str, Completion] | None = None


def cache_key(*, base_url: str, model: str, messages: Sequence[dict], params: dict, sample_key: str) -> str:
    """The response-cache key: a hash of (endpoint URL, model, messages, parameters, sample)."""
    payload = json.dumps([base_url.rstrip("/"), model, list(messages), params, sample_key],
                         sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


class Ramp:
    """Lets the first ``count`` callers of :meth:`wait` go one at a time, ``spacing`` seconds apart.

    Each start is spaced from the previous one as it actually happened (not from a fixed schedule), so
    that a loop busy for a while (the first requests open connections) does not release the rest at once."""

    def __init__(self, *, spacing: float, count: int):
        self.spacing, self.count = max(0.0, spacing), count
        self.started = 0
        self._last: float | None = None
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if self.spacing <= 0 or self.started >= self.count:
            return
        self.started += 1
        async with self._lock:
            loop = asyncio.get_running_loop()
            if self._last is not None:
                delay = self._last + self.spacing - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            self._last = loop.time()


class BatchLoader:
    """Collects cache lookups made in the same loop turn into one batched fetch."""

    def __init__(self, fetch: Callable[[list[str]], Awaitable[dict[str, Completion]]]):
        self._fetch = fetch
        self._pending: dict[str, asyncio.Future] = {}
        self._scheduled = False

    async def load(self, key: str) -> Completion | None:
        if key in self._pending:
            return await self._pending[key]
        future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # let the other coroutines of this turn queue their keys too
        pending, self._pending, self._scheduled = self._pending, {}, False
        try:
            found = await self._fetch(list(pending))
        except Exception as exc:  # noqa: BLE001 - a broken cache must not fail the run
            found = {}
            for future in pending.values():
                if not future.done():
                    future.set_result(None)
            del exc
        for key, future in pending.items():
            if not future.done():
                future.set_result(found.get(key))


@dataclass
class Engine:
    method: Method
    client: ModelClient
    k: int = 1
    concurrency: int = 8
    base_url: str = ""
    model: str = ""
    params: dict | None = None
    cache_fetch: Callable[[list[str]], Awaitable[dict[str, Completion]]] | None = None
    ramp_spacing_s: float = RAMP_SPACING_S  # 0: no slow start (e.g. a built-in model, no network)

    def _generate_for(self, job: Job, new_cache: dict[str, Completion], loader: BatchLoader | None,
                      ramp: Ramp | None = None):
        async def generate(messages, call_key: str) -> Completion:
            sample_key = f"{job.sample_index if job.sample is None else job.sample}:{call_key}"
            key = None
            if loader is not None:
                key = cache_key(base_url=self.base_url, model=self.model, messages=messages,
                                params=self.params or {}, sample_key=sample_key)
                hit = await loader.load(key)
                if hit is not None:
                    return Completion(text=hit.text, tokens_in=hit.tokens_in, tokens_out=hit.tokens_out,
                                      latency_s=0.0, attempts=0, cached=True)
            if ramp is not None:  # after the cache: a hit makes no request and needs no spacing
                await ramp.wait()
            completion = await self.client.complete(messages, sample_key=sample_key)
            if key is not None:
                new_cache[key] = completion
            return completion

        return generate

    async def run(self, jobs: Iterable[Job] | AsyncIterable[Job], *, on_result: Callable[[JobResult], None],
                  stopped: Callable[[], bool] = lambda: False, count: int | None = None) -> None:
        """Run the jobs. ``jobs`` may be an async iterable (jobs planned while the first ones run), then
        ``count`` (an upper bound on their number) sizes the workers and the ramp."""
        loader = BatchLoader(self.cache_fetch) if self.cache_fetch else None
        feeder = None
        if isinstance(jobs, AsyncIterable):
            queue: asyncio.Queue | None = None
            total = count if count is not None else self.concurrency
        else:
            jobs = list(jobs)
            pending = iter(jobs)
            total = len(jobs)
        workers = max(1, min(self.concurrency, total))
        ramp = Ramp(spacing=min(self.ramp_spacing_s, RAMP_MAX_S / workers), count=workers)

        if isinstance(jobs, AsyncIterable):
            # Bounded: the next jobs are planned only as they are needed, in small steps between responses.
            queue = asyncio.Queue(maxsize=2 * workers)

            async def feed() -> None:
                try:
                    async for job in jobs:
                        await queue.put(job)
                except asyncio.CancelledError:  # stopped early: the workers are gone
                    raise
                except BaseException:  # a planning error: the workers stop at once, it is raised below
                    while not queue.empty():
                        queue.get_nowait()
                    for _ in range(workers):
                        queue.put_nowait(None)
                    raise
                for _ in range(workers):
                    await queue.put(None)

            feeder = asyncio.ensure_future(feed())

            async def next_jobs():
                while (job := await queue.get()) is not None:
                    yield job
        else:
            async def next_jobs():
                for job in pending:  # one shared iterator: each job is taken by exactly one worker
                    yield job

        async def worker() -> None:
            async for job in next_jobs():
                if stopped():
                    return
                new_cache: dict[str, Completion] = {}
                generate = self._generate_for(job, new_cache, loader, ramp)
                try:
                    outcome = await self.method.solve(job.shown, job.demos, generate, k=self.k)
                    result = JobResult(job, outcome, attempts=outcome.attempts, new_cache=new_cache)
                except RequestFailed as exc:
                    result = JobResult(job, None, error=str(exc), attempts=exc.attempts, new_cache=new_cache)
                except Exception as exc:  # noqa: BLE001 - one bad item must not stop the run
                    result = JobResult(job, None, error=f"{type(exc).__name__}: {exc}"[:1000], new_cache=new_cache)
                on_result(result)

        try:
            await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            if feeder is not None:
                if not feeder.done():  # stopped early
                    feeder.cancel()
                    try:
                        await feeder
                    except asyncio.CancelledError:
                        pass
                else:
                    feeder.result()  # a planning error

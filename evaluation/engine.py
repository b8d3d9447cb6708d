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
from typing import Awaitable, Callable, Iterable, Sequence

from .clients import ModelClient, RequestFailed
from .methods import Completion, Method, Outcome
from .prompts import Presented


@dataclass(frozen=True)
class Job:
    item_id: int
    sample_index: int
    shown: Presented
    demos: tuple[Presented, ...] = ()


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

    def _generate_for(self, job: Job, new_cache: dict[str, Completion], loader: BatchLoader | None):
        async def generate(messages, call_key: str) -> Completion:
            sample_key = f"{job.sample_index}:{call_key}"
            key = None
            if loader is not None:
                key = cache_key(base_url=self.base_url, model=self.model, messages=messages,
                                params=self.params or {}, sample_key=sample_key)
                hit = await loader.load(key)
                if hit is not None:
                    return Completion(text=hit.text, tokens_in=hit.tokens_in, tokens_out=hit.tokens_out,
                                      latency_s=0.0, attempts=0, cached=True)
            completion = await self.client.complete(messages, sample_key=sample_key)
            if key is not None:
                new_cache[key] = completion
            return completion

        return generate

    async def run(self, jobs: Iterable[Job], *, on_result: Callable[[JobResult], None],
                  stopped: Callable[[], bool] = lambda: False) -> None:
        jobs = list(jobs)
        pending = iter(jobs)
        loader = BatchLoader(self.cache_fetch) if self.cache_fetch else None

        async def worker() -> None:
            for job in pending:  # one shared iterator: each job is taken by exactly one worker
                if stopped():
                    return
                new_cache: dict[str, Completion] = {}
                generate = self._generate_for(job, new_cache, loader)
                try:
                    outcome = await self.method.solve(job.shown, job.demos, generate, k=self.k)
                    result = JobResult(job, outcome, attempts=outcome.attempts, new_cache=new_cache)
                except RequestFailed as exc:
                    result = JobResult(job, None, error=str(exc), attempts=exc.attempts, new_cache=new_cache)
                except Exception as exc:  # noqa: BLE001 - one bad item must not stop the run
                    result = JobResult(job, None, error=f"{type(exc).__name__}: {exc}"[:1000], new_cache=new_cache)
                on_result(result)

        await asyncio.gather(*(worker() for _ in range(max(1, min(self.concurrency, len(jobs))))))

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
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from evaluation.model_calls.clients import ABANDONED, EndpointDown, ModelClient, RequestFailed
from evaluation.prompting.methods import Completion, Method, Outcome
from evaluation.prompting.prompts import Presented

#: Slow start: the first ``concurrency`` requests of a run are launched this far apart (about the client's
#: CPU per request) instead of all at once, with the whole ramp at most ``RAMP_MAX_S``. Started together
#: against a server of steady latency, they all come back as one burst (the benchmark saw 64 arrivals within
#: 2-4 ms), whose serial processing delays the refills of that wave, and the following waves stay bunched.
#: Spread starts keep the refills spread. It also spares a real endpoint a thundering herd. The concurrency
#: limit is unchanged (peak in flight still reaches it); the ramp waits before the limiter, holding no slot.
#: (It was 2 ms and at most 0.25 s when a request cost the client 2 ms of CPU; at 0.15 ms, a 0.25 s ramp of 256
#: requests kept half the slots idle for five 50 ms latencies, 5% of a 12,000-request run.)
RAMP_SPACING_S = 0.0002
RAMP_MAX_S = 0.05
#: After the circuit breaker opened, how long the other workers have to write their failed jobs (their retries
#: wake on the breaker at once; a request still on the wire is abandoned after this).
BREAKER_GRACE_S = 1.0


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
    #: Every call made, in order, even when a later one failed: {"call", "messages", "output",
    #: "finish_reason", "tokens_in", "tokens_out", "latency_s", "cached", "attempts", "failed_attempts"},
    #: and "error" / "error_class" on the call that failed.
    calls: list[dict] | None = None
    error_class: str = ""
    failed_call: str = ""


def call_record(call_key: str, messages, completion: Completion) -> dict:
    """One call of a job as stored on its row (``Result.messages``)."""
    record = {"call": call_key, "messages": messages, "output": completion.text,
              "finish_reason": completion.finish_reason, "tokens_in": completion.tokens_in,
              "tokens_out": completion.tokens_out, "latency_s": round(completion.latency_s, 4),
              "cached": completion.cached, "attempts": completion.attempts}
    if completion.failed_attempts:
        record["failed_attempts"] = list(completion.failed_attempts)
    return record


def timeouts_of(calls: Sequence[dict]) -> int:
    """Attempts of these calls that timed out: requests the server may have kept generating (abandoned)."""
    return sum(1 for c in calls for a in c.get("failed_attempts", ()) if a.get("error_class") == ABANDONED)


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

    def __init__(self, fetch: Callable[[list[str]], Awaitable[dict[str, Completion]]], *,
                 propagate: tuple[type[BaseException], ...] = ()):
        self._fetch = fetch
        self._propagate = propagate  # errors of the store itself: given to the callers, not read as "no hit"
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
        except self._propagate as exc:  # the database is down: the chunk fails and is retried, no row is written
            for future in pending.values():
                if not future.done():
                    future.set_exception(exc)
            return
        except Exception as exc:  # noqa: BLE001 - a broken cache (not a broken store) must not fail the run
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
    #: Errors of the infrastructure (database, Redis) that must not become failed rows: they stop the run at
    #: once and are raised by :meth:`run` as they are (the Celery task retries the chunk).
    infrastructure_errors: tuple[type[BaseException], ...] = ()

    def _generate_for(self, job: Job, new_cache: dict[str, Completion], loader: BatchLoader | None,
                      ramp: Ramp | None = None, calls: list[dict] | None = None):
        async def generate(messages, call_key: str) -> Completion:
            sample_key = f"{job.sample_index if job.sample is None else job.sample}:{call_key}"
            key = None
            if loader is not None:
                key = cache_key(base_url=self.base_url, model=self.model, messages=messages,
                                params=self.params or {}, sample_key=sample_key)
                hit = await loader.load(key)
                if hit is not None:
                    completion = Completion(text=hit.text, tokens_in=hit.tokens_in, tokens_out=hit.tokens_out,
                                            latency_s=0.0, attempts=0, cached=True, finish_reason=hit.finish_reason)
                    if calls is not None:
                        calls.append(call_record(call_key, messages, completion))
                    return completion
            if ramp is not None:  # after the cache: a hit makes no request and needs no spacing
                await ramp.wait()
            try:
                completion = await self.client.complete(messages, sample_key=sample_key)
            except RequestFailed as exc:
                if calls is not None:
                    failed = {"call": call_key, "messages": messages, "output": "", "error": str(exc),
                              "error_class": exc.error_class, "attempts": exc.attempts}
                    if exc.failed_attempts:
                        failed["failed_attempts"] = list(exc.failed_attempts)
                    calls.append(failed)
                raise
            if calls is not None:
                calls.append(call_record(call_key, messages, completion))
            if key is not None:
                new_cache[key] = completion
            return completion

        return generate

    async def run(self, jobs: Iterable[Job] | AsyncIterable[Job], *, on_result: Callable[[JobResult], None],
                  stopped: Callable[[], bool] = lambda: False, count: int | None = None) -> None:
        """Run the jobs. ``jobs`` may be an async iterable (jobs planned while the first ones run), then
        ``count`` (an upper bound on their number) sizes the workers and the ramp."""
        loader = (BatchLoader(self.cache_fetch, propagate=self.infrastructure_errors)
                  if self.cache_fetch else None)
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

        fatal = self.infrastructure_errors

        async def worker() -> None:
            async for job in next_jobs():
                if stopped():
                    return
                new_cache: dict[str, Completion] = {}
                calls: list[dict] = []
                generate = self._generate_for(job, new_cache, loader, ramp, calls)
                try:
                    outcome = await self.method.solve(job.shown, job.demos, generate, k=self.k)
                    result = JobResult(job, outcome, attempts=outcome.attempts, new_cache=new_cache, calls=calls)
                except EndpointDown as exc:
                    # The whole run stops. A job whose own requests failed is written as the error it is (its
                    # failed requests count, and a resume retries it); one stopped before any request is left
                    # missing, for a resume.
                    if exc.attempts:
                        last = exc.failed_attempts[-1] if exc.failed_attempts else {}
                        on_result(JobResult(
                            job, None, error=f"{last.get('error') or exc} (attempt {exc.attempts}, then the run "
                                             "stopped: the endpoint kept failing)"[:1000],
                            attempts=sum(c.get("attempts", 0) for c in calls) or exc.attempts, new_cache=new_cache,
                            calls=calls, error_class=last.get("error_class") or exc.error_class,
                            failed_call=calls[-1]["call"] if calls else ""))
                    raise
                except RequestFailed as exc:
                    attempts = sum(c.get("attempts", 0) for c in calls)
                    result = JobResult(job, None, error=str(exc), attempts=attempts or exc.attempts,
                                       new_cache=new_cache, calls=calls, error_class=exc.error_class,
                                       failed_call=calls[-1]["call"] if calls else "")
                except fatal:
                    raise
                except Exception as exc:  # noqa: BLE001 - one bad item must not stop the run
                    result = JobResult(job, None, error=f"{type(exc).__name__}: {exc}"[:1000], new_cache=new_cache,
                                       calls=calls, error_class="other", attempts=sum(c.get("attempts", 0) for c in calls))
                on_result(result)

        tasks = [asyncio.ensure_future(worker()) for _ in range(workers)]
        try:
            done, pending_tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            first = next((t.exception() for t in done if not t.cancelled() and t.exception() is not None), None)
            if isinstance(first, EndpointDown) and pending_tasks:
                # The breaker opened: the other workers see it at their next attempt (a retry's wait wakes on it)
                # and write their failed jobs with the requests they made, as this one did; a little time for it.
                more, pending_tasks = await asyncio.wait(pending_tasks, timeout=BREAKER_GRACE_S)
                done |= more
            # One worker raised (the endpoint is down, or the database / Redis is): the others stop now, their
            # requests in flight are abandoned unwritten, and the error is raised.
            for task in pending_tasks:
                task.cancel()
            if pending_tasks:
                await asyncio.gather(*pending_tasks, return_exceptions=True)
            errors = [t.exception() for t in done if not t.cancelled() and t.exception() is not None]
            if errors:
                raise next((e for e in errors if not isinstance(e, EndpointDown)), errors[0])
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            if feeder is not None:
                if not feeder.done():  # stopped early
                    feeder.cancel()
                    try:
                        await feeder
                    except asyncio.CancelledError:
                        pass
                elif not feeder.cancelled():
                    feeder.result()  # a planning error

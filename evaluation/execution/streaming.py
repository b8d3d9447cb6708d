"""The one request loop of every run: model runs (a chunk of rows) and judge runs (labels) both stream here.

The engine sends the jobs; what arrives is buffered and written by one writer task on the run's database
thread as soon as the write before it is done (so a killed worker loses only the requests in flight, and the
next execution asks only those again), but writes begin at least ``WRITE_SPACING_S`` apart: a write is one
transaction of a few statements whatever its rows, and written back to back, two worker processes at
concurrency 256 made ~200 transactions of ~20 rows a second (PostgreSQL at half a core); at most 20 a second
per process now, with an answer waiting at most that spacing more when answers come that fast; every ``CANCEL_CHECK_S`` the writer asks whether the run was cancelled (no new
request is sent after that). A failed write (the database is down) stops the requests at once instead of
piling up answers; on any error what is already answered is written (whole batches) before the error is
raised again. The client is closed and the thread's database connections are closed on every path.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.db import connections

from evaluation.model_calls.engine import Engine, Job, JobResult

FLUSH_EVERY_S = 0.25  # the writer's longest sleep without an answer arriving
WRITE_SPACING_S = 0.05
CANCEL_CHECK_S = 1.0


@dataclass
class StreamOutcome:
    written: int = 0  # results handed to ``write`` (answers and failures)
    answered: int = 0  # results come back from the engine so far (written or still buffered)
    errors: int = 0  # of which failed for good (no outcome)
    cancelled: bool = False


async def stream_jobs(*, engine: Engine, jobs: Iterable[Job] | AsyncIterable[Job], db: ThreadPoolExecutor,
                      write: Callable[[list[JobResult]], None], is_cancelled: Callable[[], bool],
                      close_client: Callable[[], object], count: int | None = None,
                      outcome: StreamOutcome | None = None,
                      after_last_write: Callable[[], object] | None = None) -> StreamOutcome:
    """Run ``jobs`` through ``engine`` and write their results in batches with ``write`` (called on ``db``).

    ``is_cancelled`` is called on ``db`` too; ``close_client`` returns an awaitable. ``after_last_write`` (if
    given) is called on ``db`` once every result is written and the client is closed, when the stream ended
    without an error, before the thread is closed (a run's status, on the thread that wrote its last rows). The thread pool
    is shut down at the end. Returns (and fills, if given) the outcome."""
    outcome = outcome if outcome is not None else StreamOutcome()
    loop = asyncio.get_running_loop()
    buffer: list[JobResult] = []
    state = {"cancelled": False, "checked": time.monotonic()}
    done = asyncio.Event()
    arrived = asyncio.Event()

    def on_result(result: JobResult) -> None:
        outcome.answered += 1
        buffer.append(result)
        arrived.set()

    async def flush() -> None:
        if buffer:
            batch = buffer[:]
            buffer.clear()
            await loop.run_in_executor(db, write, batch)
            outcome.written += len(batch)
            outcome.errors += sum(1 for r in batch if r.outcome is None)

    async def flusher() -> None:
        last = float("-inf")
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), FLUSH_EVERY_S)
            if buffer and not done.is_set() and (pause := last + WRITE_SPACING_S - time.monotonic()) > 0:
                # Cut short when the stream ends: the last answers are written at once, not after the spacing.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), pause)
            arrived.clear()
            if buffer:  # the spacing runs from the last write, not from a wake-up with nothing to write
                last = time.monotonic()
                await flush()
            if time.monotonic() - state["checked"] >= CANCEL_CHECK_S:
                state["checked"] = time.monotonic()
                state["cancelled"] = await loop.run_in_executor(db, is_cancelled)

    async def wind_up() -> None:
        """Stop the writer, write what is left and close the client, each whatever the one before did; then raise
        the first error."""
        done.set()
        arrived.set()
        errors = []
        for step in (lambda: writer, flush, close_client):
            try:
                await step()
            except BaseException as error:  # noqa: BLE001 - raised below, after the client is closed
                errors.append(error)
        if errors:
            raise errors[0]

    writer = asyncio.create_task(flusher())
    runner = asyncio.create_task(engine.run(jobs, on_result=on_result, stopped=lambda: state["cancelled"],
                                            count=count))
    try:
        await asyncio.wait({runner, writer}, return_when=asyncio.FIRST_COMPLETED)
        if writer.done() and not runner.done():
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
            writer.result()  # raises the write's error
        runner.result()  # raises the engine's error (EndpointDown, an infrastructure error, a planning error)
    except BaseException:
        # Keep what is already answered (whole batches, one transaction each), then raise the first error.
        if not runner.done():
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner
        with contextlib.suppress(BaseException):
            await wind_up()
        raise
    else:
        await wind_up()
        if after_last_write is not None:
            await loop.run_in_executor(db, after_last_write)
    finally:
        close_thread(db)
    outcome.cancelled = state["cancelled"]
    return outcome


def reading_thread(name: str) -> ThreadPoolExecutor:
    """A run's thread for its reads (planning, cache lookups), beside the one ``stream_jobs`` writes on: on the
    writes' thread a read waited behind each write (~0.1 s for a thousand rows) and the requests stalled. Close
    it with ``close_thread``."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-read")


def close_thread(executor: ThreadPoolExecutor) -> None:
    """Close a run thread's database connection on that thread and end it. Queued, then waited for without an
    await (a cancellation must not skip it); after a work item still running (a batch being planned). Work asked
    of the thread after this is refused (RuntimeError; a cache lookup reads it as a miss) instead of opening a
    connection nobody closes."""
    executor.submit(connections.close_all)
    executor.shutdown(wait=True)

"""Execute one chunk of a run: fetch in batch, run the jobs on an event loop, upsert rows while streaming.

Called by the Celery task (and in-process by `evaluate --wait`). Database work runs
on two dedicated threads outside the event loop: one reads (the items, in batches as
the jobs are planned, and the batched cache lookups), the other writes (a bulk upsert
every few hundred milliseconds), so that a read never waits behind a write. Rows are
written with INSERT ... ON CONFLICT (run, item, sample) DO UPDATE, so a chunk
delivered twice never duplicates a row, and a row already done is skipped before any
request is made.
"""
from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections
from django.db.models import BooleanField, Case, Count, ExpressionWrapper, F, Q, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Item
from evaluation.execution.collector import collector_for_a_run
from evaluation.execution.planning import JobPlanner
from evaluation.execution.rows import cache_fetch as _cache_fetch
from evaluation.execution.rows import write_results
from evaluation.execution.streaming import StreamOutcome, close_thread, reading_thread, stream_jobs
from evaluation.model_calls.clients import (
    BuiltinClient,
    CircuitBreaker,
    EndpointDown,
    ModelClient,
    OpenAIChatClient,
    RetryPolicy,
)
from evaluation.model_calls.credentials import url_credentials
from evaluation.model_calls.destinations import UNREACHABLE, DestinationRefused, check_url
from evaluation.model_calls.engine import Engine, Job, JobResult
from evaluation.model_calls.file_limiter import FileLimiter
from evaluation.model_calls.limiter import Limiter, LocalLimiter, RedisLimiter
from evaluation.models import ModelEndpoint, OptionOrder, Result, Run, RunStatus
from evaluation.models.endpoints import destination_policy, key_variable_error
from evaluation.prompting.methods import Completion, get_method

log = logging.getLogger(__name__)

def make_breaker() -> CircuitBreaker:
    """The circuit breaker of a chunk (settings EVALUATION_BREAKER_THRESHOLD, EVALUATION_BREAKER_WINDOW_S)."""
    return CircuitBreaker(threshold=settings.EVALUATION_BREAKER_THRESHOLD, window_s=settings.EVALUATION_BREAKER_WINDOW_S)


@dataclass
class ChunkReport:
    run_id: int
    jobs: int = 0
    written: int = 0
    errors: int = 0
    skipped: int = 0
    taken: int = 0  # items of the run's next chunks taken off the queue (evaluation.execution.continuation)
    cancelled: bool = False
    failed: str = ""  # why the run failed in this chunk (the circuit breaker), else ""
    refreshed: bool = False  # the run's status was refreshed after the chunk's last write


def make_limiter(endpoint: ModelEndpoint) -> Limiter:
    """The shared limiter: Redis when settings.REDIS_URL is set, else slot files (embedded mode)."""
    if endpoint.is_builtin:
        return LocalLimiter(limit=endpoint.max_concurrency)
    if settings.REDIS_URL:
        return RedisLimiter(redis_url=settings.REDIS_URL, key=f"endpoint-{endpoint.pk}", limit=endpoint.max_concurrency,
                            requests_per_minute=endpoint.requests_per_minute,
                            lease_s=settings.EVALUATION_LIMITER_LEASE_S)
    return FileLimiter(directory=Path(settings.EVALUATION_LIMITER_DIR) / f"endpoint-{endpoint.pk}",
                       limit=endpoint.max_concurrency, requests_per_minute=endpoint.requests_per_minute)


def make_client(endpoint: ModelEndpoint, *, seed: int, params: dict | None = None,
                breaker: CircuitBreaker | None = None,
                client_class: type[OpenAIChatClient] = OpenAIChatClient) -> ModelClient:
    """The endpoint's client; ``params`` (the run's, frozen at launch) default to the endpoint's own.
    A judge run asks for its own class (``LogprobChatClient``, which keeps the logprobs) with the same settings."""
    if endpoint.is_builtin:
        return BuiltinClient(name=endpoint.model, seed=seed)
    # Not a setting: each endpoint names its own variable, read from the workers' environment at use,
    # so that the key is never stored (ModelEndpoint.api_key_env).
    api_key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
    return client_class(
        base_url=endpoint.base_url, model=endpoint.model, api_key=api_key,
        params=endpoint.generation_params() if params is None else params,
        timeout_s=endpoint.timeout_s, limiter=make_limiter(endpoint),
        retry=RetryPolicy(max_attempts=endpoint.max_attempts, total_s=endpoint.retry_budget_s),
        max_connections=endpoint.max_concurrency, breaker=breaker,
    )


def endpoint_refusal(endpoint: ModelEndpoint) -> str | None:
    """Why the workers send no request to this endpoint, else None (for one stored before these were refused):
    its base URL carries a credential, its key variable is one the app's own settings (HOME, SECRET_KEY...) or
    not a key variable's name, or its host is, or resolves to, an address endpoints may not reach (settings
    EVALUATION_ENDPOINT_ALLOWED_NETWORKS; said as the launch check says it of an unreachable one)."""
    if endpoint.is_builtin:
        return None
    if url_credentials(endpoint.base_url):
        return "the base URL carries a credential: put the key in an environment variable and name it as the " \
               "endpoint's API key variable"
    if endpoint.api_key_env and (problem := key_variable_error(endpoint.api_key_env)):
        return f"the endpoint's API key variable is refused: {problem}"
    try:
        check_url(endpoint.base_url, destination_policy())
    except DestinationRefused as refused:
        log.warning("endpoint %s refused by the destination policy: %s", endpoint.pk, refused)
        return f"cannot reach {endpoint.base_url}: {UNREACHABLE}"
    return None


def _write(run: Run, results: list[JobResult], model: str, existing: set[tuple[int, int]]) -> None:
    write_results(run, results, model, existing=existing)


def _is_cancelled(run_id: int) -> bool:
    """The run was cancelled, or failed in another chunk: no new requests."""
    return Run.objects.filter(pk=run_id, status__in=[RunStatus.CANCELLED, RunStatus.FAILED]).exists()


def mark_failed(run_id: int, reason: str) -> None:
    """End an active run as failed, with the reason (e.g. the circuit breaker's)."""
    Run.objects.filter(pk=run_id, status__in=[RunStatus.RUNNING, RunStatus.QUEUED]).update(
        status=RunStatus.FAILED, failure_reason=reason[:2000], finished_at=timezone.now())


def rotations_for(*, option_order: str, item_ids: list[int]) -> int:
    """A run's rotations: the largest option count of its items with circular order, else 1."""
    if option_order != OptionOrder.CIRCULAR or not item_ids:
        return 1
    counts = Item.objects.filter(pk__in=item_ids).values_list("options", flat=True)
    return max((len(options) for options in counts), default=1)


def _wanted(run: Run, item_ids: list[int]) -> tuple[list[tuple[int, int]], int, set[tuple[int, int]]]:
    """The (item, sample index) pairs still to do (rows that exist without error are skipped), how many are
    done, and the pairs to do again that have a (failed) row. A circular run has ``samples x rotations`` sample
    indexes per item."""
    done, failed = set(), set()
    rows = Result.objects.filter(run=run)
    # A run without rows (its launch: every chunk's first look) skips the lookup by item: a thousand ids in an IN
    # list cost 10-20 ms of the run's start, against under a millisecond for this one indexed look.
    for item_id, sample_index, ok in rows.filter(item_id__in=item_ids).values_list(
            "item_id", "sample_index", ExpressionWrapper(Q(error=""), output_field=BooleanField())
    ) if item_ids and rows.exists() else ():
        (done if ok else failed).add((item_id, sample_index))
    samples = range(run.rows_per_item)
    if not done:
        return [(i, s) for i in item_ids for s in samples], 0, failed
    return [(i, s) for i in item_ids for s in samples if (i, s) not in done], len(done), failed


#: Jobs are planned (items loaded, shown) on the reading thread in batches while the first requests are
#: already on the wire: the first batch is small, so the run starts after a few ms of planning instead of
#: after all of it; the next ones are larger (one item query per batch: 64 rows a batch cost 41 us a job, a
#: third of the event loop's own CPU per request, on the same interpreter lock).
FIRST_PLAN_BATCH = 64
PLAN_BATCH = 512


def run_event_loop(coroutine):
    """Run a coroutine on uvloop when installed (about half the per-request CPU), else on asyncio; with the
    garbage collector set for a run (evaluation.execution.collector)."""
    with collector_for_a_run():
        try:
            import uvloop
        except ImportError:  # pragma: no cover - uvloop is a dependency; stay usable without it
            return asyncio.run(coroutine)
        return uvloop.run(coroutine)


def mark_started(run_id: int) -> None:
    """A queued run is now running, and a run without a start gets one (launch and resume set it: a run made some
    other way); one statement."""
    Run.objects.filter(pk=run_id).filter(Q(status=RunStatus.QUEUED) | Q(started_at__isnull=True)).update(
        status=Case(When(status=RunStatus.QUEUED, then=Value(RunStatus.RUNNING)), default=F("status")),
        started_at=Coalesce(F("started_at"), Value(timezone.now())))


def refresh_status(run_id: int) -> None:
    """Mark a running run finished once every (item, sample) has a row (done or failed)."""
    run = Run.objects.get(pk=run_id)
    if run.status not in (RunStatus.RUNNING, RunStatus.QUEUED):
        return
    counts = Result.objects.filter(run_id=run_id).aggregate(rows=Count("pk"), errors=Count("pk", filter=~Q(error="")))
    if counts["rows"] >= run.total:
        if counts["rows"] and counts["errors"] >= counts["rows"]:  # not one answer: the run failed
            common = (Result.objects.filter(run_id=run_id).exclude(error="").values("error")
                      .annotate(n=Count("pk")).order_by("-n", "error").first())
            mark_failed(run_id, f"every row failed ({counts['errors']}); the commonest error "
                                f"({common['n']}x): {common['error']}")
            return
        Run.objects.filter(pk=run_id, status__in=[RunStatus.RUNNING, RunStatus.QUEUED]).update(
            status=RunStatus.FINISHED, finished_at=timezone.now()
        )


def execute_chunk(*, run_id: int, item_ids: list[int] | None = None,
                  more: Callable[[], list[int] | None] | None = None) -> ChunkReport:
    """Compute the missing or failed rows of these items of the run (all of the run's items if None), then those
    of the items ``more()`` gives while it gives a list (evaluation.execution.continuation), if given."""
    close_old_connections()
    run = Run.objects.select_related("endpoint").get(pk=run_id)
    report = ChunkReport(run_id=run_id)
    if run.status in (RunStatus.CANCELLED, RunStatus.FINISHED, RunStatus.FAILED):
        report.cancelled = run.status != RunStatus.FINISHED
        return report
    in_run = set(run.item_ids)
    ids = [i for i in (item_ids if item_ids is not None else run.item_ids) if i in in_run]
    wanted, report.skipped, existing = _wanted(run, ids)
    mark_started(run_id)
    if wanted and (refusal := endpoint_refusal(run.endpoint)):
        log.warning("run %s failed: %s", run_id, refusal)
        mark_failed(run_id, refusal)
        report.failed = refusal
        return report
    if wanted:
        try:
            run_event_loop(_execute(run, wanted, report, existing, more))
        except EndpointDown as exc:  # the circuit breaker opened: the run fails with its reason
            log.warning("run %s failed: %s", run_id, exc)
            mark_failed(run_id, str(exc))
            report.failed = str(exc)
            return report
    if not report.refreshed:
        refresh_status(run_id)
    return report


async def _execute(run: Run, wanted: list[tuple[int, int]], report: ChunkReport,
                   existing: set[tuple[int, int]], more: Callable[[], list[int] | None] | None = None) -> None:
    method = get_method(run.method)
    loop = asyncio.get_running_loop()
    db = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"run-{run.pk}-db")  # writes (streaming.stream_jobs)
    reads = reading_thread(f"run-{run.pk}")  # planning and cache lookups
    batches = [wanted[:FIRST_PLAN_BATCH]] + [wanted[i:i + PLAN_BATCH]
                                             for i in range(FIRST_PLAN_BATCH, len(wanted), PLAN_BATCH)]

    # The first batch is planned on the reading thread while the client is built.
    def plan_first() -> tuple[JobPlanner, list[Job]]:
        planner = JobPlanner.for_run(run)
        return planner, planner.jobs(batches[0])

    outcome = StreamOutcome()
    first = loop.run_in_executor(reads, plan_first)
    try:
        await _stream(run, method, first, batches, reads, db, report, outcome, existing, more)
    finally:
        report.written += outcome.written
        report.errors += outcome.errors
        if first.done() and not first.cancelled():
            first.exception()  # retrieved: _stream raised it, or the client could not be built before it was read
        else:
            first.cancel()
        close_thread(reads)
        db.shutdown(wait=True)  # stream_jobs closed it, unless the client could not be built (then it never ran)
    report.cancelled = outcome.cancelled


async def _stream(run: Run, method, first, batches: list[list[tuple[int, int]]], reads: ThreadPoolExecutor,
                  db: ThreadPoolExecutor, report: ChunkReport, outcome: StreamOutcome,
                  existing: set[tuple[int, int]], more: Callable[[], list[int] | None] | None = None) -> None:
    """The chunk's jobs (``first``: the planner and the first batch's jobs, on their way) through the engine, then
    those of the items ``more`` gives (planned on the reading thread while the last jobs run)."""
    # Here, not at the top: it imports redis, which URL loading (services import this module) does not need.
    from evaluation.execution.infrastructure import INFRASTRUCTURE_ERRORS

    endpoint = run.endpoint
    loop = asyncio.get_running_loop()
    wanted_count, in_run = sum(len(batch) for batch in batches), set(run.item_ids)
    ahead = 2 * endpoint.max_concurrency  # jobs not answered yet when the next chunk is taken: ~2 latencies of work

    def next_batches() -> list[list[tuple[int, int]]]:
        while not _is_cancelled(run.pk) and (items := more()) is not None:
            wanted, skipped, failed = _wanted(run, [item for item in items if item in in_run])
            report.taken, report.skipped = report.taken + len(items), report.skipped + skipped
            existing.update(failed)  # only looked up (`in`) by the writing thread
            if wanted:
                return [wanted[i:i + PLAN_BATCH] for i in range(0, len(wanted), PLAN_BATCH)]
        return []

    async def jobs():
        planner, planned = await first
        pending = batches
        while pending:
            for batch in pending:
                planned = planned if planned is not None else await loop.run_in_executor(reads, planner.jobs, batch)
                report.jobs += len(planned)
                for job in planned:
                    yield job
                planned = None
            if more is None:
                return
            while report.jobs - outcome.answered > ahead:  # the next chunk only when this one's jobs run low
                await asyncio.sleep(0.01)
            pending = await loop.run_in_executor(reads, next_batches)

    # The run's parameters, frozen at launch (the endpoint may have been edited since).
    params = run.params if not endpoint.is_builtin else endpoint.generation_params()
    breaker = make_breaker()
    client = make_client(endpoint, seed=run.seed, params=params, breaker=breaker)
    use_cache = endpoint.use_cache and not endpoint.is_builtin

    async def cache_fetch(keys: list[str]) -> dict[str, Completion]:
        return await loop.run_in_executor(reads, _cache_fetch, keys)

    engine = Engine(method=method, client=client, k=run.k, concurrency=endpoint.max_concurrency,
                    base_url=endpoint.base_url, model=endpoint.model, params=params,
                    cache_fetch=cache_fetch if use_cache else None,
                    ramp_spacing_s=0.0 if endpoint.is_builtin else settings.EVALUATION_RAMP_SPACING_S,
                    infrastructure_errors=INFRASTRUCTURE_ERRORS)
    def refresh() -> None:  # on the writing thread, right after the last write (no second pass after the loop)
        refresh_status(run.pk)
        report.refreshed = True

    await stream_jobs(engine=engine, jobs=jobs(), db=db, write=lambda batch: _write(run, batch, endpoint.model, existing),
                      is_cancelled=lambda: _is_cancelled(run.pk), close_client=client.close,
                      count=wanted_count if more is None else None,  # None: as many workers as the concurrency
                      outcome=outcome, after_last_write=refresh)

"""Celery tasks of the evaluation app: they take ids, re-fetch, and are safe to run twice (acks_late).

A chunk that meets a Redis or database error (a restart, a dropped connection) is retried with
exponential backoff and jitter instead of storing failed rows; while it runs, a heartbeat tells the
periodic reconciliation (`evaluation.execution.recovery`) which items it covers and keeps its broker message
from being handed to another worker.
"""
from __future__ import annotations

import logging
import threading
import time

from celery import shared_task
from celery.signals import worker_init, worker_ready, worker_shutdown, worker_shutting_down
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings

from evaluation.execution import chunks as execution
from evaluation.execution import continuation, embedded_workers, heartbeats
from evaluation.execution import recovery as reconcile
from evaluation.execution.infrastructure import INFRASTRUCTURE_ERRORS
from evaluation.execution.judge import execute_judge_run
from evaluation.models import Run
from foundation.process_start import freeze_startup_objects

log = logging.getLogger(__name__)

#: Publishing the retry waits for a restarting Redis (about 20 s) rather than giving up after ~1 s;
#: should it still fail, the reconciliation re-enqueues the chunk's items.
RETRY_PUBLISH_POLICY = {"max_retries": 20, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             autoretry_for=INFRASTRUCTURE_ERRORS, retry_backoff=settings.EVALUATION_CHUNK_RETRY_BACKOFF_S,
             retry_backoff_max=settings.EVALUATION_CHUNK_RETRY_BACKOFF_MAX_S, retry_jitter=True,
             max_retries=settings.EVALUATION_CHUNK_MAX_RETRIES, retry_kwargs={"retry_policy": RETRY_PUBLISH_POLICY})
def run_chunk(self, run_id: int, item_ids: list[int]) -> dict:
    """Compute the missing or failed rows of these items of a run (rows already done are skipped; items
    another live chunk of the run is computing are left to it). A chunk of a run deleted meanwhile is dropped."""
    if not Run.objects.filter(pk=run_id).exists():
        log.warning("run %s no longer exists: its chunk of %d items is dropped", run_id, len(item_ids))
        return {"run": run_id, "jobs": 0, "written": 0, "errors": 0, "claimed": 0, "dropped": True}
    claimed = heartbeats.claim_items(run_id, item_ids)
    if not claimed:
        execution.refresh_status(run_id)
        return {"run": run_id, "jobs": 0, "written": 0, "errors": 0, "claimed": 0}
    hostname = self.request.hostname or ""  # read here: `more` runs on the chunk's reading thread
    with heartbeats.heartbeat(run_id=run_id, item_ids=claimed, task_id=self.request.id or "") as beat:
        try:
            # Goes on with the run's next chunk in the queue, if it is the next message (execution.continuation).
            report = execution.execute_chunk(run_id=run_id, item_ids=claimed,
                                             more=lambda: continuation.take_next_chunk(run_id, beat, hostname))
        except INFRASTRUCTURE_ERRORS as exc:
            taken = [item for item in beat.item_ids if item not in set(item_ids)]
            if not taken:
                raise  # the automatic retry, with this message's items
            # The messages of the chunks it took are gone: the retry names their items too. Published before the
            # heartbeat stops, so that they are never neither queued nor covered.
            raise self.retry(args=(run_id, list(dict.fromkeys([*item_ids, *taken]))), exc=exc, countdown=get_exponential_backoff_interval(
                factor=int(max(1.0, self.retry_backoff)), retries=self.request.retries,
                maximum=int(self.retry_backoff_max), full_jitter=self.retry_jitter), **self.retry_kwargs) from exc
    return {"run": run_id, "jobs": report.jobs, "written": report.written, "errors": report.errors,
            "claimed": len(claimed), "taken": report.taken}


@shared_task(ignore_result=True, expires=settings.EVALUATION_RECONCILE_INTERVAL_S)
def reconcile_runs() -> dict:
    """Re-enqueue the rows of queued/running runs that nothing is computing; finish runs whose rows are all there."""
    report = reconcile.reconcile_runs()
    return {"runs": len(report.runs), "enqueued": report.enqueued}


@worker_init.connect
def import_model_sdk(**_) -> None:
    """Workers import the model SDK when they start (before the pool forks), not when their first run needs it: the
    import takes seconds, which a run's clock should not hold, nor URL loading, which does without. (The ROUGE-L
    score imports nothing: annotation.keyinfo.) Then everything loaded so far is frozen out of the garbage
    collector's walks (foundation.process_start): a full collection no longer stops a run's event loop for tens of
    milliseconds."""
    from evaluation.model_calls.clients import import_sdk

    import_sdk()
    freeze_startup_objects()


@worker_ready.connect
def mark_embedded_worker(**_) -> None:
    """On make run's filesystem broker (no ping), `evaluate --wait` finds this worker by its mark."""
    embedded_workers.mark_running()


@worker_shutdown.connect
def unmark_embedded_worker(**_) -> None:
    embedded_workers.unmark()


@worker_shutting_down.connect
def stop_taking_chunks(sender=None, **_) -> None:
    """A worker told to stop by a signal finishes its running chunks without taking the queued ones, at once (its
    step, execution.continuation.StopTakingChunks, says so too, for every shutdown, but only when the pool stops)."""
    continuation.mark_stopping(str(sender))


@worker_ready.connect
def start_reconcile_ticker(**_) -> None:
    """Workers also ask for the reconciliation every interval (one of them per interval, a Redis key decides),
    so that runs heal where no beat process runs; with beat too, a pass may run twice, which changes nothing."""
    if settings.EVALUATION_RECONCILE_IN_WORKERS and heartbeats.broker_redis() is not None:
        threading.Thread(target=_reconcile_ticker, name="reconcile-ticker", daemon=True).start()


def _reconcile_ticker() -> None:
    interval = float(settings.EVALUATION_RECONCILE_INTERVAL_S)
    client = None
    while True:
        time.sleep(interval)
        try:
            client = client or heartbeats.broker_redis()
            if client.set(f"{heartbeats.PREFIX}:reconcile-asked", 1, nx=True, px=max(100, int(interval * 900))):
                reconcile_runs.delay()
        except Exception as exc:  # noqa: BLE001 - Redis away: ask again next time
            log.warning("could not ask for the reconciliation: %s", exc)
            client = None


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True, autoretry_for=INFRASTRUCTURE_ERRORS,
             retry_backoff=settings.EVALUATION_CHUNK_RETRY_BACKOFF_S,
             retry_backoff_max=settings.EVALUATION_CHUNK_RETRY_BACKOFF_MAX_S, retry_jitter=True,
             max_retries=settings.EVALUATION_CHUNK_MAX_RETRIES, retry_kwargs={"retry_policy": RETRY_PUBLISH_POLICY})
def judge_run_execute(self, judge_run_id: int) -> dict:
    """Compute the labels a judge run still lacks (targets already labelled are skipped), then its counts.

    Like a chunk of a model run it beats (its broker message kept fresh, so a long judge run is never handed
    to a second worker) and is alone: a redelivered copy, a reconciliation or a Resume that finds a live
    execution does nothing, so no request is sent by two executions at once."""
    with heartbeats.sole_execution(heartbeats.judge_run_key(judge_run_id), task_id=self.request.id or "") as mine:
        if not mine:
            return {"judge_run": judge_run_id, "joined": True}
        judge_run = execute_judge_run(judge_run_id=judge_run_id)
    return {"judge_run": judge_run_id, "status": judge_run.status, "scored": judge_run.scored}

"""Runs heal themselves: chunk heartbeats, and a periodic pass that re-enqueues what nothing is working on.

Three things keep a run moving without a manual Resume:

- **Infrastructure errors are retried** (`evaluation.tasks.run_chunk` retries a chunk with backoff on a
  Redis or database error; execution lets them propagate instead of storing failed rows).
- **A killed worker's chunk comes back within a minute.** Chunks are acknowledged late, and the broker
  puts an unacknowledged message back in the queue once it is older than the visibility timeout
  (``CELERY_BROKER_TRANSPORT_OPTIONS``). So that a short timeout is safe for chunks that run longer
  than it, a running chunk's heartbeat renews its message's delivery time (the Redis transport's
  ``unacked_index``) every ``EVALUATION_CHUNK_HEARTBEAT_S``: only a dead worker's message ages.
- **Lost work is re-enqueued.** A Redis restart without persistence loses the queued chunks; a chunk
  whose retry could not be published is gone too. `reconcile_runs` (Celery beat, every
  ``EVALUATION_RECONCILE_INTERVAL_S``) looks at each queued/running run: the items with a missing
  row that no live chunk (heartbeat), queued message or unacknowledged message covers, for
  at least ``EVALUATION_RECONCILE_GRACE_S``, are enqueued again, and only those. A run that no chunk
  ever worked on (as far as this Redis knows) is re-enqueued only when it also wrote no row for
  ``EVALUATION_RECONCILE_STALL_S``. A run computed in-process (``evaluate --wait`` without a worker,
  ``services.run_execute_in_process``) beats like a chunk covering all its items, so it is never taken
  over while its process lives, however slow its requests. A run whose rows
  are all there is marked finished. Re-enqueueing a run that then makes no progress backs off
  exponentially, so a chunk that fails for another reason does not loop.

All state lives in the broker's Redis (the chunk heartbeats share the fate of the messages: a Redis
restart loses both). With another broker (the embedded ``filesystem://`` one), there are no heartbeats
and the pass does nothing.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from evaluation.execution.heartbeats import (
    MAX_BACKOFF_S,
    PREFIX,
    _chunked_key,
    _owner_key,
    _state_key,
    _uncovered_key,
    broker_chunks,
    broker_redis,
    judge_run_key,
    live_chunk_items,
)

log = logging.getLogger(__name__)

# --- the periodic pass ----------------------------------------------------------------------------

@dataclass
class RunCheck:
    run_id: int
    missing: int = 0
    uncovered: int = 0
    enqueued: list[int] = field(default_factory=list)
    finished: bool = False
    note: str = ""


@dataclass
class ReconcileReport:
    runs: list[RunCheck] = field(default_factory=list)
    judge_runs: list[int] = field(default_factory=list)  # judge runs enqueued again

    @property
    def enqueued(self) -> int:
        return sum(len(r.enqueued) for r in self.runs)


def reconcile_runs() -> ReconcileReport:
    """One pass over the queued and running runs (see the module docstring). Safe to run anywhere, any time;
    one pass at a time (a Redis lock)."""
    from evaluation.models import Run, RunStatus

    report = ReconcileReport()
    client = broker_redis()
    if client is None:
        return report
    lock = client.lock(f"{PREFIX}:reconcile-lock", timeout=max(30, 3 * settings.EVALUATION_RECONCILE_INTERVAL_S),
                       blocking_timeout=5)
    if not lock.acquire():  # another pass is running (a pass takes milliseconds; this one is not needed)
        return report
    try:
        runs = list(Run.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).order_by("pk"))
        if runs:
            in_broker = broker_chunks(client)
            for run in runs:
                report.runs.append(_reconcile_run(client, run, in_broker.get(run.pk, set())))
        report.judge_runs = _reconcile_judge_runs(client)
    finally:
        with contextlib.suppress(Exception):
            lock.release()
        client.close()
    for check in report.runs:
        if check.enqueued or check.finished:
            log.info("reconcile run %s: %s", check.run_id, check)
    return report


def absent_item_ids(run) -> list[int]:
    """Items of the run with fewer rows than samples. A failed row counts as there: it is an outcome of the
    run (the run finishes with it; Resume retries it), so the pass never loops on a model that refuses."""
    from evaluation.models import Result

    rows = dict(Result.objects.filter(run=run).values("item_id").annotate(n=Count("pk")).values_list("item_id", "n"))
    per_item = run.rows_per_item
    return [i for i in run.item_ids if rows.get(i, 0) < per_item]


def _reconcile_run(client, run, in_broker: set[int]) -> RunCheck:
    from evaluation.execution import chunks as execution
    from evaluation.execution import queueing
    from evaluation.models import Result

    check = RunCheck(run_id=run.pk)
    stats = Result.objects.filter(run=run).aggregate(rows=Count("pk"), last=Max("updated_at"))
    if stats["rows"] >= run.total:
        execution.refresh_status(run.pk)
        check.finished = True
        client.delete(_uncovered_key(run.pk), _state_key(run.pk), _chunked_key(run.pk))
        return check
    missing = absent_item_ids(run)
    check.missing = len(missing)
    live = live_chunk_items(client, run.pk)
    covered = live | in_broker
    uncovered = [i for i in missing if i not in covered]
    check.uncovered = len(uncovered)
    now = time.time()
    key = _uncovered_key(run.pk)
    seen = {int(k): float(v) for k, v in client.hgetall(key).items()}
    # Items covered again (or done) are forgotten; newly uncovered ones are remembered with the time.
    gone = [i for i in seen if i not in set(uncovered)]
    pipe = client.pipeline()
    if gone:
        pipe.hdel(key, *gone)
    new = {i: now for i in uncovered if i not in seen}
    if new:
        pipe.hset(key, mapping=new)
    pipe.expire(key, 86400)
    pipe.execute()
    grace = float(settings.EVALUATION_RECONCILE_GRACE_S)
    due = [i for i in uncovered if now - seen.get(i, now) >= grace]
    if not due:
        return check
    if not covered and not client.exists(_chunked_key(run.pk)):
        # Nothing of this run is alive anywhere and no chunk ever ran since the broker's Redis started: it may
        # be computed in-process; wait for a stall.
        last = max(filter(None, [stats["last"], run.started_at])) if stats["last"] or run.started_at else run.created_at
        if (timezone.now() - last).total_seconds() < float(settings.EVALUATION_RECONCILE_STALL_S):
            check.note = "no chunk, but progress"
            return check
    state = {k.decode(): float(v) for k, v in client.hgetall(_state_key(run.pk)).items()}
    attempts = int(state.get("attempts", 0))
    if stats["rows"] > state.get("rows", -1):
        attempts = 0  # progress since the last re-enqueue
    wait = min(MAX_BACKOFF_S, grace * (2 ** attempts)) if attempts else 0.0
    if now - state.get("enqueued_at", 0.0) < wait:
        check.note = f"backing off ({attempts} re-enqueues without progress)"
        return check
    queueing.chunks_enqueue(run, due)  # outside a transaction: published at once
    check.enqueued = due
    client.hdel(key, *due)
    client.hset(_state_key(run.pk), mapping={"attempts": attempts + 1, "rows": stats["rows"], "enqueued_at": now})
    client.expire(_state_key(run.pk), 86400)
    log.warning("run %s: re-enqueued %d item(s) that nothing was computing (%d missing)", run.pk, len(due),
                len(missing))
    return check


def _reconcile_judge_runs(client) -> list[int]:
    """Judge runs heal like model runs: a queued or running judge run that no live execution has held for the
    grace period (a killed worker, a lost message) is enqueued again, with the same backoff. The new execution
    claims the run (SoleExecution) and computes only the targets without a label."""
    from evaluation.execution import queueing
    from evaluation.models import RunStatus
    from evaluation.models.judge import JudgeRun

    enqueued = []
    grace = float(settings.EVALUATION_RECONCILE_GRACE_S)
    now = time.time()
    for judge_run in JudgeRun.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).order_by("pk"):
        name = judge_run_key(judge_run.pk)
        state_key = _state_key(name)
        if client.exists(_owner_key(name)):
            client.delete(state_key)
            continue
        state = {k.decode(): float(v) for k, v in client.hgetall(state_key).items()}
        first_seen = state.get("unowned_since")
        if first_seen is None:
            client.hset(state_key, mapping={"unowned_since": now})
            client.expire(state_key, 86400)
            continue
        attempts = int(state.get("attempts", 0))
        wait = grace * (2 ** attempts) if attempts else grace
        if now - max(first_seen, state.get("enqueued_at", 0.0)) < min(MAX_BACKOFF_S, wait):
            continue
        queueing.judge_run_enqueue(judge_run)
        client.hset(state_key, mapping={"attempts": attempts + 1, "enqueued_at": now})
        enqueued.append(judge_run.pk)
        log.warning("judge run %s: no live execution for %.0f s, enqueued again", judge_run.pk, now - first_seen)
    return enqueued

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

import base64
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

log = logging.getLogger(__name__)

PREFIX = "detectbench:evaluation"
RUN_CHUNK_TASK = "evaluation.tasks.run_chunk"
#: Re-enqueues without progress back off up to this long between attempts.
MAX_BACKOFF_S = 600.0


def broker_redis():
    """A client of the broker's Redis, or None when the broker is not Redis."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    import redis

    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)


def _heartbeat_s() -> float:
    return float(settings.EVALUATION_CHUNK_HEARTBEAT_S)


def _chunk_key(token: str) -> str:
    return f"{PREFIX}:chunk:{token}"


def _run_chunks_key(run_id: int) -> str:
    return f"{PREFIX}:run:{run_id}:chunks"


def _uncovered_key(run_id: int) -> str:
    return f"{PREFIX}:run:{run_id}:uncovered"


def _chunked_key(run_id: int) -> str:
    """Set by every heartbeat (of a chunk task or of an in-process run): something worked on this run since the
    broker's Redis started, so its uncovered items are due after the grace, not only after a stall."""
    return f"{PREFIX}:run:{run_id}:chunked"


def _state_key(run_id: int) -> str:
    return f"{PREFIX}:run:{run_id}:reconcile"


# --- broker messages ------------------------------------------------------------------------------

def _transport_option(name: str, default: str) -> str:
    return str((settings.CELERY_BROKER_TRANSPORT_OPTIONS or {}).get(name, default))


def chunk_of_message(raw: bytes | str | dict) -> tuple[str, int, list[int]] | None:
    """(task id, run id, item ids) of a run_chunk message as the Redis transport stores it, else None."""
    try:
        message = json.loads(raw) if not isinstance(raw, dict) else raw
        headers = message.get("headers") or {}
        if headers.get("task") != RUN_CHUNK_TASK:
            return None
        body = message["body"]
        if (message.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return str(headers.get("id", "")), int(args[0]), [int(i) for i in args[1]]
    except (ValueError, TypeError, KeyError, IndexError):
        return None


def _queue_keys(client) -> list[str]:
    """The Redis lists of the queues run_chunk may wait in (every priority step of each)."""
    from celery import current_app as app

    names = set(app.amqp.queues) or {app.conf.task_default_queue}
    sep = _transport_option("sep", "\x06\x16")
    keys = []
    for name in names:
        keys.append(name)
        keys.extend(f"{name}{sep}{step}" for step in (3, 6, 9))
    prefix = _transport_option("global_keyprefix", "")
    return [prefix + key for key in keys]


def broker_chunks(client) -> dict[int, set[int]]:
    """Items of each run that a run_chunk message covers: waiting in a queue, or delivered and not yet
    acknowledged (running, waiting for a retry's countdown, or a dead worker's, which comes back after
    the visibility timeout)."""
    covered: dict[int, set[int]] = {}
    raws: list[bytes] = []
    for key in _queue_keys(client):
        raws.extend(client.lrange(key, 0, -1))
    prefix = _transport_option("global_keyprefix", "")
    for value in client.hvals(prefix + _transport_option("unacked_key", "unacked")):
        try:
            raws.append(json.loads(value)[0])
        except (ValueError, TypeError, IndexError):
            continue
    for raw in raws:
        found = chunk_of_message(raw)
        if found:
            covered.setdefault(found[1], set()).update(found[2])
    return covered


def _renew_delivery(client, task_id: str) -> int:
    """Reset the delivery time of this task's unacknowledged message(s), so that the visibility timeout
    counts from the last heartbeat, not from the delivery. Returns how many were renewed."""
    prefix = _transport_option("global_keyprefix", "")
    unacked = prefix + _transport_option("unacked_key", "unacked")
    index = prefix + _transport_option("unacked_index_key", "unacked_index")
    tags = []
    for tag, value in client.hscan_iter(unacked):
        try:
            found = chunk_of_message(json.loads(value)[0])
        except (ValueError, TypeError, IndexError):
            continue
        if found and found[0] == task_id:
            tags.append(tag)
    if tags:
        client.zadd(index, {tag: time.time() for tag in tags}, xx=True)
    return len(tags)


# --- chunk heartbeats -----------------------------------------------------------------------------

def live_chunk_items(client, run_id: int, *, fresh_s: float | None = None) -> set[int]:
    """Items covered by the live chunks of a run: heartbeat not expired, or with ``fresh_s``, written within
    that many seconds (a chunk deciding what to leave to others trusts only a recent beat, so that a worker
    killed a moment ago does not keep its items from a Resume)."""
    tokens = [t.decode() if isinstance(t, bytes) else t for t in client.smembers(_run_chunks_key(run_id))]
    if not tokens:
        return set()
    items: set[int] = set()
    gone = []
    now = time.time()
    for token, value in zip(tokens, client.mget([_chunk_key(t) for t in tokens])):
        if value is None:
            gone.append(token)
            continue
        beat = json.loads(value)
        if fresh_s is None or now - beat.get("at", now) <= fresh_s:
            items.update(beat["items"])
    if gone:
        client.srem(_run_chunks_key(run_id), *gone)
    return items


@dataclass
class ChunkHeartbeat:
    """While a chunk runs: a heartbeat key naming its items, and its broker message kept fresh."""
    run_id: int
    item_ids: list[int]
    task_id: str = ""
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    beats: int = 0
    renewed: int = 0

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = broker_redis()

    def beat(self) -> None:
        client = self._client
        ttl = max(1, int(round(4 * _heartbeat_s())))
        pipe = client.pipeline()
        pipe.set(_chunk_key(self.token), json.dumps({"run": self.run_id, "items": self.item_ids, "at": time.time()}),
                 ex=ttl)
        pipe.sadd(_run_chunks_key(self.run_id), self.token)
        pipe.expire(_run_chunks_key(self.run_id), 86400)
        pipe.set(_chunked_key(self.run_id), 1, ex=86400)
        pipe.execute()
        if self.task_id:
            self.renewed += _renew_delivery(client, self.task_id)
        self.beats += 1

    def _loop(self) -> None:
        while not self._stop.wait(_heartbeat_s()):
            self._safe_beat()

    def _safe_beat(self) -> None:
        try:
            self.beat()
        except Exception as exc:  # noqa: BLE001 - Redis away: the next beat writes it again
            log.warning("chunk heartbeat of run %s failed: %s", self.run_id, exc)

    def start(self) -> ChunkHeartbeat:
        if self._client is None:
            return self
        self._safe_beat()
        self._thread = threading.Thread(target=self._loop, name=f"run-{self.run_id}-heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._client is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self._client.delete(_chunk_key(self.token))
            self._client.srem(_run_chunks_key(self.run_id), self.token)
        except Exception as exc:  # noqa: BLE001 - the key expires by itself
            log.warning("could not clear the heartbeat of run %s: %s", self.run_id, exc)
        self._client.close()


def claim_items(run_id: int, item_ids: list[int]) -> list[int]:
    """The items of a chunk that no other live chunk of the run is computing (a redelivered or re-enqueued
    copy of a chunk that is still running does nothing twice). Without Redis, or if it fails, all of them."""
    client = broker_redis()
    if client is None:
        return list(item_ids)
    try:
        busy = live_chunk_items(client, run_id, fresh_s=2 * _heartbeat_s() + 1)
    except Exception as exc:  # noqa: BLE001 - better twice than never
        log.warning("could not read the live chunks of run %s: %s", run_id, exc)
        return list(item_ids)
    finally:
        client.close()
    return [i for i in item_ids if i not in busy]


@contextlib.contextmanager
def heartbeat(*, run_id: int, item_ids: list[int], task_id: str = "") -> Iterator[ChunkHeartbeat]:
    beat = ChunkHeartbeat(run_id=run_id, item_ids=list(item_ids), task_id=task_id).start()
    try:
        yield beat
    finally:
        beat.stop()


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
        if not runs:
            return report
        in_broker = broker_chunks(client)
        for run in runs:
            report.runs.append(_reconcile_run(client, run, in_broker.get(run.pk, set())))
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

"""A running chunk goes on with the next chunk of its run waiting in the broker's queue, instead of ending.

A run is split into chunks, a few per worker process (evaluation.execution.queueing). When a process ended one
chunk and took the next from the queue, its requests stopped for about 0.15 s: the last answers came in (one
latency with fewer and fewer requests in flight), the rows were written, the task ended, and the next task read
its rows, planned its first jobs and built a client before its first request. Two processes at concurrency 256
against a 50 ms model lost about a tenth of a 12,000-request run there (issue 23, point 3).

So a chunk whose jobs are about to run out takes its run's next chunk message off the queue itself, and plans
its jobs while the last ones of its own chunk are still on the wire: no drain, no new task, no new client. The
other process's message stays where it is unless it is the next one too, so both processes take the chunks in
the broker's order, as Celery would have handed them out.

Only the message the broker would deliver next is taken (the tail of the first non-empty queue list, in the
order the Redis transport's BRPOP reads them), only a chunk of the same run, and only a plain one (not a retry,
nor one with an ETA or an expiry, whose timing or count the broker and Celery keep): other work waiting in the
queue is never passed over. Removing it and naming its items in the taking chunk's heartbeat are one step (a Lua
script, ``ChunkHeartbeat.take_over``), done only if it is still the next message: if a worker or another chunk
took it meanwhile nothing happens, and at no instant is an item neither queued nor covered (the reconciliation
re-enqueues only uncovered items). If the taking process dies, its heartbeat expires and the reconciliation
queues the missing items again, as for any dead chunk; if the task fails and is retried, its retry names the
items it took (evaluation.tasks.run_chunk). Items a live chunk is computing (a copy queued again by a
reconciliation, or a dead worker's message put back by the broker, say), the taking chunk itself included, are
left to it. Without Redis as the broker (the embedded ``filesystem://`` one) nothing is taken.
"""
from __future__ import annotations

import json
import logging
import threading

from celery import bootsteps

from evaluation.execution.heartbeats import (
    PREFIX,
    ChunkHeartbeat,
    _heartbeat_s,
    broker_redis,
    chunk_of_message,
    live_chunk_items,
    queue_keys_in_order,
)

log = logging.getLogger(__name__)


def _plain(message: dict) -> bool:
    """A first delivery, due now: not a retry, no ETA, no expiry."""
    headers = message.get("headers") or {}
    return not headers.get("retries") and headers.get("eta") is None and headers.get("expires") is None


def _stopping_key(hostname: str) -> str:
    return f"{PREFIX}:stopping:{hostname}"


def mark_stopping(hostname: str, stopping: bool = True, wait_s: float = 2.0) -> None:
    """A worker shutting down (a warm shutdown waits for the tasks it runs): its chunks take nothing more from the
    queue, so it waits for their own chunk only, as before they could take others. ``stopping=False``: it started.
    Written by a thread, waited for at most ``wait_s`` (it runs in a signal handler: an unreachable Redis must not
    hold the shutdown)."""
    client = broker_redis()
    if client is None:
        return

    def write() -> None:
        try:
            if stopping:
                client.set(_stopping_key(hostname), 1, ex=86400)
            else:
                client.delete(_stopping_key(hostname))
        except Exception as exc:  # noqa: BLE001 - Redis away: nothing is taken without it either
            log.warning("could not mark worker %s as %s: %s", hostname, "stopping" if stopping else "started", exc)
        finally:
            client.close()

    writer = threading.Thread(target=write, name="mark-stopping", daemon=True)
    writer.start()
    writer.join(wait_s)


class StopTakingChunks(bootsteps.StartStopStep):
    """A step of the worker (detectbench_web/celery.py), started after its pool and so stopped before the pool waits
    for the running tasks: on every shutdown (a signal, `celery control shutdown`) the running chunks stop taking the
    queued ones. Started, it lets the worker's chunks take them again (a worker restarted under the same name)."""

    requires = {"celery.worker.components:Pool"}

    def start(self, worker) -> None:
        mark_stopping(worker.hostname, stopping=False)

    def stop(self, worker) -> None:
        mark_stopping(worker.hostname)


def take_next_chunk(run_id: int, beat: ChunkHeartbeat, hostname: str = "") -> list[int] | None:
    """Take the next chunk of this run off the broker's queue, if it is the next message of all: its items that no
    live chunk is computing, now named by ``beat``. None when there is nothing to take (the queue is empty, its
    next message is other work, a worker took it first, or ``hostname``, the worker running the chunk, is shutting
    down); possibly an empty list when every item of the chunk taken is being computed already (ask again)."""
    client = beat.client
    if client is None:
        return None
    try:
        if hostname and client.exists(_stopping_key(hostname)):
            return None
        for key in queue_keys_in_order():
            raw = client.lindex(key, -1)
            if raw is None:
                continue  # an empty list: BRPOP would look at the next one
            try:
                message = json.loads(raw)
            except ValueError:
                return None  # unreadable: not a chunk of this run, it goes first
            found = chunk_of_message(message) if isinstance(message, dict) else None
            if found is None or found[1] != run_id or not _plain(message):
                return None  # the next message is other work: it goes first
            # Its own items too: a message put back in the queue (a dead worker's, restored by the broker) may name
            # items this chunk is computing or has computed (their rows not all written yet).
            busy = live_chunk_items(client, run_id, fresh_s=2 * _heartbeat_s() + 1) | set(beat.item_ids)
            added = beat.take_over(key, raw, [item for item in found[2] if item not in busy])
            if added is None:  # a worker or another chunk took it meanwhile
                return None
            log.info("run %s: a running chunk took the next chunk (task %s, %d items, %d of them busy elsewhere)",
                     run_id, found[0], len(found[2]), len(found[2]) - len(added))
            return added
    except Exception as exc:  # noqa: BLE001 - Redis unreachable: the chunk ends, the queued ones run as tasks
        log.warning("run %s: could not look for its next chunk: %s", run_id, exc)
    return None

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
order the Redis transport's BRPOP reads them), and only when it is a chunk of the same run: another run's work
waiting in the queue is never passed over. Removing it is one ``LREM``: if a worker took it meanwhile, nothing is
removed and nothing is taken. Its items are named by the taking chunk's heartbeat *before* the message goes, so
at no instant is an item neither queued nor covered (the reconciliation re-enqueues only uncovered items): if
the taking process dies, its heartbeat expires and the reconciliation queues the items again, as for any dead
chunk. Items a live chunk is computing (a copy queued again by a reconciliation, or a dead worker's message
put back by the broker, say), the taking chunk itself included, are left to it.
Without Redis as the broker (the embedded ``filesystem://`` one) nothing is taken.
"""
from __future__ import annotations

import logging

from evaluation.execution.heartbeats import (
    ChunkHeartbeat,
    _heartbeat_s,
    _transport_option,
    chunk_of_message,
    live_chunk_items,
)

log = logging.getLogger(__name__)

#: The Redis transport's priority steps (kombu's default): its BRPOP reads the queue's list, then each step's.
PRIORITY_STEPS = (0, 3, 6, 9)


def queue_keys_in_order() -> list[str]:
    """The Redis lists run_chunk may wait in, in the order a worker's BRPOP takes from them."""
    from celery import current_app as app

    names = sorted(set(app.amqp.queues) or {app.conf.task_default_queue})
    sep = _transport_option("sep", "\x06\x16")
    prefix = _transport_option("global_keyprefix", "")
    return [prefix + (name if not step else f"{name}{sep}{step}") for step in PRIORITY_STEPS for name in names]


def take_next_chunk(run_id: int, beat: ChunkHeartbeat) -> list[int] | None:
    """Take the next chunk of this run off the broker's queue, if it is the next message of all: its items that no
    other live chunk is computing, now covered by ``beat``. None when there is nothing to take (the queue is
    empty, its next message is not a chunk of this run, or a worker took it first); possibly an empty list when
    every item of the chunk taken is being computed elsewhere (ask again)."""
    client = beat.client
    if client is None:
        return None
    try:
        for key in queue_keys_in_order():
            raw = client.lindex(key, -1)
            if raw is None:
                continue  # an empty list: BRPOP would look at the next one
            found = chunk_of_message(raw)
            if found is None or found[1] != run_id:
                return None  # the next message is other work: it goes first
            # Its own items too: a message put back in the queue (a dead worker's, restored by the broker) may name
            # items this chunk is computing or has computed (their rows not all written yet).
            busy = live_chunk_items(client, run_id, fresh_s=2 * _heartbeat_s() + 1) | set(beat.item_ids)
            items = [item for item in found[2] if item not in busy]
            added = beat.cover(items)  # named by the heartbeat before the message leaves the queue
            if client.lrem(key, -1, raw) != 1:  # a worker took it meanwhile
                beat.uncover(added)
                return None
            log.info("run %s: a running chunk took the next chunk (task %s, %d items, %d of them busy elsewhere)",
                     run_id, found[0], len(found[2]), len(found[2]) - len(items))
            return items
    except Exception as exc:  # noqa: BLE001 - Redis unreachable: the chunk ends, the queued ones run as tasks
        log.warning("run %s: could not look for its next chunk: %s", run_id, exc)
    return None

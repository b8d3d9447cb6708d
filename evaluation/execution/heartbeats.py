"""Heartbeats of live work in the broker's Redis: which chunks of a run are being computed (and their broker
messages kept fresh), and executions that must be alone (a judge run). The periodic pass that acts on them is
``evaluation.execution.recovery``."""
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

    # driver_info=None: no CLIENT SETINFO per new connection (two round trips and a 2-4 ms lookup of redis-py's version)
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2, driver_info=None)


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


#: The Redis transport's priority steps (kombu's default, unless the transport options set others).
PRIORITY_STEPS = (0, 3, 6, 9)


def queue_keys_in_order() -> list[str]:
    """The Redis lists run_chunk may wait in (every priority step of each queue), in the order a worker's BRPOP
    takes from them: each queue's own list, then each step's."""
    from celery import current_app as app

    names = sorted(set(app.amqp.queues) or {app.conf.task_default_queue})
    steps = (settings.CELERY_BROKER_TRANSPORT_OPTIONS or {}).get("priority_steps", PRIORITY_STEPS)
    sep = _transport_option("sep", "\x06\x16")
    prefix = _transport_option("global_keyprefix", "")
    return [prefix + (name if not step else f"{name}{sep}{step}") for step in steps for name in names]


def broker_chunks(client) -> dict[int, set[int]]:
    """Items of each run that a run_chunk message covers: waiting in a queue, or delivered and not yet
    acknowledged (running, waiting for a retry's countdown, or a dead worker's, which comes back after
    the visibility timeout)."""
    covered: dict[int, set[int]] = {}
    raws: list[bytes] = []
    for key in queue_keys_in_order():
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


def task_id_of_message(raw: bytes | str | dict) -> str:
    """The task id of any task message as the Redis transport stores it ('' when unreadable)."""
    try:
        message = json.loads(raw) if not isinstance(raw, dict) else raw
        return str((message.get("headers") or {}).get("id", ""))
    except (ValueError, TypeError, AttributeError):
        return ""


def _renew_delivery(client, task_id: str) -> int:
    """Reset the delivery time of this task's unacknowledged message(s) (a chunk or a judge run), so that the
    visibility timeout counts from the last heartbeat, not from the delivery. Returns how many were renewed."""
    prefix = _transport_option("global_keyprefix", "")
    unacked = prefix + _transport_option("unacked_key", "unacked")
    index = prefix + _transport_option("unacked_index_key", "unacked_index")
    tags = []
    for tag, value in client.hscan_iter(unacked):
        try:
            found = task_id_of_message(json.loads(value)[0])
        except (ValueError, TypeError, IndexError):
            continue
        if found and found == task_id:
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


#: The message is removed only if it is still the queue's next one (its tail), and then the chunk's heartbeat names
#: its items, in the same step: no worker can take it meanwhile, and its items are never neither queued nor covered.
#: Run twice (redis-py sends a command again when its reply was lost), the second run finds its own heartbeat written
#: (the payload holds the time it was made: no other write has it) and says so instead of "not taken".
_TAKE_OVER = """
if redis.call('GET', KEYS[2]) == ARGV[2] then return 1 end
if redis.call('LINDEX', KEYS[1], -1) ~= ARGV[1] then return 0 end
if redis.call('LREM', KEYS[1], -1, ARGV[1]) ~= 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'EX', tonumber(ARGV[3]))
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('EXPIRE', KEYS[3], 86400)
return 1
"""


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
        # Held while the item list is read and written to Redis: a beat never writes back a list older than a
        # take-over's (the beating thread and the chunk's reading thread both write it).
        self._lock = threading.Lock()

    @property
    def client(self):
        """The heartbeat's client of the broker's Redis (None when the broker is not Redis)."""
        return self._client

    def beat(self) -> None:
        self._write()
        if self.task_id:
            self.renewed += _renew_delivery(self._client, self.task_id)
        self.beats += 1

    def _write(self) -> None:
        ttl = max(1, int(round(4 * _heartbeat_s())))
        with self._lock:
            pipe = self._client.pipeline()
            pipe.set(_chunk_key(self.token), self._payload(self.item_ids), ex=ttl)
            pipe.sadd(_run_chunks_key(self.run_id), self.token)
            pipe.expire(_run_chunks_key(self.run_id), 86400)
            pipe.set(_chunked_key(self.run_id), 1, ex=86400)
            pipe.execute()

    def _payload(self, item_ids: list[int]) -> str:
        return json.dumps({"run": self.run_id, "items": item_ids, "at": time.time()})

    def take_over(self, queue_key: str, message, items: list[int]) -> list[int] | None:
        """Remove ``message`` from the tail of ``queue_key`` and name ``items`` in this heartbeat, in one step (a
        Lua script): nothing is done unless the message is still the queue's next one. The items added (those not
        named already), or None when the message was no longer there (a worker or another chunk took it)."""
        ttl = max(1, int(round(4 * _heartbeat_s())))
        with self._lock:
            held = set(self.item_ids)
            added = [item for item in dict.fromkeys(items) if item not in held]
            named, payload = self.item_ids + added, self._payload(self.item_ids + added)
            try:
                done = self._client.eval(_TAKE_OVER, 3, queue_key, _chunk_key(self.token),
                                         _run_chunks_key(self.run_id), message, payload, ttl, self.token)
            except Exception:
                # No answer: if the script ran, its heartbeat is there, and the items are this chunk's.
                if self._client.get(_chunk_key(self.token)) != payload.encode():
                    raise
                done = 1
            if not done:
                return None
            self.item_ids = named  # a new list: the heartbeat is written with it from now on
        return added

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


# --- executions that must be alone (judge runs) ----------------------------------------------------

def _owner_key(name: str) -> str:
    return f"{PREFIX}:owner:{name}"


#: Deletes the owner key only if it still holds this execution's token (never another's).
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
#: Renews the owner key's expiry only if it still holds this execution's token.
_RENEW = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
          "else return 0 end")


class SoleExecution:
    """The one live execution of a whole unit of work (a judge run): an owner key set only if absent (SET NX),
    renewed by a heartbeat thread together with the broker message's delivery time, deleted at the end.

    A redelivered message, a reconciliation or a Resume that arrives while the owner lives finds the key and
    does nothing, so no request is sent twice by two executions; a killed owner's key expires after a few
    heartbeats, and the next execution takes over. Without Redis (the embedded broker) every execution runs."""

    def __init__(self, name: str, *, task_id: str = ""):
        self.name, self.task_id = name, task_id
        self.token = uuid.uuid4().hex
        self.owned = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = broker_redis()

    @property
    def _ttl_ms(self) -> int:
        return max(1000, int(4 * _heartbeat_s() * 1000))

    def acquire(self) -> bool:
        if self._client is None:
            self.owned = True
            return True
        self.owned = bool(self._client.set(_owner_key(self.name), self.token, nx=True, px=self._ttl_ms))
        if self.owned:
            self._client.set(_chunked_key(self.name), 1, ex=86400)
            self._thread = threading.Thread(target=self._loop, name=f"{self.name}-heartbeat", daemon=True)
            self._thread.start()
        return self.owned

    def _loop(self) -> None:
        while not self._stop.wait(_heartbeat_s()):
            try:
                self._client.eval(_RENEW, 1, _owner_key(self.name), self.token, self._ttl_ms)
                if self.task_id:
                    _renew_delivery(self._client, self.task_id)
            except Exception as exc:  # noqa: BLE001 - Redis away: the next beat tries again
                log.warning("heartbeat of %s failed: %s", self.name, exc)

    def release(self) -> None:
        if self._client is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.owned:
            with contextlib.suppress(Exception):
                self._client.eval(_RELEASE, 1, _owner_key(self.name), self.token)
        self._client.close()


@contextlib.contextmanager
def sole_execution(name: str, *, task_id: str = "") -> Iterator[bool]:
    """``with sole_execution("judge-run-7", task_id=...) as mine:`` — ``mine`` is False when another live
    execution holds it (then do nothing)."""
    execution = SoleExecution(name, task_id=task_id)
    try:
        yield execution.acquire()
    finally:
        execution.release()


def execution_alive(name: str) -> bool:
    """Whether a live execution holds ``name`` (False without Redis, or when Redis cannot say)."""
    client = broker_redis()
    if client is None:
        return False
    try:
        return bool(client.exists(_owner_key(name)))
    except Exception:  # noqa: BLE001
        return False
    finally:
        client.close()


def judge_run_key(judge_run_id: int) -> str:
    return f"judge-run-{judge_run_id}"

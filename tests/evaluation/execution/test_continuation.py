"""A running chunk goes on with its run's next chunk in the broker's queue (issue 23, point 3): it takes only the
message a worker would take next, only of its own run, names its items in its heartbeat in the same step as the
message leaves the queue, never takes what a worker took first, takes more only when its own jobs run low, and
nothing once its worker is shutting down. Real Redis broker, real Celery messages and real worker processes."""
import signal
import threading
import time
import types

import pytest
import redis
from celery import current_app
from celery.utils.nodenames import host_format
from django.test import override_settings

from annotation.models import Item
from evaluation.execution import chunks, continuation, heartbeats
from evaluation.models import Result, Run, RunStatus
from evaluation.services import runs as services
from evaluation.tasks import run_chunk
from tests.conftest import start_celery_worker, subprocess_env
from tests.support.faults import (
    assert_exactly_one_result_each_and_none_failed,
    received_count,
    terminate_other_connections,
    wait_for,
)
from tests.support.items import import_items
from tests.support.model_server import ModelServer

fast = pytest.mark.django_db


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=20)
    return list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))


def a_run(items) -> Run:
    endpoint = services.endpoint_for_cli(builtin="first-option")
    return services.run_launch(endpoint=endpoint, method="naive", ids=items, chunk_size=5, enqueue=False)


def queued(broker) -> list[tuple[int, list[int]]]:
    """The run_chunk messages in the queue, the next one a worker takes first."""
    raws = [raw for key in heartbeats.queue_keys_in_order() for raw in reversed(broker.lrange(key, 0, -1))]
    return [(found[1], found[2]) for found in map(heartbeats.chunk_of_message, raws) if found]


@pytest.fixture
def beat_of(broker):
    beats = []

    def make(run, item_ids):
        beats.append(heartbeats.ChunkHeartbeat(run_id=run.pk, item_ids=list(item_ids)).start())
        return beats[-1]
    yield make
    for beat in beats:
        beat.stop()


@fast
def test_it_takes_the_message_a_worker_would_take_next_and_covers_its_items_first(items, broker, beat_of):
    run = a_run(items)
    for chunk in (items[:3], items[3:6], items[6:9]):
        run_chunk.delay(run.pk, chunk)
    with current_app.connection_for_read() as connection:  # what a worker's consumer gets: the first published
        message = connection.default_channel.basic_get(current_app.conf.task_default_queue)
        assert message.headers["task"] == "evaluation.tasks.run_chunk" and message.decode()[0] == [run.pk, items[:3]]
        message.ack()
    beat = beat_of(run, items[10:12])
    assert continuation.take_next_chunk(run.pk, beat) == items[3:6]
    assert beat.item_ids == items[10:12] + items[3:6]
    assert heartbeats.live_chunk_items(broker, run.pk) == set(items[10:12] + items[3:6])  # written at once
    assert queued(broker) == [(run.pk, items[6:9])]
    assert continuation.take_next_chunk(run.pk, beat) == items[6:9]
    assert queued(broker) == [] and continuation.take_next_chunk(run.pk, beat) is None  # nothing left


@fast
def test_another_run_s_message_next_in_line_is_never_passed_over(items, broker, beat_of):
    first, other = a_run(items), a_run(items)
    run_chunk.delay(other.pk, items[:3])
    run_chunk.delay(first.pk, items[3:6])
    beat = beat_of(first, items[10:12])
    assert continuation.take_next_chunk(first.pk, beat) is None
    assert queued(broker) == [(other.pk, items[:3]), (first.pk, items[3:6])]  # both still there, in order
    assert beat.item_ids == items[10:12]


@fast
def test_items_another_live_chunk_computes_are_left_to_it(items, broker, beat_of):
    run = a_run(items)
    beat_of(run, items[:2])  # another live chunk (a copy queued again by a reconciliation, say) computes two
    run_chunk.delay(run.pk, items[:5])
    beat = beat_of(run, items[10:12])
    assert continuation.take_next_chunk(run.pk, beat) == items[2:5]
    assert queued(broker) == []  # the message is gone: its other items are computed by the other chunk


@fast
def test_items_of_the_taking_chunk_itself_are_not_taken_again(items, broker, beat_of):
    """A dead worker's message put back in the queue may name items this chunk computes (rows not yet written)."""
    run = a_run(items)
    run_chunk.delay(run.pk, items[:6])
    beat = beat_of(run, items[:3])
    assert continuation.take_next_chunk(run.pk, beat) == items[3:6]
    assert beat.item_ids == items[:6]


class ClientWith:
    """The broker's real client, with one of its calls changed by a subclass (the rest pass through)."""

    def __init__(self, client):
        self.client = client

    def __getattr__(self, name):
        return getattr(self.client, name)


class Interleaved(ClientWith):
    """The broker's client, with something else happening at the instant before the take-over's script runs."""

    def __init__(self, client, meanwhile):
        super().__init__(client)
        self.meanwhile = meanwhile

    def eval(self, *args):
        self.meanwhile()
        return self.client.eval(*args)


@fast
def test_a_message_a_worker_took_meanwhile_is_not_taken_and_never_looked_covered(items, broker, beat_of):
    run = a_run(items)
    run_chunk.delay(run.pk, items[:3])
    beat = beat_of(run, items[10:12])
    seen = {}

    def worker_takes_it():  # its BRPOP, then its claim: nothing of the message may look covered by the other chunk
        assert broker.rpop(heartbeats.queue_keys_in_order()[0]) is not None
        seen["claimed"] = heartbeats.claim_items(run.pk, items[:3])
    beat._client = Interleaved(beat._client, worker_takes_it)
    assert continuation.take_next_chunk(run.pk, beat) is None
    assert seen["claimed"] == items[:3]
    assert beat.item_ids == items[10:12] and heartbeats.live_chunk_items(broker, run.pk) == set(items[10:12])


@fast
def test_of_two_chunks_taking_at_once_exactly_one_takes_and_names_the_items(items, broker, beat_of):
    run = a_run(items)
    run_chunk.delay(run.pk, items[:3])
    first, second = beat_of(run, items[10:12]), beat_of(run, items[12:14])
    got = {}
    first._client = Interleaved(first._client, lambda: got.setdefault("second", continuation.take_next_chunk(
        run.pk, second)))  # both looked at the same message; the second's script runs first
    got["first"] = continuation.take_next_chunk(run.pk, first)
    assert got == {"second": items[:3], "first": None}
    assert first.item_ids == items[10:12] and second.item_ids == items[12:14] + items[:3]
    assert heartbeats.live_chunk_items(broker, run.pk) == set(items[10:14] + items[:3])
    assert queued(broker) == []


class SlowBeat(ClientWith):
    """The broker's client, whose heartbeat write waits 0.2 s after the beat read the item list."""

    def __init__(self, client, during):
        super().__init__(client)
        self.during = during

    def pipeline(self):
        pipe, during = self.client.pipeline(), self.during

        class Pipe:
            def __getattr__(self, name):
                return getattr(pipe, name)

            def execute(self):
                during()
                return pipe.execute()
        return Pipe()


@fast
def test_a_beat_never_writes_back_an_item_list_older_than_a_take_over_s(items, broker, beat_of):
    run = a_run(items)
    run_chunk.delay(run.pk, items[:3])
    beat = beat_of(run, items[10:12])
    real = beat._client
    taker = threading.Thread(target=lambda: continuation.take_next_chunk(run.pk, beat))

    def take_while_beating():
        beat._client = real  # the taker uses the real client
        taker.start()
        time.sleep(0.2)  # without the heartbeat's lock the take-over is written now, and this beat's old list after
    beat._client = SlowBeat(real, take_while_beating)
    beat.beat()
    taker.join(5)
    assert beat.item_ids == items[10:12] + items[:3]
    assert heartbeats.live_chunk_items(broker, run.pk) == set(items[10:12] + items[:3])


@fast
def test_a_retry_or_a_message_with_an_eta_or_an_expiry_is_left_to_the_broker(items, broker, beat_of):
    run = a_run(items)
    beat = beat_of(run, items[10:12])
    for options in ({"countdown": 60}, {"expires": 600}, {"retries": 1}):
        run_chunk.apply_async(args=(run.pk, items[:3]), **options)
        assert continuation.take_next_chunk(run.pk, beat) is None, options
        assert queued(broker) == [(run.pk, items[:3])] and beat.item_ids == items[10:12]
        broker.delete(*heartbeats.queue_keys_in_order())


@fast
def test_without_redis_or_with_redis_away_nothing_is_taken(items, broker):
    run = a_run(items)
    with override_settings(CELERY_BROKER_URL="filesystem://"):
        assert continuation.take_next_chunk(run.pk, heartbeats.ChunkHeartbeat(run_id=run.pk, item_ids=[])) is None
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):  # nothing listens there
        away = heartbeats.ChunkHeartbeat(run_id=run.pk, item_ids=[])
        assert continuation.take_next_chunk(run.pk, away) is None


def test_the_queues_are_read_in_the_order_of_the_transport_s_brpop():
    with current_app.connection_for_read() as connection:
        channel = connection.default_channel
        expected = [channel._q_for_pri(current_app.conf.task_default_queue, step) for step in channel.priority_steps]
    assert heartbeats.queue_keys_in_order() == expected


@pytest.mark.django_db(transaction=True)
def test_one_worker_process_runs_a_four_chunk_run_as_one_task_each_row_once(items, tmp_path):
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1)
    try:
        with ModelServer(latency_s=0.02) as server:
            run = stand_in_run(server, "solo", items, chunk_size=5, concurrency=4)
            wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 60, "the run to finish")
            answered = server.stats.answered_ok
    finally:
        worker.stop()
    log = worker.log.read_text(errors="replace")
    assert_exactly_one_result_each_and_none_failed(run)
    assert answered == Result.objects.filter(run=run).count() == len(items)  # no request sent twice
    assert received_count(worker.log) == 1 and log.count("took the next chunk") == 3, log[-3000:]
    assert "'claimed': 5, 'taken': 15" in log


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_after_taking_the_next_chunk_loses_nothing_without_a_manual_step(items, tmp_path):
    """The chunk taken is no longer in the broker: when its worker dies, its heartbeat expires and the
    reconciliation queues its missing items again (no Resume pressed)."""
    env = subprocess_env(EVALUATION_LIMITER_LEASE_S="1", BROKER_VISIBILITY_TIMEOUT_S="4", EVALUATION_CHUNK_HEARTBEAT_S="1",
                         EVALUATION_RECONCILE_INTERVAL_S="1", EVALUATION_RECONCILE_GRACE_S="1")
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
    try:
        with ModelServer(latency_s=0.3) as server:
            run = stand_in_run(server, "kill", items, chunk_size=10)
            wait_for(lambda: "took the next chunk" in worker.log.read_text(errors="replace"), 60, "the next chunk taken")
            worker.stop(signal.SIGKILL)
            time.sleep(0.5)  # the requests in flight at the kill are answered (to no one)
            before = Result.objects.filter(run=run).count()
            assert before < len(items) and not queued_chunks_of(run)  # the taken chunk's message is gone
            server.reset()
            worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
            wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 90, "the run to finish")
            answered = server.stats.answered_ok
    finally:
        worker.stop()
    assert_exactly_one_result_each_and_none_failed(run)
    assert answered == len(items) - before  # only the missing rows, each once


def stand_in_run(server, name: str, items, *, chunk_size: int, concurrency: int = 2, enqueue: bool = True) -> Run:
    """A naive run of the items against the stand-in server, with its own endpoint (no response cache)."""
    endpoint = services.endpoint_create(name=f"continuation-{name}", base_url=server.base_url, model="stand-in",
                                        max_concurrency=concurrency, use_cache=False)
    return services.run_launch(endpoint=endpoint, method="naive", ids=items, chunk_size=chunk_size, enqueue=enqueue)


def queued_chunks_of(run) -> list[list[int]]:
    broker = heartbeats.broker_redis()
    try:
        return [chunk for run_id, chunk in queued(broker) if run_id == run.pk]
    finally:
        broker.close()


@pytest.mark.django_db(transaction=True)
def test_a_chunk_that_took_others_and_meets_a_database_blip_is_retried_with_their_items(items, tmp_path):
    """Its retry names the items it took (their messages are gone): the run finishes with no reconciliation."""
    env = subprocess_env(EVALUATION_RECONCILE_IN_WORKERS="0")
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
    try:
        with ModelServer(latency_s=0.3) as server:
            run = stand_in_run(server, "blip", items, chunk_size=5)
            wait_for(lambda: worker.log.read_text(errors="replace").count("took the next chunk") >= 2, 60,
                     "two chunks taken")
            killed, deadline = 0, time.monotonic() + 20  # until one of the worker's connections was cut mid-write
            while not killed and time.monotonic() < deadline:
                killed = terminate_other_connections()
                time.sleep(0.002)
            assert killed and Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
            wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 60, "the run to finish")
    finally:
        worker.stop()
    log = worker.log.read_text(errors="replace")
    assert "Retry in" in log and "re-enqueued" not in log, log[-3000:]
    assert_exactly_one_result_each_and_none_failed(run)


@pytest.mark.django_db(transaction=True)
def test_a_worker_told_to_stop_finishes_its_chunk_and_leaves_the_queued_ones(items, tmp_path):
    """A warm shutdown waits for the running tasks: a chunk that kept taking the next ones would hold it until the
    whole run was done."""
    worker = start_celery_worker(tmp_path, concurrency=1)  # prefork: the chunk runs in a child, as in production
    with ModelServer(latency_s=0.3) as server:
        run = stand_in_run(server, "stop", items, chunk_size=3)
        try:
            wait_for(lambda: "took the next chunk" in worker.log.read_text(errors="replace"), 60, "a chunk taken")
            worker.proc.terminate()  # SIGTERM: a warm shutdown
            worker.proc.wait(timeout=60)
            left = queued_chunks_of(run)
            assert left and Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, worker.log.read_text()[-4000:]
            worker = start_celery_worker(tmp_path, concurrency=1)
            wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 60, "the run to finish")
        finally:
            worker.stop()
    assert_exactly_one_result_each_and_none_failed(run)
    assert "took the next chunk" in worker.log.read_text(errors="replace")


class AnswerLost(ClientWith):
    """The broker's client, whose script runs but whose answer never arrives (redis-py may then send it again)."""

    def __init__(self, client, again: bool):
        super().__init__(client)
        self.again = again

    def eval(self, *args):
        self.client.eval(*args)
        if self.again:
            return self.client.eval(*args)  # sent again after a lost answer: the script must say "taken" again
        raise redis.ConnectionError("the answer was lost")


@fast
@pytest.mark.parametrize("again", [False, True], ids=["no answer", "sent again"])
def test_a_take_over_whose_answer_was_lost_still_names_its_items(items, broker, beat_of, again):
    run = a_run(items)
    run_chunk.delay(run.pk, items[:3])
    beat = beat_of(run, items[10:12])
    beat._client = AnswerLost(beat._client, again)
    assert continuation.take_next_chunk(run.pk, beat) == items[:3]
    beat._client = beat._client.client
    beat.beat()  # the next beat keeps them
    assert queued(broker) == [] and heartbeats.live_chunk_items(broker, run.pk) == set(items[10:12] + items[:3])


@fast
def test_a_worker_s_step_marks_it_stopping_and_started(broker):
    worker = types.SimpleNamespace(hostname=f"step-{time.time_ns()}@test")
    step = continuation.StopTakingChunks(worker)
    step.stop(worker)
    assert broker.exists(continuation._stopping_key(worker.hostname))
    step.start(worker)
    assert not broker.exists(continuation._stopping_key(worker.hostname))


@pytest.mark.django_db(transaction=True)
def test_a_chunk_takes_the_next_only_when_its_own_jobs_run_low(items):
    """Chunks much smaller than the engine's queue were all taken at the chunk's start."""
    handed, seen = [], []
    with ModelServer(latency_s=0.05) as server:
        run = stand_in_run(server, "low", items, chunk_size=2, enqueue=False)
        rest = [items[i:i + 2] for i in range(2, len(items), 2)]

        def more():
            seen.append(len(handed) * 2 + 2 - server.stats.answered_ok)  # jobs given and not answered yet
            if not rest:
                return None
            handed.append(rest.pop(0))
            return handed[-1]
        chunks.execute_chunk(run_id=run.pk, item_ids=items[:2], more=more)
    assert_exactly_one_result_each_and_none_failed(run)
    assert len(handed) == 9 and max(seen) <= 2 * run.endpoint.max_concurrency, seen


@pytest.mark.django_db(transaction=True)
def test_a_worker_shut_down_by_remote_control_finishes_its_chunk_and_leaves_the_queued_ones(items, tmp_path):
    worker = start_celery_worker(tmp_path, concurrency=1)
    with ModelServer(latency_s=0.3) as server:
        run = stand_in_run(server, "control", items, chunk_size=3)
        try:
            wait_for(lambda: "took the next chunk" in worker.log.read_text(errors="replace"), 60, "a chunk taken")
            current_app.control.shutdown(destination=[host_format(worker.name)])
            worker.proc.wait(timeout=60)
            assert queued_chunks_of(run), worker.log.read_text()[-4000:]
        finally:
            worker.stop()

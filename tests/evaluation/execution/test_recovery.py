"""Runs heal themselves (issue 11): the reconciliation re-enqueues only what nothing computes, a database blip
is retried (never a failed row), a SIGKILLed worker's chunk is redelivered by the broker and a Redis restart loses
nothing, with no manual step.

Real PostgreSQL, the real Redis broker, real Celery worker processes and a stand-in model server."""
import json
import signal
import time

import pytest
from django.utils import timezone

from annotation.models import Item
from evaluation.execution import heartbeats
from evaluation.execution import recovery as reconcile
from evaluation.models import Result, Run, RunStatus
from evaluation.services import runs as services
from evaluation.tasks import run_chunk
from tests.conftest import start_celery_worker, subprocess_env
from tests.evaluation.conftest import compute_rows
from tests.support.faults import (
    PrivateRedis,
    assert_exactly_one_result_each_and_none_failed,
    enqueue_on,
    received_count,
    run_in_thread,
    terminate_other_connections,
    wait_for,
)
from tests.support.items import import_items
from tests.support.model_server import ModelServer

fast = pytest.mark.django_db
with_worker = pytest.mark.django_db(transaction=True)


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=24)
    return list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))


def stalled_run(items, *, done: list[int], minutes_ago: float = 5) -> Run:
    """A running run whose rows of ``done`` exist (computed by the real planner, engine and writer on the test's
    connection), last written and started ``minutes_ago``, with nothing queued or running for it."""
    endpoint = services.endpoint_for_cli(builtin="first-option")
    run = services.run_launch(endpoint=endpoint, method="naive", ids=items, chunk_size=5, enqueue=False)
    if done:
        compute_rows(run)
        Result.objects.filter(run=run).exclude(item_id__in=done).delete()
    past = timezone.now() - timezone.timedelta(minutes=minutes_ago)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=past, finished_at=None)
    Result.objects.filter(run=run).update(updated_at=past)
    run.refresh_from_db()
    return run


def check_of(report, run) -> reconcile.RunCheck:
    return next(c for c in report.runs if c.run_id == run.pk)


@pytest.fixture
def reconcile_pass(django_capture_on_commit_callbacks):
    """One reconciliation pass; what it enqueues is published as it would be outside the test's transaction."""
    def run_pass(run) -> reconcile.RunCheck:
        with django_capture_on_commit_callbacks(execute=True):
            return check_of(reconcile.reconcile_runs(), run)
    return run_pass


@fast
def test_a_stalled_run_gets_only_its_missing_items_enqueued_after_the_grace_and_once(items, broker, settings, reconcile_pass):
    settings.EVALUATION_RECONCILE_GRACE_S = 30
    run = stalled_run(items, done=items[:14])
    first = reconcile_pass(run)
    assert (first.missing, first.uncovered, first.enqueued) == (10, 10, [])  # seen once: not yet

    settings.EVALUATION_RECONCILE_GRACE_S = 0
    second = reconcile_pass(run)
    assert second.enqueued == items[14:]
    queued = reconcile.broker_chunks(broker)[run.pk]
    assert queued == set(items[14:])  # two chunks of 5, nothing already done
    third = reconcile_pass(run)
    assert (third.uncovered, third.enqueued) == (0, [])  # the queued chunks cover them: not enqueued twice



@fast
def test_items_a_live_chunk_computes_are_left_to_it(items, broker, settings, reconcile_pass):
    settings.EVALUATION_RECONCILE_GRACE_S = 0
    run = stalled_run(items, done=items[:4], minutes_ago=0)
    with heartbeats.heartbeat(run_id=run.pk, item_ids=items[4:12]):
        assert heartbeats.claim_items(run.pk, items[8:16]) == items[12:16]  # a second copy leaves them too
        check = reconcile_pass(run)
    assert check.missing == 20 and check.uncovered == 12
    assert check.enqueued == items[12:]  # another chunk is alive: no need to wait for a stall
    assert reconcile.live_chunk_items(broker, run.pk) == set()  # the heartbeat is gone with its chunk

    for key in heartbeats.queue_keys_in_order():  # the queued chunks are lost, the live one died
        broker.delete(key)
    again = reconcile_pass(run)
    # Rows were written just now, but chunks worked on this run: its lost items are not left to a stall.
    assert again.enqueued == items[4:] and again.note == ""


@fast
def test_a_run_computed_in_process_is_not_taken_over_and_a_complete_one_is_finished(items, broker, settings, reconcile_pass):
    settings.EVALUATION_RECONCILE_GRACE_S = 0
    busy = stalled_run(items[:12], done=items[:6], minutes_ago=0)  # rows just written, no chunk: evaluate --wait
    check = reconcile_pass(busy)
    assert check.enqueued == [] and check.note == "no chunk, but progress"
    assert reconcile.broker_chunks(broker).get(busy.pk) is None

    complete = stalled_run(items[12:], done=items[12:])
    Run.objects.filter(pk=complete.pk).update(status=RunStatus.RUNNING, finished_at=None)
    assert reconcile_pass(complete).finished
    complete.refresh_from_db()
    assert complete.status == RunStatus.FINISHED


@with_worker
def test_a_run_computed_in_process_is_covered_by_its_heartbeat_however_slow_its_requests(items, broker, settings):
    """No row for longer than the stall limit (a slow model), yet the pass leaves the in-process run alone."""
    settings.EVALUATION_RECONCILE_GRACE_S = 0
    settings.EVALUATION_RECONCILE_STALL_S = 0
    with ModelServer(latency_s=1.5) as server:
        run = services.run_launch(endpoint=endpoint(server, max_concurrency=4), method="naive", ids=items[:4],
                                  enqueue=False)
        worker = run_in_thread(run)
        try:
            wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
                     and reconcile.live_chunk_items(broker, run.pk), timeout=10, what="the in-process heartbeat")
            assert not Result.objects.filter(run=run).exists()  # nothing written yet: a stall, by the rows alone
            assert reconcile.live_chunk_items(broker, run.pk) == set(items[:4])
            check = check_of(reconcile.reconcile_runs(), run)
            assert (check.uncovered, check.enqueued) == (0, [])
            assert reconcile.broker_chunks(broker).get(run.pk) is None
        finally:
            worker.join(30)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and Result.objects.filter(run=run, error="").count() == 4
    assert reconcile.live_chunk_items(broker, run.pk) == set()  # the heartbeat ends with the run


@fast
def test_re_enqueueing_without_progress_backs_off(items, broker, settings, reconcile_pass):
    settings.EVALUATION_RECONCILE_GRACE_S = 0
    run = stalled_run(items, done=items[:20])
    assert reconcile_pass(run).enqueued == items[20:]
    for key in heartbeats.queue_keys_in_order():  # the broker loses them again
        broker.delete(key)
    settings.EVALUATION_RECONCILE_GRACE_S = 5
    broker.hset(reconcile._uncovered_key(run.pk), mapping={i: time.time() - 60 for i in items[20:]})
    check = reconcile_pass(run)
    assert check.enqueued == [] and check.note.startswith("backing off (1 ")
    state = broker.hgetall(reconcile._state_key(run.pk))
    assert int(state[b"attempts"]) == 1


@fast
def test_chunk_message_parsing_reads_what_celery_publishes(items, broker):
    run = stalled_run(items, done=[])
    run_chunk.delay(run.pk, items[:3])
    raws = [r for k in heartbeats.queue_keys_in_order() for r in broker.lrange(k, 0, -1)]
    found = [heartbeats.chunk_of_message(r) for r in raws]
    assert [(f[1], f[2]) for f in found if f] == [(run.pk, items[:3])]
    assert heartbeats.chunk_of_message(json.dumps({"headers": {"task": "other"}, "body": ""})) is None
    assert heartbeats.chunk_of_message(b"not json") is None


def endpoint(server, **fields):
    return services.endpoint_create(name=f"stand-in {time.time_ns()}", base_url=server.base_url, model="stand-in",
                                    **fields)


#: The worker tests' environment: limiter slots of a killed worker come back after 1 s, its chunk after 4 s.
WORKER_ENV = {"EVALUATION_LIMITER_LEASE_S": "1", "BROKER_VISIBILITY_TIMEOUT_S": "4", "EVALUATION_CHUNK_HEARTBEAT_S": "1"}


@pytest.fixture(scope="module")
def module_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """One solo worker for the module's worker tests (a worker takes seconds to start on a busy machine);
    ``worker["process"]`` is replaced when a test kills and restarts it."""
    with django_db_blocker.unblock():
        env = subprocess_env(**WORKER_ENV)
    state = {"env": env, "dir": tmp_path_factory.mktemp("healing-workers")}
    state["process"] = start_celery_worker(state["dir"], pool="solo", concurrency=1, env=env)
    yield state
    state["process"].stop(signal.SIGQUIT)  # nothing runs any more: a cold shutdown, no wait


@with_worker
def test_a_database_blip_mid_run_is_retried_and_stores_no_failed_row(items, module_worker):
    worker = module_worker["process"]
    with ModelServer(latency_s=0.5) as server:  # a run of about 6 s: time to cut a connection mid-run
        ep = endpoint(server, max_concurrency=2, use_cache=False)
        run = services.run_launch(endpoint=ep, method="naive", ids=items, chunk_size=24)
        wait_for(lambda: Result.objects.filter(run=run).count() >= 4, 30, "some rows")
        # The worker holds a connection only while it writes (a flush every few hundred ms): terminate until one
        # of its connections was cut mid-run.
        killed, deadline = 0, time.monotonic() + 10
        while not killed and time.monotonic() < deadline:
            killed = terminate_other_connections()
            time.sleep(0.002)
        assert killed >= 1 and Run.objects.get(pk=run.pk).status != RunStatus.FINISHED
        wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 60, "the run to finish")
    log = worker.log.read_text(errors="replace")
    figures = assert_exactly_one_result_each_and_none_failed(run)
    print(f"\ndatabase blip: {killed} connection(s) terminated; {figures}; retried: {'Retry in' in log}")
    assert "Retry in" in log  # the chunk met the error and was retried (not stored as failed rows)


@with_worker
def test_a_sigkilled_worker_s_chunk_is_redelivered_without_a_manual_step(items, module_worker, settings):
    settings.EVALUATION_WORKER_PROCESSES = 1  # the worker's one process: the run is one chunk
    worker, env = module_worker["process"], module_worker["env"]
    with ModelServer(latency_s=0.5) as server:  # long enough that the kill lands mid-run on a loaded machine
        ep = endpoint(server, max_concurrency=2, use_cache=False)
        run = services.run_launch(endpoint=ep, method="naive", ids=items, chunk_size=24)
        wait_for(lambda: Result.objects.filter(run=run).count() >= 4, 30, "some rows")
        worker.stop(signal.SIGKILL)
        killed_at = time.monotonic()
        time.sleep(0.5)  # the requests in flight at the kill are answered (to no one)
        before = Result.objects.filter(run=run).count()
        assert before < len(items)
        server.reset()
        worker = module_worker["process"] = start_celery_worker(module_worker["dir"], pool="solo", concurrency=1,
                                                              env=env)  # restarted; no Resume pressed
        wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 60, "the run to finish")
        back_s = time.monotonic() - killed_at
        answered = server.stats.answered_ok
    figures = assert_exactly_one_result_each_and_none_failed(run)
    print(f"\nworker SIGKILL: {before} rows before the kill, finished {back_s:.1f} s after it "
          f"(visibility timeout 4 s); {figures}; model answers after the kill {answered} for {len(items) - before} "
          f"missing rows")
    assert received_count(worker.log) == 1  # the restarted worker got the chunk back once
    assert answered == len(items) - before  # only the rows not written before the kill, each once



@with_worker
def test_a_redis_restart_mid_run_loses_nothing_and_needs_no_manual_step(items, tmp_path):
    """A private redis-server (never the shared one) restarted without persistence: the running chunk is
    retried, the queued chunks the restart lost are re-enqueued by the reconciliation the worker asks for."""
    redis_server = PrivateRedis(tmp_path).start()
    env = subprocess_env(REDIS_URL=redis_server.url, EVALUATION_LIMITER_LEASE_S="1", EVALUATION_CHUNK_HEARTBEAT_S="1",
                         EVALUATION_RECONCILE_INTERVAL_S="2", EVALUATION_RECONCILE_GRACE_S="1")
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
    try:
        with ModelServer(latency_s=0.2) as server:
            ep = endpoint(server, max_concurrency=2, use_cache=False)
            run = services.run_launch(endpoint=ep, method="naive", ids=items, chunk_size=8, enqueue=False)
            enqueue_on(redis_server.url, run, run.item_ids)  # 3 chunks: one runs, two wait in the queue
            wait_for(lambda: Result.objects.filter(run=run).count() >= 2, 30, "some rows")
            before = Result.objects.filter(run=run).count()
            restarted_at = time.monotonic()
            redis_server.restart(down_s=0.5)
            wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.FINISHED, 60, "the run to finish")
            back_s = time.monotonic() - restarted_at
    finally:
        worker.stop(signal.SIGQUIT)
        redis_server.stop()
    log = worker.log.read_text(errors="replace")
    figures = assert_exactly_one_result_each_and_none_failed(run)
    print(f"\nRedis restart: {before} rows before it, finished {back_s:.1f} s after it; {figures}; "
          f"re-enqueued by the reconciliation: {'re-enqueued' in log}")
    assert "re-enqueued" in log  # the lost chunks came back without a Resume

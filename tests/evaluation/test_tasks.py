"""Runs through real Celery worker processes (real Redis broker, PostgreSQL, stand-in model server)."""
import signal
import time

import pytest
from django.db.models import Count

from annotation.models import Item
from evaluation.models import Result, RunStatus
from evaluation.services import runs as services
from evaluation.tasks import run_chunk
from tests.conftest import start_celery_worker, subprocess_env
from tests.support.faults import wait_for
from tests.support.items import import_items
from tests.support.model_server import ModelServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=64)
    return list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))



def run_finished(run):
    run.refresh_from_db()
    return run.status == RunStatus.FINISHED


def assert_exactly_one_row_per_item_and_sample(run):
    run.refresh_from_db()
    duplicates = Result.objects.filter(run=run).values("item_id", "sample_index").annotate(c=Count("pk")).filter(c__gt=1)
    assert not duplicates.exists()
    pairs = set(Result.objects.filter(run=run).values_list("item_id", "sample_index"))
    assert pairs == {(i, s) for i in run.item_ids for s in range(run.samples)}


def endpoint(server, **fields):
    return services.endpoint_create(name=f"stand-in {time.time_ns()}", base_url=server.base_url, model="stand-in",
                                    **fields)


def test_429_and_500_storm_every_item_resolved_none_duplicated(items, celery_worker):
    with ModelServer(rate_429=0.2, rate_500=0.05, retry_after_s=0.02, latency_s=0.01, seed=7) as server:
        ep = endpoint(server, max_concurrency=8, max_attempts=12, use_cache=False)
        run = services.run_launch(endpoint=ep, method="naive", split="test", samples=2, chunk_size=16)
        wait_for(lambda: run_finished(run), 90, "the run to finish")
        stats = server.stats
    assert stats.by_status.get("429", 0) > 10 and stats.by_status.get("500", 0) > 0
    assert not Result.objects.filter(run=run).exclude(error="").exists()  # every item resolved
    assert Result.objects.filter(run=run, parse_status="ok").count() == 2 * len(items)
    assert_exactly_one_row_per_item_and_sample(run)
    assert stats.answered_ok == 2 * len(items)  # no request answered twice into a duplicate


def test_worker_killed_mid_run_then_relaunched_leaves_exactly_one_row_per_item(items, transactional_db, tmp_path):
    env = subprocess_env(EVALUATION_LIMITER_LEASE_S="1")
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
    try:
        with ModelServer(latency_s=0.15) as server:
            ep = endpoint(server, max_concurrency=4, use_cache=False)
            run = services.run_launch(endpoint=ep, method="naive", split="test", chunk_size=32)
            wait_for(lambda: Result.objects.filter(run=run).count() >= 8, 60, "some rows")
            worker.stop(signal.SIGKILL)
            written_before = Result.objects.filter(run=run).count()
            assert written_before < len(items)
            run.refresh_from_db()
            assert run.status == RunStatus.RUNNING

            worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
            server.reset()
            services.run_resume(run=run)
            wait_for(lambda: run_finished(run), 90, "the resumed run to finish")
            assert server.stats.answered_ok <= len(items) - written_before + 4  # only missing rows (+ in-flight at kill)
            # The killed worker's unacknowledged chunk may be delivered again later: it must change nothing.
            server.reset()
            run_chunk.apply(args=(run.pk, items))
            assert server.stats.requests == 0
    finally:
        worker.stop()
    assert_exactly_one_row_per_item_and_sample(run)
    assert not Result.objects.filter(run=run).exclude(error="").exists()


def test_two_workers_share_the_endpoint_limit(items, transactional_db, tmp_path):
    workers = [start_celery_worker(tmp_path, pool="solo", concurrency=1) for _ in range(2)]
    try:
        with ModelServer(latency_s=0.08) as server:
            ep = endpoint(server, max_concurrency=8, use_cache=False)
            run = services.run_launch(endpoint=ep, method="naive", split="test", samples=3, chunk_size=16)
            wait_for(lambda: run_finished(run), 90, "the run to finish")
            peak = server.stats.peak_in_flight
    finally:
        for worker in workers:
            worker.stop()
    logs = [w.log.read_text(errors="replace") for w in workers]
    assert all("evaluation.tasks.run_chunk" in log and "succeeded" in log for log in logs), "both workers worked"
    assert peak <= 8
    assert peak >= 6  # and the limit was actually used
    assert_exactly_one_row_per_item_and_sample(run)

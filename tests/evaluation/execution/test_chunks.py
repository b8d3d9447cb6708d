"""evaluation.execution.chunks: a chunk's reads (planning the jobs, the cache) never wait behind its writes."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection

from annotation.models import Item
from evaluation.execution import chunks, planning
from evaluation.models import Result, RunStatus
from evaluation.prompting.prompts import choose_demonstrations
from evaluation.services import runs as services
from tests.support.items import import_items
from tests.support.model_server import ModelServer

pytestmark = pytest.mark.django_db(transaction=True)


def _other_connection() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=False)


@pytest.mark.parametrize("use_cache", [True, False])
def test_requests_go_on_while_the_writes_are_blocked(detectbench_dir, use_cache):
    """The result table is locked against writes by another session from the run's start: every job must still be
    planned (far more than the first batch and the engine's queue hold) and sent, and the rows written once the
    lock goes. When planning and the cache lookups shared the writes' thread, the requests stopped at the first
    blocked write."""
    import_items(detectbench_dir / "test.jsonl", split="test", limit=30)
    samples = 30  # 900 jobs: 64 planned first, then batches of PLAN_BATCH; the engine queues 2 x 8 ahead
    assert 30 * samples > chunks.FIRST_PLAN_BATCH + chunks.PLAN_BATCH
    blocker = _other_connection()
    try:
        with ModelServer(reply_mode="first", latency_s=0.002) as server:
            endpoint = services.endpoint_create(name="blocked writes", base_url=server.base_url, model="stand-in",
                                                max_concurrency=8, use_cache=use_cache)
            run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=samples,
                                      enqueue=False)
            blocker.execute("LOCK TABLE evaluation_result IN SHARE MODE")  # reads pass, INSERT waits
            worker = threading.Thread(target=services.run_execute_in_process, kwargs={"run": run})
            worker.start()
            deadline = time.monotonic() + 30
            while server.stats.requests < run.total and time.monotonic() < deadline and worker.is_alive():
                time.sleep(0.02)
            sent_while_blocked = server.stats.requests
            written_while_blocked = Result.objects.filter(run=run).count()
            blocker.rollback()  # the lock goes
            worker.join(60)
            assert not worker.is_alive()
        assert written_while_blocked == 0
        assert sent_while_blocked == run.total, f"only {sent_while_blocked} of {run.total} requests while blocked"
        run.refresh_from_db()
        assert run.status == RunStatus.FINISHED
        rows = Result.objects.filter(run=run)
        assert rows.count() == run.total == rows.values("item_id", "sample_index").distinct().count()
        assert not rows.exclude(error="").exists()
    finally:
        blocker.close()


def test_planning_shows_the_samples_of_an_item_alike_and_each_rotation_once(detectbench_dir):
    """One presentation per (item, rotation) and one set of demonstrations per item: the same objects for every
    sample, equal to what the rules give for each row on its own."""
    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)
    import_items(detectbench_dir / "train.jsonl", split="train", limit=8)
    endpoint = services.endpoint_create(name="planning", base_url="http://127.0.0.1:9/v1", model="m")
    for method, order in (("naive", "permuted"), ("auto-cot-3shot", "circular"), ("naive", "original")):
        run = services.run_launch(endpoint=endpoint, method=method, split="test", samples=3, enqueue=False,
                                  option_order=order)
        planner = planning.JobPlanner.for_run(run)
        wanted = [(i, s) for i in run.item_ids for s in range(run.rows_per_item)]
        jobs = planner.jobs(wanted)
        assert [(j.item_id, j.sample_index) for j in jobs] == wanted
        views = {item.pk: planning.item_view(item) for item in Item.objects.filter(pk__in=run.item_ids)}
        for job in jobs:
            assert job.shown == planner.shown(views[job.item_id], job.sample_index)
            ids = [d.item.id for d in job.demos]
            assert ids == choose_demonstrations(pool_ids=planner.pool, seed=run.seed, exclude=job.item_id,
                                                       shots=planner.method.shots)
            assert job.item_id not in ids
        by_key = {}
        for job in jobs:
            key = (job.item_id, job.sample_index % run.rotations)
            assert by_key.setdefault(key, job.shown) is job.shown
        if method.endswith("3shot"):
            assert all(len(j.demos) == 3 for j in jobs)
        assert len(by_key) == len(run.item_ids) * run.rotations


@pytest.mark.parametrize("status", list(RunStatus))
@pytest.mark.parametrize("started", [False, True])
def test_marking_a_run_started_changes_only_a_queued_status_and_a_missing_start(detectbench_dir, status, started):
    """One statement for what two did: a queued run becomes running (no other status changes), and a run without a
    start gets one (a start already there is kept), whatever the other field is."""
    import datetime

    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from evaluation.models import Run

    import_items(detectbench_dir / "test.jsonl", split="test", limit=2)
    endpoint = services.endpoint_create(name="marks", base_url="http://127.0.0.1:9/v1", model="stand-in")
    run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
    earlier = timezone.now() - datetime.timedelta(hours=1)
    Run.objects.filter(pk=run.pk).update(status=status, started_at=earlier if started else None)
    before = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        chunks.mark_started(run.pk)
    assert len(queries.captured_queries) == 1, queries.captured_queries
    run.refresh_from_db()
    assert run.status == (RunStatus.RUNNING if status == RunStatus.QUEUED else status)
    assert run.started_at == earlier if started else before <= run.started_at <= timezone.now()


def test_a_chunk_that_ends_its_run_marks_it_finished_on_its_writing_thread(detectbench_dir):
    """The status is refreshed right after the last write, on the writing thread (the run is seen finished before the
    client and the threads are closed), not after the event loop on the chunk's own thread."""
    from django.test.utils import CaptureQueriesContext

    import_items(detectbench_dir / "test.jsonl", split="test", limit=3)
    with ModelServer(reply_mode="first") as server:
        endpoint = services.endpoint_create(name="finish", base_url=server.base_url, model="stand-in",
                                            max_concurrency=4)
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=2, enqueue=False)
        with CaptureQueriesContext(connection) as on_this_thread:
            report = chunks.execute_chunk(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.finished_at is not None and report.refreshed
    assert not [q for q in on_this_thread.captured_queries if "COUNT(" in q["sql"].upper()]


def test_the_rows_still_wanted_are_those_without_a_row_done_over_random_states_and_a_fresh_run_asks_one_query(
        detectbench_dir):
    """``_wanted`` against the rule computed in Python, over random sets of rows done and failed and random item
    subsets (the whole run, a chunk, none): what is wanted, how many are done, what is failed. A run without rows
    is looked up with one query and no list of its items."""
    import random

    from django.test.utils import CaptureQueriesContext

    import_items(detectbench_dir / "test.jsonl", split="test", limit=40)
    endpoint = services.endpoint_create(name="wanted", base_url="http://127.0.0.1:9/v1", model="stand-in")
    run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=3, enqueue=False)
    items = list(run.item_ids)
    pairs = [(i, s) for i in items for s in range(run.rows_per_item)]
    with CaptureQueriesContext(connection) as queries:
        assert chunks._wanted(run, items) == (pairs, 0, set())
    assert len(queries.captured_queries) == 1 and " IN (" not in queries.captured_queries[0]["sql"]
    assert chunks._wanted(run, []) == ([], 0, set())
    rng = random.Random(7)
    for _ in range(12):
        Result.objects.filter(run=run).delete()
        states = {pair: rng.choice(["done", "failed", None]) for pair in pairs}
        Result.objects.bulk_create([
            Result(run=run, item_id=i, sample_index=s, item_version=1, error="" if state == "done" else "boom")
            for (i, s), state in states.items() if state is not None])
        asked = rng.choice([items, rng.sample(items, rng.randrange(1, len(items))), []])
        expected = ([(i, s) for i in asked for s in range(run.rows_per_item) if states[(i, s)] != "done"],
                    sum(1 for i in asked for s in range(run.rows_per_item) if states[(i, s)] == "done"),
                    {(i, s) for i in asked for s in range(run.rows_per_item) if states[(i, s)] == "failed"})
        assert chunks._wanted(run, asked) == expected

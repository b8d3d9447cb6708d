"""evaluation.tasks through real Celery worker processes (real Redis broker, PostgreSQL): model runs' chunks against
the stand-in model server; judge runs and position probes (launched as a researcher launches one, from the quality
card) against the stand-in judge server, a probe's labels being the probe's, not the queue's."""
import json
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db.models import Count
from django.urls import reverse

from annotation.models import BeliefLabel, Item
from evaluation.models import JudgeProbeLabel, JudgeRun, Result, RunStatus
from evaluation.services import judge as judge_services
from evaluation.services import runs as services
from evaluation.tasks import judge_run_execute, run_chunk
from foundation.errors import Conflict
from tests.annotation.workflow_support import client_for
from tests.conftest import start_celery_worker, subprocess_env
from tests.support.faults import wait_for
from tests.support.items import import_items
from tests.support.judge_server import JudgeServer, judge_endpoint, verdict_reply
from tests.support.model_server import ModelServer
from tests.support.waiting import wait_until

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
    # The killed worker's limiter slots come back after 1 s and its chunk's message after 4 s (its items stay
    # claimed by that chunk until then, so the run finishes only when the broker hands the message out again):
    # with the default 45 s visibility timeout, the test waited 40 s for that (tests/evaluation/execution/
    # test_recovery.py's workers run with the same 4 s; a live chunk's heartbeat renews its message every 1 s).
    env = subprocess_env(EVALUATION_LIMITER_LEASE_S="1", BROKER_VISIBILITY_TIMEOUT_S="4", EVALUATION_CHUNK_HEARTBEAT_S="1")
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
    with ThreadPoolExecutor(2) as pool:  # the two start side by side (each takes seconds)
        starting = [pool.submit(start_celery_worker, tmp_path, pool="solo", concurrency=1) for _ in range(2)]
    workers = [future.result() for future in starting if future.exception() is None]
    if len(workers) < len(starting):
        for worker in workers:
            worker.stop()
        raise next(future.exception() for future in starting if future.exception() is not None)
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


# Judge runs.

JUDGE_REPLY = verdict_reply("incorrect", [("incorrect", -0.3), ("correct", -1.6)])


def finished(judge_run):
    judge_run.refresh_from_db()
    return judge_run.status == RunStatus.FINISHED


def assert_exactly_one_label_per_target(judge_run, config):
    judge_run.refresh_from_db()
    labels = BeliefLabel.objects.filter(queue=config.queue)
    assert not labels.values("target", "aspect", "item_version").annotate(c=Count("pk")).filter(c__gt=1).exists()
    assert set(labels.values_list("target", flat=True)) == set(judge_run.targets)


def test_a_judge_run_on_a_worker(free_text_run, celery_worker):
    with JudgeServer(script=lambda request: JUDGE_REPLY, latency_s=0.01) as server:
        config = judge_services.judge_config_create(name="worker-judge", task="free-text", belief_source="logprob",
                                                    endpoint=judge_endpoint(server, use_cache=False))
        judge_run = judge_services.judge_run_launch(config=config, run=free_text_run)
        wait_for(lambda: finished(judge_run), 60, "the judge run to finish")
    assert (judge_run.scored, judge_run.errors, judge_run.label_counts) == (judge_run.n, 0, {"incorrect": judge_run.n})
    assert judge_run.wall_s is not None and "evaluation.tasks.judge_run_execute" in celery_worker.log.read_text()
    assert_exactly_one_label_per_target(judge_run, config)


def _asked(server) -> Counter:
    """How many times the stand-in was asked about each target (a target's prompt is its own)."""
    return Counter(json.dumps(request["messages"], sort_keys=True) for request in server.requests)


def test_a_killed_judge_run_heals_by_itself_resume_is_refused_while_it_runs_and_nothing_is_asked_twice(
        free_text_run, tmp_path):
    """One execution path: a judge run beats like a model run's chunk and is alone. Resume while it runs is
    refused; its worker SIGKILLed, it finishes without Resume on another worker (the reconciliation), with one
    label per target, and only the requests in flight at the kill asked again."""
    env = subprocess_env(EVALUATION_LIMITER_LEASE_S="1", EVALUATION_CHUNK_HEARTBEAT_S="0.5",
                         EVALUATION_RECONCILE_INTERVAL_S="1", EVALUATION_RECONCILE_GRACE_S="1")
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
    try:
        with JudgeServer(script=lambda request: JUDGE_REPLY, latency_s=0.25) as server:
            judge_ep = judge_endpoint(server, max_concurrency=2, use_cache=False)
            config = judge_services.judge_config_create(name="killed-judge", task="free-text", belief_source="logprob",
                                                        endpoint=judge_ep)
            judge_run = judge_services.judge_run_launch(config=config, run=free_text_run)
            wait_for(lambda: BeliefLabel.objects.filter(queue=config.queue).count() >= 4, 60, "some labels")
            with pytest.raises(Conflict, match="is running"):
                judge_services.judge_run_resume(judge_run=judge_run)
            worker.stop(signal.SIGKILL)
            written = BeliefLabel.objects.filter(queue=config.queue).count()
            assert written < judge_run.n
            judge_run.refresh_from_db()
            assert judge_run.status == RunStatus.RUNNING
            # The killed execution's time up to its last batch of labels stays in the run's wall time: at least
            # the two latencies its first four labels took (two requests in flight at a time).
            killed_wall = judge_run.wall_s
            assert killed_wall is not None and killed_wall >= 0.45, killed_wall

            worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
            wait_for(lambda: finished(judge_run), 90, "the judge run to heal and finish without Resume")
            judge_run.refresh_from_db()
            assert judge_run.wall_s > killed_wall + 0.25  # the healing execution's time (its requests) adds to it
            asked = _asked(server)
            assert len(asked) == judge_run.n
            again = sum(1 for n in asked.values() if n > 1)
            # Only what was in flight at the kill (the endpoint's limit, 2) or being written asked again, once.
            assert max(asked.values()) <= 2 and again <= 3, asked
            # A late copy of the task (the killed worker's message coming back) asks nothing.
            before = len(server.requests)
            judge_run_execute.apply(args=(judge_run.pk,))
            assert len(server.requests) == before
    finally:
        worker.stop()
    assert_exactly_one_label_per_target(judge_run, config)
    assert (judge_run.scored, judge_run.errors) == (judge_run.n, 0)


# Position probes.

PROBE_REPLY = verdict_reply("correct", [("correct", -0.2), ("incorrect", -1.7)])


def test_a_probe_launched_from_the_card_runs_on_a_worker(free_text_run, celery_worker, researcher):
    with JudgeServer(script=lambda request: PROBE_REPLY, latency_s=0.01) as server:
        config = judge_services.judge_config_create(name="worker-probe", task="free-text", belief_source="logprob",
                                                    endpoint=judge_endpoint(server, use_cache=False))
        judge_run = judge_services.judge_run_execute_in_process(
            judge_run=judge_services.judge_run_launch(config=config, run=free_text_run, enqueue=False))
        asked, in_queue = len(server.requests), BeliefLabel.objects.filter(queue=config.queue).count()
        response = client_for(researcher).post(reverse("evaluation:judge_quality", args=[config.name]),
                                               {"judge_run": judge_run.pk, "kind": "rotated", "sample": 5, "seed": 2})
        assert response.status_code == 302
        probe = JudgeRun.objects.get(config=config, probe="rotated")
        wait_until(lambda: JudgeRun.objects.get(pk=probe.pk).status == RunStatus.FINISHED, 60,
                   "the probe to finish on the worker")
        assert len(server.requests) == asked + 5
    probe.refresh_from_db()
    assert (probe.n, probe.scored, probe.errors) == (5, 5, 0)
    assert "evaluation.tasks.judge_run_execute" in celery_worker.log.read_text()
    assert JudgeProbeLabel.objects.filter(judge_run=probe).count() == 5
    assert BeliefLabel.objects.filter(queue=config.queue).count() == in_queue
    page = client_for(researcher).get(reverse("evaluation:judge_quality", args=[config.name])).content.decode()
    assert "0 of n = 5" in page  # the same scripted verdict whatever the order: no flip


def test_a_chunk_of_a_deleted_run_is_dropped_with_a_warning_not_an_error(caplog, db):
    with caplog.at_level("WARNING", logger="evaluation.tasks"):
        result = run_chunk.apply(args=(987_654_321, [1, 2, 3]))
    assert result.successful() and result.result["dropped"] is True and result.result["written"] == 0
    assert "987654321 no longer exists: its chunk of 3 items is dropped" in caplog.text

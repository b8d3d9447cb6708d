"""Fault tests with figures (issue 11): a worker SIGKILLed mid-run and restarted, Redis restarted mid-run, a
30% 429 + 10% 500 storm, and a chunk longer than the visibility timeout. Each runs the same run fault-free
first and prints the time to complete against it, the rows, duplicates, failed rows and the model requests;
each asserts exactly one result per (item, sample) and no failed row caused by the fault, with no manual step.

The stack is real and private to the test: its own redis-server (restarted by the test; never the shared
one), two Celery worker processes (solo pool) and celery beat with the production timings (visibility
timeout 45 s, heartbeat 5 s, reconciliation every 15 s), the test database, a stand-in model server.

    pytest tests/perf/test_faults.py -m perf -s
"""
from __future__ import annotations

import signal
import time
from dataclasses import dataclass

import pytest

from annotation.models import Item
from evaluation.models import Result, Run, RunStatus
from evaluation.services import runs as services
from tests.conftest import start_celery_worker, subprocess_env
from tests.support.faults import (
    PrivateRedis,
    assert_exactly_one_result_each_and_none_failed,
    enqueue_on,
    received_count,
    row_figures,
    start_beat,
    wait_for,
)
from tests.support.items import import_items
from tests.support.model_server import ModelServer

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

N_ITEMS = 160
CHUNK = 40  # 4 chunks: two running (one per worker), two queued
LATENCY_S = 0.2
CONCURRENCY = 8
FINISH_TIMEOUT_S = 240


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=N_ITEMS)
    return list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))


class Stack:
    """Private Redis, two solo workers and beat, all pointed at that Redis."""

    def __init__(self, tmp_path, *, beat: bool = True, **env):
        self.tmp_path = tmp_path
        self.redis = PrivateRedis(tmp_path).start()
        self.env = subprocess_env(REDIS_URL=self.redis.url, **env)
        self.workers = [self.start_worker() for _ in range(2)]
        self.beat = start_beat(tmp_path, env=self.env) if beat else None

    def start_worker(self):
        return start_celery_worker(self.tmp_path, pool="solo", concurrency=1, env=self.env)

    def close(self) -> None:
        for process in [*self.workers, self.beat]:
            if process is not None:
                process.stop()
        self.redis.stop()


@pytest.fixture
def stack(tmp_path, request):
    built = Stack(tmp_path, beat=getattr(request, "param", "with beat") == "with beat")
    yield built
    built.close()


@dataclass
class Measured:
    seconds: float
    requests: int
    answered: int

    def __str__(self) -> str:
        return f"{self.seconds:.1f} s, {self.requests} requests ({self.answered} answered 200)"


def launch(stack: Stack, server: ModelServer, items, *, name: str, **endpoint_fields) -> Run:
    fields = {"max_concurrency": CONCURRENCY, "use_cache": False, **endpoint_fields}
    endpoint = services.endpoint_create(name=f"{name} {time.time_ns()}", base_url=server.base_url, model="stand-in",
                                        **fields)
    run = services.run_launch(endpoint=endpoint, method="naive", ids=items, chunk_size=CHUNK, enqueue=False)
    enqueue_on(stack.redis.url, run, run.item_ids)
    return run


def finished(run: Run) -> bool:
    return Run.objects.filter(pk=run.pk, status=RunStatus.FINISHED).exists()


def measure(stack: Stack, server: ModelServer, items, *, name: str, fault=None, **endpoint_fields) -> tuple[Run, Measured]:
    """Launch a run, call ``fault(run)`` once some rows are written (if given), wait for the run to finish."""
    server.reset()
    started = time.monotonic()
    run = launch(stack, server, items, name=name, **endpoint_fields)
    if fault is not None:
        wait_for(lambda: Result.objects.filter(run=run).count() >= CHUNK, 60, "the first rows")
        fault(run)
    wait_for(lambda: finished(run), FINISH_TIMEOUT_S, f"the {name} run to finish")
    return run, Measured(time.monotonic() - started, server.stats.requests, server.stats.answered_ok)


def report(title: str, baseline: Measured, faulted: Measured, run: Run, *extra: str) -> None:
    figures = row_figures(run)
    print(f"\n{title}: fault-free {baseline}; with the fault {faulted} "
          f"(+{faulted.seconds - baseline.seconds:.1f} s, x{faulted.seconds / baseline.seconds:.2f}); {figures}; "
          f"rows redone {faulted.answered - figures.rows}" + "".join(f"; {e}" for e in extra))


def test_worker_sigkilled_mid_run_and_restarted(items, stack):
    with ModelServer(latency_s=LATENCY_S) as server:
        _, baseline = measure(stack, server, items, name="baseline")
        moments = {}

        def kill_and_restart(run):
            victim = moments["victim"] = stack.workers[0]
            victim.stop(signal.SIGKILL)
            moments["killed"] = time.monotonic()
            moments["rows"] = Result.objects.filter(run=run).count()
            stack.workers[0] = stack.start_worker()  # restarted at once; no Resume pressed

        run, faulted = measure(stack, server, items, name="sigkill", fault=kill_and_restart)
    back_in = time.monotonic() - moments["killed"]
    # Both runs' 4 chunks, each delivered to a worker or taken off the queue by a running chunk
    # (evaluation.execution.continuation), and the killed worker's chunk once more (redelivered by the broker);
    # a chunk the killed worker had taken is no longer in the broker: the reconciliation queues it again.
    logs = [w.log.read_text(errors="replace") for w in [moments["victim"], *stack.workers]]
    received = sum(received_count(w.log) for w in [moments["victim"], *stack.workers])
    taken, again = sum(log.count("took the next chunk") for log in logs), sum(log.count("re-enqueued") for log in logs)
    report("Worker SIGKILL mid-run + restart", baseline, faulted, run,
           f"{moments['rows']} rows at the kill, finished {back_in:.1f} s after it "
           f"(visibility timeout 45 s, redelivered by the broker); chunks delivered {received}, taken off the queue "
           f"by a running chunk {taken}, re-enqueued by the reconciliation {again}, for 2 x 4 chunks")
    assert_exactly_one_result_each_and_none_failed(run)
    assert received + taken == 2 * N_ITEMS // CHUNK + 1 + again  # the killed worker's chunk came back, once


@pytest.mark.parametrize("stack", ["with beat", "workers only"], indirect=True)
def test_redis_restarted_mid_run(items, stack):
    """With beat, or with workers only (they ask for the reconciliation themselves)."""
    with ModelServer(latency_s=LATENCY_S) as server:
        _, baseline = measure(stack, server, items, name="baseline")
        moments = {}

        def restart_redis(run):
            moments["rows"] = Result.objects.filter(run=run).count()
            moments["at"] = time.monotonic()
            stack.redis.restart(down_s=1.0)  # every queued and unacknowledged message is lost

        run, faulted = measure(stack, server, items, name="redis-restart", fault=restart_redis)
    logs = "".join(w.log.read_text(errors="replace") for w in stack.workers)
    report(f"Redis restart mid-run (no persistence, {'with beat' if stack.beat else 'workers only'})",
           baseline, faulted, run,
           f"{moments['rows']} rows at the restart, finished {time.monotonic() - moments['at']:.1f} s after it; "
           f"chunk retries {logs.count('Retry in')}; re-enqueued by the reconciliation "
           f"{logs.count('re-enqueued')} time(s)")
    assert_exactly_one_result_each_and_none_failed(run)


def test_429_and_500_storm(items, stack):
    with ModelServer(latency_s=LATENCY_S) as server:
        _, baseline = measure(stack, server, items, name="baseline", max_attempts=12)
        server.configure(rate_429=0.3, rate_500=0.1, retry_after_s=0.05, seed=11)
        run, faulted = measure(stack, server, items, name="storm", max_attempts=12)
        by_status = dict(server.stats.by_status)
    report("30% 429 + 10% 500 storm", baseline, faulted, run, f"answers by status {by_status}")
    assert by_status.get("429", 0) > 0.2 * N_ITEMS and by_status.get("500", 0) > 0.05 * N_ITEMS
    assert_exactly_one_result_each_and_none_failed(run)
    assert faulted.answered == N_ITEMS  # every row answered once: no request repeated into a duplicate


def test_a_chunk_longer_than_the_visibility_timeout_is_not_delivered_twice(items, tmp_path):
    """The heartbeat renews the message's delivery time, so a slow chunk is not handed to the other worker."""
    built = Stack(tmp_path, BROKER_VISIBILITY_TIMEOUT_S="2", EVALUATION_CHUNK_HEARTBEAT_S="0.5")
    try:
        with ModelServer(latency_s=0.5) as server:
            started = time.monotonic()
            run = launch(built, server, items[:16], name="slow", max_concurrency=1)
            wait_for(lambda: finished(run), 120, "the run to finish")
            took = time.monotonic() - started
            requests = server.stats.requests
    finally:
        built.close()
    received = sum(received_count(w.log) for w in built.workers)
    print(f"\nChunk of {took:.1f} s with a visibility timeout of 2 s: received {received} time(s), "
          f"{requests} requests for 16 rows")
    assert took > 2 * 2
    assert received == 1
    assert requests == 16
    assert_exactly_one_result_each_and_none_failed(run)

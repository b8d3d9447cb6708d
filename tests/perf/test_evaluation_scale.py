"""Benchmark: model runs at ten times the scale (issue 23). The whole test split (1,196 items), `naive`, with 10
samples per item (11,960 requests), at concurrency 256 against the stand-in answering in 50 ms: in one process,
then through two Celery worker processes sharing the endpoint's limit of 256.

Prints, beside the ideal (requests x latency / concurrency): wall time and ratio, client CPU per request, the
stand-in's CPU per request (both on the same 2 CPUs), peak in flight, and the resident memory of the process(es)
running the requests before and after (memory must not grow with the rows: rows are written as they arrive).
Asserts correctness only: every (item, sample) resolved once, never more than 256 in flight.

    make bench   # or: pytest tests/perf/test_evaluation_scale.py -m perf -s
"""
from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest

from evaluation.models import Result, RunStatus
from evaluation.services import runs as services
from tests.perf.test_evaluation_throughput import ms_per_request
from tests.support.items import import_items
from tests.support.model_server import start_server_process

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

LATENCY_S, CONCURRENCY, SAMPLES = 0.05, 256, 10
GOAL_RATIO = 1.15


def _rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _children_rss_mb(parent: int) -> dict[int, float]:
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found[int(stat.parent.name)] = _rss_mb(stat.parent.name)
    return found


def _assert_resolved_once(run, n: int) -> None:
    rows = Result.objects.filter(run=run)
    assert rows.count() == n and rows.values("item_id", "sample_index").distinct().count() == n
    assert rows.filter(error="").count() == n


def _report(title: str, requests: int, elapsed: float, client_cpu: float | None, server, server_cpu_started,
            memory: str) -> None:
    ideal = requests * LATENCY_S / CONCURRENCY
    server_cpu = server.cpu_seconds()
    server_cpu = None if server_cpu is None or server_cpu_started is None else server_cpu - server_cpu_started
    stats = server.stats()
    ratio = elapsed / ideal
    print(f"\n{title}: {requests} requests, latency {LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY}: wall "
          f"{elapsed:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.2f} (goal <= {GOAL_RATIO}: "
          f"{'met' if ratio <= GOAL_RATIO else 'NOT met'}); {requests / elapsed:.0f} requests/s")
    print(f"  CPU per request: client {ms_per_request(client_cpu, requests)}, stand-in server "
          f"{ms_per_request(server_cpu, requests)}; peak in flight {stats['peak_in_flight']}; memory {memory}; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    assert stats["peak_in_flight"] <= CONCURRENCY


def test_12000_requests_at_concurrency_256_in_one_process(detectbench_dir):
    n_items = import_items(detectbench_dir / "test.jsonl", split="test")
    requests = n_items * SAMPLES
    with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
        endpoint = services.endpoint_create(name="bench-12k", base_url=server.base_url, model="stand-in",
                                            max_concurrency=CONCURRENCY, use_cache=False)
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=SAMPLES, enqueue=False)
        rss_before = _rss_mb()
        server_cpu_started = server.cpu_seconds()
        started, cpu_started = time.monotonic(), time.process_time()
        services.run_execute_in_process(run=run)
        elapsed, cpu = time.monotonic() - started, time.process_time() - cpu_started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        _report("DetectBench Web, one process", requests, elapsed, cpu, server, server_cpu_started,
                f"RSS {rss_before:.0f} MB before, {_rss_mb():.0f} MB after, peak {peak:.0f} MB")
        assert server.stats()["requests"] == requests
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    _assert_resolved_once(run, requests)


def test_12000_requests_through_two_celery_worker_processes(detectbench_dir, tmp_path):
    from tests.conftest import start_celery_worker

    n_items = import_items(detectbench_dir / "test.jsonl", split="test")
    requests = n_items * SAMPLES
    worker = start_celery_worker(tmp_path, concurrency=2)
    try:
        with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
            endpoint = services.endpoint_create(name="bench-12k-celery", base_url=server.base_url, model="stand-in",
                                                max_concurrency=CONCURRENCY, use_cache=False)
            rss_before = _children_rss_mb(worker.proc.pid)
            server_cpu_started = server.cpu_seconds()
            started = time.monotonic()
            run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=SAMPLES,
                                      chunk_size=-(-n_items // 2))
            rss_peak = dict(rss_before)
            while time.monotonic() - started < 600:
                run.refresh_from_db(fields=["status"])
                for pid, mb in _children_rss_mb(worker.proc.pid).items():
                    rss_peak[pid] = max(mb, rss_peak.get(pid, 0.0))
                if run.status == RunStatus.FINISHED:
                    break
                time.sleep(0.05)
            elapsed = time.monotonic() - started
            memory = "; ".join(f"worker process {pid}: RSS {rss_before.get(pid, float('nan')):.0f} MB before, "
                               f"peak {mb:.0f} MB" for pid, mb in sorted(rss_peak.items()))
            _report("DetectBench Web via Celery (2 worker processes)", requests, elapsed, None, server,
                    server_cpu_started, memory)
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    _assert_resolved_once(run, requests)

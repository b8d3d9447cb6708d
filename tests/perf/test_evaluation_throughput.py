"""Benchmark: 1,196 items, `naive`, server latency 200 ms, concurrency 64, vs the ideal N x latency / concurrency.

The goal is a wall time within 1.15x of the ideal. Like every speed goal here, it is measured, not
asserted: the benchmark prints the wall time, the ideal, their ratio, the CPU per request of the
client process and of the stand-in server (both on the same CPUs) and the load average; it asserts
only correctness (every item resolved once, none duplicated).

Also runs Inspect AI (`inspect-ai` from PyPI, in its own virtualenv at var/inspect-venv; see
tests/perf/inspect_bench.py) on the same prompts against the same stand-in server with --max-connections 64
and prints both times, and the inspect process's CPU per request and peak RSS. Without that virtualenv the
Inspect part is skipped with a message; set INSPECT_BENCH=1 to have this benchmark create it (python3 -m venv
+ pip install).

    make bench   # or: pytest tests/perf/test_evaluation_throughput.py -m perf -s
"""
from __future__ import annotations

import os
import time

import pytest

from evaluation.models import Result, RunStatus
from evaluation.selectors.run_record import run_record_counts
from evaluation.services import runs as services
from tests.perf.inspect_bench import SKIPPED, eval_cpu_s, inspect_python, inspect_version, naive_samples, run_inspect
from tests.support.items import import_items
from tests.support.model_server import start_server_process

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

LATENCY_S = 0.2
CONCURRENCY = 64
GOAL_RATIO = 1.15


def ms_per_request(cpu_s: float | None, n: int) -> str:
    return "n/a" if cpu_s is None else f"{cpu_s / n * 1000:.2f} ms"


def largest_burst(arrivals: list[float], window_s: float = 0.010) -> int:
    """The most requests that reached the server within any ``window_s`` (64 = the waves are synchronised)."""
    arrivals, best, j = sorted(arrivals), 0, 0
    for i, at in enumerate(arrivals):
        while arrivals[j] < at - window_s:
            j += 1
        best = max(best, i - j + 1)
    return best


def timeline(arrivals: list[float], started: float, elapsed: float) -> str:
    """Where the time beyond the ideal goes: start-up (to the first request), the requests, the end (from the
    last request's arrival to the run's end), and the least full 200 ms wave of arrivals (64 = every slot busy)."""
    arrivals = sorted(arrivals)
    waves = [0] * (int((arrivals[-1] - arrivals[0]) / LATENCY_S) + 1)
    for at in arrivals:
        waves[int((at - arrivals[0]) / LATENCY_S)] += 1
    return (f"first request +{(arrivals[0] - started) * 1000:.0f} ms, last request +{arrivals[-1] - started:.2f} s, "
            f"end +{elapsed:.2f} s; {len(waves)} waves of {LATENCY_S * 1000:.0f} ms, the least full of the first "
            f"{len(waves) - 1} holds {min(waves[:-1] or waves)}")


def assert_resolved_once(run, n: int) -> None:
    """Every item has exactly one row, answered, recorded (finish_reason, tokens spent) and parsed: the stand-in
    answers the first label, "1", a serial number alone, which the reader takes as that label even where another
    option's text is 1."""
    rows = Result.objects.filter(run=run)
    assert rows.count() == n
    assert rows.values("item_id", "sample_index").distinct().count() == n
    assert rows.filter(error="", parse_status="ok", answer_label="1").count() == n
    assert rows.filter(error="", finish_reason="stop", truncated=False, spent_tokens_out__gt=0).count() == n
    counts = run_record_counts(run=run)
    assert (counts["errors"], counts["cached"], counts["truncated"], counts["abandoned_requests"]) == (0, 0, 0, 0)


def test_throughput_1196_items_200ms_concurrency_64(detectbench_dir, tmp_path):
    n = import_items(detectbench_dir / "test.jsonl", split="test")
    assert n == 1196
    ideal = n * LATENCY_S / CONCURRENCY
    with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
        endpoint = services.endpoint_create(name="bench", base_url=server.base_url, model="stand-in",
                                            max_concurrency=CONCURRENCY, use_cache=False)
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
        load_before = os.getloadavg()
        server_cpu_started = server.cpu_seconds()
        started, cpu_started = time.monotonic(), time.process_time()
        services.run_execute_in_process(run=run)
        elapsed, cpu = time.monotonic() - started, time.process_time() - cpu_started
        server_cpu = server.cpu_seconds()
        server_cpu = None if server_cpu is None or server_cpu_started is None else server_cpu - server_cpu_started
        stats = server.stats()
        run.refresh_from_db()
        ratio = elapsed / ideal
        print(f"\nDetectBench Web: {n} items, naive, latency {LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY}: "
              f"wall {elapsed:.2f} s (run wall_s {run.wall_s:.2f} s), ideal {ideal:.2f} s, ratio {ratio:.3f} "
              f"(goal <= {GOAL_RATIO}: {'met' if ratio <= GOAL_RATIO else 'NOT met'})")
        print(f"  CPU per request: client process {ms_per_request(cpu, n)}, stand-in server {ms_per_request(server_cpu, n)}; "
              f"peak in flight {stats['peak_in_flight']}, requests {stats['requests']}, connections {stats['connections']}, "
              f"largest burst of arrivals in 10 ms {largest_burst(stats['arrivals'])} "
              f"(first {CONCURRENCY}: {largest_burst(sorted(stats['arrivals'])[:CONCURRENCY])}, spread over "
              f"{(sorted(stats['arrivals'])[CONCURRENCY - 1] - min(stats['arrivals'])) * 1000:.0f} ms); "
              f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
              f"after {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print(f"  timeline: {timeline(stats['arrivals'], started, elapsed)}")
        assert run.status == RunStatus.FINISHED
        assert_resolved_once(run, n)
        assert stats["requests"] == n

        if inspect_python() is None:
            print(SKIPPED)
        else:
            server.reset()
            inspect = run_inspect(tmp_path, server.base_url, naive_samples(run), max_connections=CONCURRENCY)
            inspect_stats = server.stats()
            print(f"Inspect AI {inspect_version()} (--max-connections {CONCURRENCY}): eval {inspect['eval_s']:.2f} s "
                  f"(whole process {inspect['process_s']:.2f} s), accuracy {inspect['accuracy']:.3f}, "
                  f"peak in flight {inspect_stats['peak_in_flight']}; its process: CPU per request "
                  f"{ms_per_request(eval_cpu_s(inspect), n)} within the eval ({ms_per_request(inspect['cpu_s'], n)} "
                  f"whole process), peak RSS {inspect['peak_rss_mb']:.0f} MB")
            print(f"Inspect AI eval time / DetectBench Web time: {inspect['eval_s'] / elapsed:.2f}x; "
                  f"DetectBench Web / ideal {ratio:.3f}, Inspect AI / ideal {inspect['eval_s'] / ideal:.3f}")
            assert inspect["samples"] == n


def test_throughput_through_two_celery_worker_processes(detectbench_dir, tmp_path):
    """The same load through Celery: two worker processes, one chunk each, sharing the endpoint's limit of 64."""
    from tests.conftest import start_celery_worker

    n = import_items(detectbench_dir / "test.jsonl", split="test")
    ideal = n * LATENCY_S / CONCURRENCY
    worker = start_celery_worker(tmp_path, concurrency=2)
    try:
        with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
            endpoint = services.endpoint_create(name="bench-celery", base_url=server.base_url, model="stand-in",
                                                max_concurrency=CONCURRENCY, use_cache=False)
            load_before = os.getloadavg()[0]
            server_cpu_started = server.cpu_seconds()
            started = time.monotonic()
            run = services.run_launch(endpoint=endpoint, method="naive", split="test")  # as the dashboard launches it
            while time.monotonic() - started < 120:
                run.refresh_from_db(fields=["status"])
                if run.status == RunStatus.FINISHED:
                    break
                time.sleep(0.05)
            elapsed = time.monotonic() - started
            server_cpu = server.cpu_seconds()
            server_cpu = None if server_cpu is None or server_cpu_started is None else server_cpu - server_cpu_started
            stats = server.stats()
    finally:
        worker.stop()
    run.refresh_from_db()
    ratio = elapsed / ideal
    print(f"\nDetectBench Web via Celery (2 worker processes): {elapsed:.2f} s from launch to finished "
          f"(run wall_s {run.wall_s:.2f} s), ideal {ideal:.2f} s, ratio {ratio:.3f} (goal <= {GOAL_RATIO}: "
          f"{'met' if ratio <= GOAL_RATIO else 'NOT met'}); stand-in server CPU {ms_per_request(server_cpu, n)} "
          f"per request; peak in flight {stats['peak_in_flight']}; load average {load_before:.2f} on {os.cpu_count()} CPUs")
    print(f"  timeline (from the launch): {timeline(stats['arrivals'], started, elapsed)}")
    assert run.status == RunStatus.FINISHED
    assert_resolved_once(run, n)
    assert stats["peak_in_flight"] <= CONCURRENCY

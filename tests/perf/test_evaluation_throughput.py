"""Benchmark: 1,196 items, `naive`, server latency 200 ms, concurrency 64, vs the ideal N x latency / concurrency.

The goal is a wall time within 1.15x of the ideal. Like every speed goal here, it is measured, not
asserted: the benchmark prints the wall time, the ideal, their ratio, the CPU per request of the
client process and of the stand-in server (both on the same CPUs) and the load average; it asserts
only correctness (every item resolved once, none duplicated).

Also runs Inspect AI (`inspect-ai` from PyPI, in its own virtualenv at var/inspect-venv)
on the same prompts against the same stand-in server with --max-connections 64 and
prints both times. Without that virtualenv the Inspect part is skipped with a message;
set INSPECT_BENCH=1 to have this benchmark create it (python3 -m venv + pip install).

    make bench   # or: pytest tests/perf/test_evaluation_throughput.py -m perf -s
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from annotation.models import Item
from evaluation.execution.chunks import item_view
from evaluation.models import Result, RunStatus
from evaluation.prompting.methods import get_method
from evaluation.prompting.prompts import present
from evaluation.selectors.run_record import run_record_counts
from evaluation.services import runs as services
from tests.support.items import import_items
from tests.support.model_server import start_server_process

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

REPO_DIR = Path(__file__).resolve().parent.parent.parent
INSPECT_VENV = Path(os.environ.get("INSPECT_VENV", REPO_DIR / "var" / "inspect-venv"))
LATENCY_S = 0.2
CONCURRENCY = 64
GOAL_RATIO = 1.15

INSPECT_TASK = '''
import json
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def detectbench_naive():
    with open({path!r}) as handle:
        records = [json.loads(line) for line in handle]
    return Task(dataset=[Sample(id=r["id"], input=r["input"], target=r["target"]) for r in records],
                solver=generate(), scorer=match(location="end"))
'''


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
    answers the first label, "1", which the reader calls ambiguous where another option's text is 1."""
    rows = Result.objects.filter(run=run)
    assert rows.count() == n
    assert rows.values("item_id", "sample_index").distinct().count() == n
    clashes = sum("1" in item.options[1:] for item in Item.objects.filter(pk__in=run.item_ids))
    assert rows.filter(error="", parse_status="ok").count() == n - clashes
    assert rows.filter(error="", finish_reason="stop", truncated=False, spent_tokens_out__gt=0).count() == n
    counts = run_record_counts(run=run)
    assert (counts["errors"], counts["cached"], counts["truncated"], counts["abandoned_requests"]) == (0, 0, 0, 0)


def inspect_python() -> Path | None:
    python = INSPECT_VENV / "bin" / "python"
    if (INSPECT_VENV / "bin" / "inspect").exists():
        return python
    if os.environ.get("INSPECT_BENCH") == "1":
        subprocess.run([sys.executable if sys.version_info >= (3, 10) else "python3", "-m", "venv", str(INSPECT_VENV)],
                       check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "inspect-ai", "openai"], check=True)
        return python
    return None


def run_inspect(tmp_path: Path, base_url: str, samples: list[dict]) -> dict:
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in samples))
    task = tmp_path / "inspect_task.py"
    task.write_text(INSPECT_TASK.format(path=str(data)))
    env = dict(os.environ, STANDIN_BASE_URL=base_url, STANDIN_API_KEY="not-needed", INSPECT_LOG_DIR=str(tmp_path / "logs"))
    started = time.monotonic()
    proc = subprocess.run(
        [str(INSPECT_VENV / "bin" / "inspect"), "eval", task.name, "--model", "openai-api/standin/stand-in",
         "--max-connections", str(CONCURRENCY), "--log-dir", str(tmp_path / "logs"), "--log-format", "json",
         "--display", "none", "--max-retries", "3"],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    process_s = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    log = json.loads(next((tmp_path / "logs").glob("*.json")).read_text())
    stats = log["stats"]
    eval_s = (datetime.fromisoformat(stats["completed_at"]) - datetime.fromisoformat(stats["started_at"])).total_seconds()
    accuracy = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    return {"eval_s": eval_s, "process_s": process_s, "accuracy": accuracy, "samples": len(samples)}


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

        python = inspect_python()
        if python is None:
            print(f"Inspect AI comparison skipped: no virtualenv at {INSPECT_VENV} "
                  "(set INSPECT_BENCH=1 to create it: python3 -m venv + pip install inspect-ai openai)")
        else:
            method = get_method("naive")
            samples = []
            for item in Item.objects.filter(pk__in=run.item_ids).order_by("pk"):
                shown = present(item_view(item), seed=run.seed, permute=False)
                samples.append({"id": item.pk, "input": method.messages(shown, ())[-1]["content"],
                                "target": shown.answer_label})
            server.reset()
            inspect = run_inspect(tmp_path, server.base_url, samples)
            inspect_stats = server.stats()
            print(f"Inspect AI (--max-connections {CONCURRENCY}): eval {inspect['eval_s']:.2f} s "
                  f"(whole process {inspect['process_s']:.2f} s), accuracy {inspect['accuracy']:.3f}, "
                  f"peak in flight {inspect_stats['peak_in_flight']}")
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
            run = services.run_launch(endpoint=endpoint, method="naive", split="test", chunk_size=-(-n // 2))
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

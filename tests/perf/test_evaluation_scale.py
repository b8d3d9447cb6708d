"""Benchmark: model runs at ten times the scale (issue 23). The whole test split (1,196 items), `naive`, with 10
samples per item (11,960 requests), at concurrency 256 against the stand-in answering in 50 ms: in one process,
then twice through two Celery worker processes sharing the endpoint's limit of 256 (the processes' first run,
then their next one).

Prints, beside the ideal (requests x latency / concurrency): wall time and ratio, client CPU per request, the
stand-in's CPU per request (both on the same 2 CPUs), peak in flight, the load average, the timeline (the first
and last request's arrival at the stand-in, from the launch; the least full wave), and the resident memory
of each process running the requests before the run and when 25, 50, 75 and 100% of the rows are written.
Asserts correctness (every (item, sample) resolved once, never more than 256 in flight) and that memory does
not grow with the rows: at most ``MAX_GROWTH_MB`` from 25% to 100% of the rows (rows are written as they
arrive; what a process loads once, at its first rows, is before the 25% mark: the SDK, and rouge-score with
nltk and scipy for the KeyInfo score, about 150 MB, at the first row written).

Then Inspect AI (tests/perf/inspect_bench.py; skipped with a message without its virtualenv, INSPECT_BENCH=1
creates it) on the same 11,960 requests: the 1,196 prompts our run sends, each for 10 epochs (Inspect's repeat
of a sample, scored each time: our samples per item, the same prompt in the original option order), against
its own stand-in process answering in 50 ms, --max-connections 256. It prints Inspect's eval wall and ratio,
the CPU per request of the inspect process and the stand-in, its RSS and peak RSS, and Inspect / ours for
what ran in the same session.

    make bench   # or: pytest tests/perf/test_evaluation_scale.py -m perf -s
"""
from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path

import pytest

from evaluation.execution import queueing
from evaluation.models import Result, RunStatus
from evaluation.services import runs as services
from tests.perf import inspect_bench
from tests.perf.test_evaluation_throughput import ms_per_request, timeline
from tests.support.items import import_items
from tests.support.model_server import start_server_process

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

LATENCY_S, CONCURRENCY, SAMPLES = 0.05, 256, 10
GOAL_RATIO = 1.15
MAX_GROWTH_MB = 30.0
MARKS = (25, 50, 75, 100)
INSPECT_TIMEOUT_S = 900
OURS: dict[str, tuple[float, float | None]] = {}  # this session's runs: (wall s, client CPU s), for Inspect / ours


def _rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _children(parent: int) -> dict[int, list[str]]:
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found[int(stat.parent.name)] = fields
    return found


def _children_rss_mb(parent: int) -> dict[int, float]:
    return {pid: _rss_mb(pid) for pid in _children(parent)}


def _children_cpu_s(parent: int) -> float:
    """CPU time (user + system) used so far by the child processes of ``parent`` (the worker's pool)."""
    return sum(int(f[11]) + int(f[12]) for f in _children(parent).values()) / os.sysconf("SC_CLK_TCK")


class MemoryMarks:
    """RSS of some processes when 25/50/75/100% of the run's rows are written (one count query per poll)."""

    def __init__(self, run, total: int, pids, before: dict[int, float] | None = None):
        self.run, self.total, self.pids = run, total, pids  # pids: a callable returning {pid: RSS MB}
        self.before = pids() if before is None else before
        self.at: dict[int, dict[int, float]] = {}

    def poll(self) -> None:
        written = Result.objects.filter(run=self.run).count()
        for mark in MARKS:
            if mark not in self.at and written * 100 >= mark * self.total:
                self.at[mark] = self.pids()

    def text(self) -> str:
        lines = []
        for pid in sorted(self.before):
            marks = ", ".join(f"{mark}% {self.at.get(mark, {}).get(pid, float('nan')):.0f}" for mark in MARKS)
            lines.append(f"process {pid}: RSS MB before {self.before[pid]:.0f}, at rows {marks}")
        return "; ".join(lines)

    def assert_bounded(self) -> None:
        for pid in self.before:
            growth = self.at[100][pid] - self.at[25][pid]
            assert growth < MAX_GROWTH_MB, f"process {pid} grew {growth:.0f} MB from 25% to 100% of the rows"


def _threads_cpu_s() -> dict[tuple[int, str], float]:
    """CPU time (user + system) so far of each thread of this process, by (native thread id, Python name)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    found = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tid = int(task.name)
        found[(tid, names.get(tid, ""))] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def _assert_resolved_once(run, n: int) -> None:
    rows = Result.objects.filter(run=run)
    assert rows.count() == n and rows.values("item_id", "sample_index").distinct().count() == n
    assert rows.filter(error="").count() == n


def _wall_to_finish(run, launched_at: float) -> float:
    """From ``launched_at`` (time.time()) to the moment the run was marked finished (its finished_at, on this machine's
    clock): the same end for both modes, whatever comes after it (closing threads, ending a task, a poll seeing it)."""
    run.refresh_from_db(fields=["status", "finished_at"])
    assert run.status == RunStatus.FINISHED, f"the run did not finish: {run.status}"
    return run.finished_at.timestamp() - launched_at


def _report(title: str, requests: int, elapsed: float, client_cpu: float | None, server, server_cpu_started,
            memory: str, load_before: float, started: float) -> None:
    ideal = requests * LATENCY_S / CONCURRENCY
    server_cpu = server.cpu_seconds()
    server_cpu = None if server_cpu is None or server_cpu_started is None else server_cpu - server_cpu_started
    stats = server.stats()
    ratio = elapsed / ideal
    print(f"\n{title}: {requests} requests, latency {LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY}: wall "
          f"{elapsed:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.2f} (goal <= {GOAL_RATIO}: "
          f"{'met' if ratio <= GOAL_RATIO else 'NOT met'}); {requests / elapsed:.0f} requests/s")
    print(f"  CPU per request: client {ms_per_request(client_cpu, requests)}, stand-in server "
          f"{ms_per_request(server_cpu, requests)}; peak in flight {stats['peak_in_flight']}; load average "
          f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs\n  memory: {memory}")
    print(f"  timeline (the stand-in's arrivals, from the launch): {timeline(stats['arrivals'], started, elapsed)}")
    assert stats["peak_in_flight"] <= CONCURRENCY


def test_12000_requests_at_concurrency_256_in_one_process(detectbench_dir):
    from evaluation.tasks import import_model_sdk

    import_model_sdk()  # as a worker process does at its start (the SDK and the ROUGE-L scorer): not on the clock
    try:
        _in_one_process(detectbench_dir)
    finally:
        gc.unfreeze()  # the worker's start froze this process's objects: later benchmarks get the collector back


def _in_one_process(detectbench_dir) -> None:
    n_items = import_items(detectbench_dir / "test.jsonl", split="test")
    requests = n_items * SAMPLES
    with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
        endpoint = services.endpoint_create(name="bench-12k", base_url=server.base_url, model="stand-in",
                                            max_concurrency=CONCURRENCY, use_cache=False)
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=SAMPLES, enqueue=False)
        memory = MemoryMarks(run, requests, lambda: {os.getpid(): _rss_mb()})
        finished, ready = threading.Event(), threading.Event()
        threads_before, threads_last = _threads_cpu_s(), {}

        def watch() -> None:  # a thread of this process: one count query every 0.2 s
            from django.db import connection

            try:
                memory.poll()  # its database connection is opened before the clock starts, not in the run's time
                ready.set()
                while not finished.wait(0.2):
                    memory.poll()
                    threads_last.update(_threads_cpu_s())  # the run's threads as last seen (they end with it)
                memory.poll()
            finally:
                connection.close()

        watcher = threading.Thread(target=watch, daemon=True)
        load_before, server_cpu_started = os.getloadavg()[0], server.cpu_seconds()
        watcher.start()
        ready.wait(30)
        started, launched_at, cpu_started = time.monotonic(), time.time(), time.process_time()
        services.run_execute_in_process(run=run)
        returned, cpu = time.monotonic() - started, time.process_time() - cpu_started
        elapsed = _wall_to_finish(run, launched_at)
        finished.set()
        watcher.join()
        threads_last.update(_threads_cpu_s())
        _report("DetectBench Web, one process", requests, elapsed, cpu, server, server_cpu_started, memory.text(),
                load_before, started)
        print(f"  (the run's finished_at; the call returned {returned:.2f} s after its start)")
        OURS["one process"] = (elapsed, cpu)
        by_thread = {}
        for (tid, name), seconds in threads_last.items():
            key = ("event loop" if tid == os.getpid() else "writing thread" if "-db" in name else
                   "reading thread" if "-read" in name else
                   "this benchmark's watcher" if tid == watcher.native_id else "other threads")
            by_thread[key] = by_thread.get(key, 0.0) + seconds - threads_before.get((tid, name), 0.0)
        print("  client CPU per request by thread: " + ", ".join(
            f"{key} {ms_per_request(seconds, requests)}" for key, seconds in sorted(by_thread.items())))
        assert server.stats()["requests"] == requests
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    _assert_resolved_once(run, requests)
    memory.assert_bounded()


def test_12000_requests_through_two_celery_worker_processes(detectbench_dir, tmp_path):
    """Twice through the same two worker processes: the first run on processes that have run nothing yet (each
    opens its database and Redis connections, plans its first jobs cold), the second as on a worker that has
    been up, the way runs usually meet it."""
    from tests.conftest import start_celery_worker, subprocess_env

    n_items = import_items(detectbench_dir / "test.jsonl", split="test")
    requests = n_items * SAMPLES
    # With the database connection pool, as the image runs its workers (docker/): the suite's default, no pool,
    # opened new PostgreSQL connections for each task and each of its threads.
    worker = start_celery_worker(tmp_path, concurrency=2, env=subprocess_env(DATABASE_POOL="1"))
    runs = []
    try:
        queueing.load_tasks()  # this process launches the runs as a web server does: with the task modules loaded
        with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
            endpoint = services.endpoint_create(name="bench-12k-celery", base_url=server.base_url, model="stand-in",
                                                max_concurrency=CONCURRENCY, use_cache=False)
            for title in ("first run of the worker processes", "next run (the same processes)"):
                runs.append(_through_celery(worker, server, endpoint, requests, title))
                server.reset()
    finally:
        worker.stop()
    for run, memory in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.FINISHED
        _assert_resolved_once(run, requests)
        memory.assert_bounded()


def _through_celery(worker, server, endpoint, requests: int, title: str):
    rss_before, workers_cpu_started = _children_rss_mb(worker.proc.pid), _children_cpu_s(worker.proc.pid)
    load_before, server_cpu_started = os.getloadavg()[0], server.cpu_seconds()
    started, launched_at = time.monotonic(), time.time()
    # Launched as the dashboard launches it: the default items per task, split evenly over the processes.
    run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=SAMPLES)
    memory = MemoryMarks(run, requests, lambda: _children_rss_mb(worker.proc.pid), before=rss_before)
    polled = 0.0
    while time.monotonic() - started < 600:
        run.refresh_from_db(fields=["status"])
        if run.status == RunStatus.FINISHED:
            break
        if time.monotonic() - polled >= 0.25:  # a count of the rows: a few ms of PostgreSQL's CPU each
            polled = time.monotonic()
            memory.poll()
        time.sleep(0.05)
    seen = time.monotonic() - started
    # The wall ends when the worker marked the run finished, not when this loop saw it: polling every 10 ms to see
    # the end sooner cost this process and PostgreSQL about a tenth of a core, taken from the run it measured.
    elapsed = _wall_to_finish(run, launched_at)
    memory.poll()
    workers_cpu = _children_cpu_s(worker.proc.pid) - workers_cpu_started  # both pool processes together
    _report(f"DetectBench Web via Celery (2 worker processes), {title}", requests, elapsed, workers_cpu, server,
            server_cpu_started, memory.text(), load_before, started)
    print(f"  (the run's finished_at; this benchmark's poll, every 50 ms, saw it {seen:.2f} s after the launch)")
    OURS[f"two Celery workers, {title}"] = (elapsed, workers_cpu)
    return run, memory


def test_inspect_ai_on_the_same_12000_requests(detectbench_dir, tmp_path):
    if inspect_bench.inspect_python() is None:
        pytest.skip(inspect_bench.SKIPPED)
    n_items = import_items(detectbench_dir / "test.jsonl", split="test")
    requests, ideal = n_items * SAMPLES, n_items * SAMPLES * LATENCY_S / CONCURRENCY
    with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
        endpoint = services.endpoint_create(name="bench-12k-prompts", base_url=server.base_url, model="stand-in",
                                            max_concurrency=CONCURRENCY, use_cache=False)
        # A run that is never executed: its items and options as our run shows them, for the prompts.
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", samples=SAMPLES, enqueue=False)
        samples = inspect_bench.naive_samples(run)
        load_before, server_cpu_started = os.getloadavg(), server.cpu_seconds()
        result = inspect_bench.run_inspect(tmp_path, server.base_url, samples, max_connections=CONCURRENCY,
                                           epochs=SAMPLES, log_format="eval", timeout_s=INSPECT_TIMEOUT_S)
        server_cpu = server.cpu_seconds()
        server_cpu = None if server_cpu is None or server_cpu_started is None else server_cpu - server_cpu_started
        stats = server.stats()
    arrivals = sorted(stats["arrivals"])
    ratio, cpu = result["eval_s"] / ideal, inspect_bench.eval_cpu_s(result)
    print(f"\nInspect AI {inspect_bench.inspect_version()}, one process (--max-connections {CONCURRENCY}, --epochs "
          f"{SAMPLES} of {len(samples)} samples, .eval log): {stats['requests']} requests, latency "
          f"{LATENCY_S * 1000:.0f} ms: eval wall {result['eval_s']:.0f} s (the log's started_at to completed_at, in "
          f"whole seconds; whole process {result['process_s']:.2f} s, first to last request "
          f"{arrivals[-1] - arrivals[0]:.2f} s), "
          f"ideal {ideal:.2f} s, ratio {ratio:.2f} (goal <= {GOAL_RATIO}: "
          f"{'met' if ratio <= GOAL_RATIO else 'NOT met'}); accuracy {result['accuracy']:.3f}, status "
          f"{result['status']}")
    print(f"  CPU per request: inspect process {ms_per_request(cpu, requests)} within the eval "
          f"({ms_per_request(result['cpu_s'], requests)} whole process: start-up and log included), stand-in server "
          f"{ms_per_request(server_cpu, requests)}; peak in flight {stats['peak_in_flight']}; load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)} before, {os.getloadavg()[0]:.2f} after, on "
          f"{os.cpu_count()} CPUs")
    rss_at = [inspect_bench.at(result["trace"], arrivals[len(arrivals) * mark // 100 - 1])[1] for mark in MARKS]
    marks = ", ".join(f"{mark}% {rss:.0f}" for mark, rss in zip(MARKS, rss_at, strict=True))
    first_rss = inspect_bench.at(result["trace"], arrivals[0])[1]
    print(f"  memory: inspect process RSS MB at the first request {first_rss:.0f}, when this share of the requests "
          f"had arrived {marks}; peak {result['peak_rss_mb']:.0f} (wait4)")
    for name, (wall, our_cpu) in OURS.items():
        print(f"  Inspect AI / DetectBench Web {name} (this session): wall {result['eval_s'] / wall:.2f}x, CPU per "
              f"request {'n/a' if not our_cpu else f'{cpu / our_cpu:.2f}x'}")
    assert result["status"] == "success"
    assert stats["requests"] == requests and stats["by_status"] == {"200": requests}
    assert stats["peak_in_flight"] <= CONCURRENCY

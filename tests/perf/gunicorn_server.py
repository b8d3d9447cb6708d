"""The image's gunicorn (docker/gunicorn.conf.py: sync workers, the app preloaded) on this machine, for the study
benchmarks: started on a free port against the test database, warmed up (every worker has served requests before
the figures are taken), with the CPU counters the benchmarks print (gunicorn workers, PostgreSQL backends, this
process) and the load average of the machine, which other work shares.

BENCH_WORKERS, BENCH_THREADS and BENCH_WORKER_CLASS override the image's setting (e.g. gthread with 2 threads).
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.db import connection

from tests.conftest import REPO_DIR, subprocess_env
from tests.perf.test_study_load import _cpu_seconds, _free_port, child_pids

WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
THREADS = int(os.environ.get("BENCH_THREADS", "1"))
WORKER_CLASS = os.environ.get("BENCH_WORKER_CLASS", "sync")


class ImageServer:
    def __init__(self, url: str, proc: subprocess.Popen):
        self.url, self.proc = url, proc

    def worker_pids(self) -> list[int]:
        return child_pids(self.proc.pid)

    def describe(self) -> str:
        return f"gunicorn {WORKERS} workers x {THREADS} threads ({WORKER_CLASS}, app preloaded, database pool)"


def start_image_server(log: Path) -> ImageServer:
    port = _free_port()
    env = subprocess_env(ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_POOL="1", DATABASE_POOL_MAX=str(THREADS),
                         DEBUG="0", LOG_LEVEL="ERROR")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(REPO_DIR / "docker" / "gunicorn.conf.py"),
         "detectbench_web.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(WORKERS),
         "--threads", str(THREADS), "--worker-class", WORKER_CLASS, "--backlog", "2048", "--access-logfile", "-"],
        cwd=REPO_DIR, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return ImageServer(url, proc)
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(log.read_text()[-2000:])


def stop(server: ImageServer) -> None:
    server.proc.terminate()
    server.proc.wait(timeout=30)


def warm_up(server: ImageServer, path: str, requests: int = 40) -> None:
    """Every worker serves a few pages (templates compiled, connections open) before anything is measured."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for _ in range(requests):
            assert client.get(path).status_code < 500


def postgres_pids() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return [row[0] for row in cursor.fetchall()]


@dataclass
class CpuMark:
    """CPU counters at one instant: the server's workers, the database's backends, this process (the client)."""

    workers: dict[int, float]
    postgres: dict[int, float]
    client: float
    at: float
    load: float

    @classmethod
    def take(cls, server: ImageServer, postgres: list[int]) -> CpuMark:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return cls(_cpu_seconds(server.worker_pids()), _cpu_seconds(postgres), usage.ru_utime + usage.ru_stime,
                   time.perf_counter(), os.getloadavg()[0])

    def used_since(self, before: CpuMark) -> dict[str, float]:
        def delta(after: dict[int, float], start: dict[int, float]) -> float:
            return sum(seconds - start.get(pid, 0.0) for pid, seconds in after.items())

        return {"gunicorn": delta(self.workers, before.workers), "postgres": delta(self.postgres, before.postgres),
                "client": self.client - before.client}


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p95/p99/max in ms (nearest rank)."""
    values = sorted(values)

    def rank(q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1000

    return {"p50": rank(0.5), "p95": rank(0.95), "p99": rank(0.99), "max": values[-1] * 1000,
            "mean": statistics.fmean(values) * 1000}

"""Helpers of the fault tests: a private Redis server that a test may restart, a Celery beat process,
publishing to another broker, and the figures of a run's rows."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Count

from tests.conftest import REPO_DIR, WorkerProcess, subprocess_env


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)  # as tests/support/waiting.py's wait_until
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def run_in_thread(run) -> threading.Thread:
    """The run computed in this process on a thread of its own (started; join it), which closes its database
    connections when it ends."""
    from django.db import connections

    from evaluation.services import runs as services

    def compute() -> None:
        try:
            services.run_execute_in_process(run=run)
        finally:
            connections.close_all()

    thread = threading.Thread(target=compute)
    thread.start()
    return thread


def terminate_other_connections() -> int:
    """pg_terminate_backend on every other connection to the test database (a worker's, a server's), not this
    test's own; how many were cut."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRedis:
    """A redis-server of the test's own (never the shared one), without persistence: a restart loses
    every key, as a crashed Redis without AOF does."""

    def __init__(self, tmp_path: Path, port: int | None = None):
        self.port = port or free_port()
        self.dir = tmp_path / f"redis-{self.port}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        log = (self.dir / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)], stdout=log, stderr=subprocess.STDOUT)
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        wait_for(lambda: _pings(client), 10, "the private redis-server to answer")
        client.close()
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self, down_s: float = 1.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()
        self.restarts += 1


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - not up yet
        return False


def start_beat(tmp_path: Path, *, env: dict | None = None) -> WorkerProcess:
    """A real `celery beat` process (its schedule file in tmp_path)."""
    log = tmp_path / f"beat-{uuid.uuid4().hex[:6]}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "detectbench_web", "beat", "--loglevel", "INFO",
         "--schedule", str(tmp_path / f"beat-schedule-{uuid.uuid4().hex[:6]}")],
        cwd=REPO_DIR, env=env or subprocess_env(), stdout=log.open("wb"), stderr=subprocess.STDOUT)
    beat = WorkerProcess("beat", proc, log)
    wait_for(lambda: proc.poll() is not None or "beat: Starting" in log.read_text(errors="replace"), 30,
             "celery beat to start")
    if proc.poll() is not None:
        raise RuntimeError(f"celery beat exited:\n{log.read_text()[-3000:]}")
    return beat


def enqueue_on(broker_url: str, run, item_ids: list[int]) -> None:
    """Publish a run's chunks to another broker than the test process's own (as services._enqueue does)."""
    from kombu import Connection

    from evaluation.tasks import run_chunk

    with Connection(broker_url) as connection:
        for start in range(0, len(item_ids), run.chunk_size):
            run_chunk.apply_async(args=(run.pk, item_ids[start:start + run.chunk_size]), connection=connection)


@dataclass
class RowFigures:
    rows: int
    pairs: int
    duplicates: int
    failed: int
    expected: int

    def __str__(self) -> str:
        return (f"rows {self.rows}/{self.expected}, distinct (item, sample) {self.pairs}, duplicates {self.duplicates}, "
                f"failed {self.failed}")


def row_figures(run) -> RowFigures:
    from evaluation.models import Result

    rows = Result.objects.filter(run=run)
    duplicates = rows.values("item_id", "sample_index").annotate(c=Count("pk")).filter(c__gt=1).count()
    return RowFigures(rows=rows.count(), pairs=rows.values("item_id", "sample_index").distinct().count(),
                      duplicates=duplicates, failed=rows.exclude(error="").count(), expected=run.total)


def assert_exactly_one_result_each_and_none_failed(run) -> RowFigures:
    from evaluation.models import Result

    run.refresh_from_db()
    figures = row_figures(run)
    assert figures.duplicates == 0, figures
    pairs = set(Result.objects.filter(run=run).values_list("item_id", "sample_index"))
    assert pairs == {(i, s) for i in run.item_ids for s in range(run.rows_per_item)}, figures
    failed = list(Result.objects.filter(run=run).exclude(error="").values_list("error", flat=True)[:3])
    assert not failed, f"{figures.failed} failed row(s), e.g. {failed}"
    return figures


def received_count(log: Path, task: str = "evaluation.tasks.run_chunk") -> int:
    """How many times a worker's log says it received a message of this task (a chunk of a run that no longer
    exists, left in the broker by an earlier test, is dropped at once and not counted)."""
    lines = log.read_text(errors="replace").splitlines()
    dropped = {line.split(f"Task {task}[", 1)[1].split("]", 1)[0] for line in lines
               if f"Task {task}[" in line and "succeeded" in line and "'dropped': True" in line}
    return sum(1 for line in lines if f"Task {task}[" in line and "received" in line
               and line.split(f"Task {task}[", 1)[1].split("]", 1)[0] not in dropped)

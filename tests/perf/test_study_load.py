"""Benchmark: 100 bots against gunicorn + PostgreSQL on this 2-core machine; question page and answer submit.

Run: make bench (or pytest tests/perf/test_study_load.py -m perf -s). Two runs against one server:

(a) saturation: 100 bots with no pause between requests (closed loop). Shows capacity (req/s); the
    latency there is mostly queueing: with 100 requests always in flight, latency ~= 100 / throughput,
    so no server on 2 cores can answer it in 50 ms.
(b) participants: 100 bots that read before each answer (seeded random 1-3 s; a real participant reads
    a ~190-word story for far longer). Its p50/p95 is the figure to compare with the 50 ms goal.

For each run it prints the latency the bots saw, the server's own service time per request (gunicorn
access log, %(D)s: from the request handed to a worker thread to the response written; excludes the time
waiting for a thread), throughput, and the CPU used by the bots, the gunicorn workers and PostgreSQL
(the bots run on the same 2 cores and compete with the server). Asserts correctness and SQL statements
per request (<= 8), never timings.
"""
from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from studies.models import Attempt, AttemptStatus, Response, StudyStatus
from studies.services import attempt_start, study_create, study_join
from tests.conftest import REPO_DIR, subprocess_env
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

BOTS = 100
THINK_SECONDS = (1.0, 3.0)
# Measured on 2 cores: sync workers beat gthread here. A gthread worker keeps each bot's keep-alive
# connection, so requests queue behind a busy worker while another sits idle, and its threads queue for
# the GIL after every database round trip (up to 5 ms each); a sync worker takes the next connection
# only when free, and a few of them overlap one another's database waits.
WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
THREADS = int(os.environ.get("BENCH_THREADS", "1"))
WORKER_CLASS = os.environ.get("BENCH_WORKER_CLASS", "sync")
POOL = os.environ.get("BENCH_DATABASE_POOL", "1")  # 0: a new PostgreSQL connection per request (for comparison)
ACCESS_FORMAT = "%(m)s %(U)s %(s)s %(D)s"
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (a server's workers), read from /proc."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            pids.append(int(stat.parent.name))
    return pids


class Server:
    def __init__(self, url: str, proc: subprocess.Popen, access_log: Path):
        self.url, self.proc, self.access_log = url, proc, access_log

    def log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def service_times(self, since: int) -> dict[str, list[float]]:
        """Server-side service time (ms) of the requests logged after byte `since`, by kind."""
        with self.access_log.open("rb") as f:
            f.seek(since)
            lines = f.read().decode().splitlines()
        kinds: dict[str, list[float]] = {"question": [], "answer": [], "other": []}
        for line in lines:
            parts = line.split()
            if len(parts) != 4:
                continue
            method, path, _status, micros = parts
            if method == "GET" and re.fullmatch(r"/s/a/[^/]+/", path):
                kind = "question"
            elif method == "POST" and path.endswith("/answer/"):
                kind = "answer"
            else:
                kind = "other"
            kinds[kind].append(int(micros) / 1000)
        return kinds

    def worker_pids(self) -> list[int]:
        return child_pids(self.proc.pid)


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    log, access_log = tmp_path / "gunicorn.log", tmp_path / "access.log"
    # The pool keeps one connection per thread open: without it every request pays a new PostgreSQL backend.
    env = subprocess_env(ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_POOL=POOL, DATABASE_POOL_MAX=str(THREADS),
                         DEBUG="0", LOG_LEVEL="ERROR")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "detectbench_web.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(WORKERS), "--threads", str(THREADS), "--worker-class", WORKER_CLASS, "--backlog", "256",
         "--keep-alive", "5", "--access-logfile", str(access_log), "--access-logformat", ACCESS_FORMAT],
        cwd=REPO_DIR, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.terminate()
        raise RuntimeError(log.read_text()[-2000:])
    yield Server(url, proc, access_log)
    proc.terminate()
    proc.wait(timeout=20)


def _cpu_seconds(pids) -> dict[int, float]:
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime + stime
    return out


def _postgres_pids() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return [row[0] for row in cursor.fetchall()]


def _used(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(after[pid] - before.get(pid, 0.0) for pid in after)


def _query_counts(study) -> dict[str, int]:
    """SQL statements (BEGIN and COMMIT included) of the same views, through the test client."""
    client = Client()
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="query-counter").pk)
    url = reverse("studies_public:attempt", args=[attempt.token])
    client.get(url)
    with CaptureQueriesContext(connection) as page_q:
        page = client.get(url).content.decode()
    position = re.search(r'data-position="(\d+)"', page).group(1)
    with CaptureQueriesContext(connection) as answer_q:
        client.post(reverse("studies_public:answer", args=[attempt.token]),
                    {"position": position, "chosen_option": 0, "highlights": "[]"}, HTTP_HX_REQUEST="true")
    return {"question_page": len(page_q.captured_queries), "answer_submit": len(answer_q.captured_queries)}


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def _run_bots(server: Server, slug: str, think: tuple[float, float] | None) -> dict:
    """Run the bots as a separate process (like a real client); return their summary plus server figures."""
    offset = server.log_offset()
    workers = server.worker_pids()
    cpu_before = {**_cpu_seconds(workers), **_cpu_seconds(_postgres_pids())}
    command = [sys.executable, "manage.py", "run_study_bots", "--study", slug, "--participants", str(BOTS),
               "--concurrency", str(BOTS), "--base-url", server.url, "--json", "--id-prefix", slug]
    if think:
        command += ["--think", str(think[0]), str(think[1])]
    run = subprocess.run(command, cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    server_cpu = _used({p: cpu_before.get(p, 0.0) for p in workers}, _cpu_seconds(workers))
    pg_after = _cpu_seconds(_postgres_pids())
    summary["server_cpu_seconds"] = server_cpu
    summary["postgres_cpu_seconds"] = _used({p: cpu_before.get(p, 0.0) for p in pg_after}, pg_after)
    summary["service_ms"] = server.service_times(offset)
    return summary


def _report(title: str, summary: dict) -> None:
    lat, wall = summary["latency"], summary["wall_seconds"]
    requests = sum(f["n"] for f in lat.values())
    service = summary["service_ms"]
    print(f"\n{title}: {requests} requests in {wall:.1f} s = {requests / wall:.0f} req/s")
    print("  latency seen by the bots (queueing + service):")
    for kind in ("landing", "join", "start", "question", "answer"):
        f = lat[kind]
        print(f"    {kind:>9}: n={f['n']:5d}  p50={f['p50_ms']:7.1f} ms  p95={f['p95_ms']:7.1f} ms  max={f['max_ms']:7.1f} ms")
    print("  server service time (gunicorn %(D)s, excludes waiting for a worker thread):")
    for kind in ("question", "answer"):
        values = service[kind]
        print(f"    {kind:>9}: n={len(values):5d}  p50={statistics.median(values):7.1f} ms  "
              f"p95={_pct(values, 0.95):7.1f} ms  mean={statistics.fmean(values):6.1f} ms")
    cpu = {"bots (client)": summary["client_cpu_seconds"], "gunicorn workers": summary["server_cpu_seconds"],
           "postgres backends": summary["postgres_cpu_seconds"]}
    print("  CPU used (2 cores = " + f"{2 * wall:.0f} core-s available): "
          + ", ".join(f"{name} {seconds:.1f} s ({1000 * seconds / requests:.1f} ms/req)" for name, seconds in cpu.items()))
    for kind in ("question", "answer"):
        p95 = lat[kind]["p95_ms"]
        print(f"  goal p95 < 50 ms, {kind}: {'met' if p95 < 50 else 'NOT met'} ({p95:.1f} ms)")


def test_hundred_bots_against_gunicorn(server, detectbench_dir):
    ids = import_items(detectbench_dir, 250)
    # 250 items x 6 raters = 1,500 = 100 participants x 15: every bot gets a full attempt (+1 for counting).
    saturation = study_create(slug="saturation", item_ids=ids, per_participant=15, raters=6, time_limit_seconds=3600,
                              status=StudyStatus.OPEN, completion_code="BENCH")
    saturation.pool.update(quota=7)  # room for the query-count attempt
    participants = study_create(slug="participants", item_ids=ids, per_participant=15, raters=6,
                                time_limit_seconds=3600, status=StudyStatus.OPEN, completion_code="BENCH")
    counts = _query_counts(saturation)

    print(f"\n{BOTS} bots vs gunicorn ({WORKERS} workers x {THREADS} threads, {WORKER_CLASS}, pool {POOL}) + PostgreSQL, "
          f"{os.cpu_count()} cores, load average before: {os.getloadavg()[0]:.1f}")
    closed = _run_bots(server, "saturation", think=None)
    _report("(a) saturation, no pause between requests (capacity; latency here is queueing)", closed)
    reading = _run_bots(server, "participants", think=THINK_SECONDS)
    _report(f"(b) {BOTS} participants reading {THINK_SECONDS[0]:g}-{THINK_SECONDS[1]:g} s before each answer "
            "(compare with the goal)", reading)
    print(f"\n  SQL statements per request (BEGIN/COMMIT included): question page {counts['question_page']}, "
          f"answer submit {counts['answer_submit']}")

    for summary, study in ((closed, saturation), (reading, participants)):
        assert summary["outcomes"] == {"complete": BOTS}, summary.get("errors")
        assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() >= BOTS
    assert Response.objects.filter(attempt__study=saturation).count() == BOTS * 15 + 1
    assert Response.objects.filter(attempt__study=participants).count() == BOTS * 15
    assert counts["question_page"] <= 8 and counts["answer_submit"] <= 8

"""Fault test against the production stack: gunicorn with Django's connection pool, 30 bots answering, and the
test database's connections terminated every 0.2 s (idle pooled connections die too, not only busy ones).

Run: pytest tests/perf/test_study_faults.py -m perf -s. Prints the time of a fault-free run and of the faulty
one, answers acknowledged vs stored, requests the server retried on a new connection and the 5xx participants
saw. Asserts every acknowledged answer stored, no HTTP 500, every bot finished.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections import Counter

import httpx
import pytest
from django.db import connection

from studies.management.bots import run_bots, summarize
from studies.models import Attempt, AttemptStatus, Response, StudyStatus
from studies.services import study_create
from tests.conftest import REPO_DIR, subprocess_env
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

BOTS, PER_PARTICIPANT, KILL_EVERY = 30, 4, 0.2
#: Participants think 0.2-0.6 s per question, so that the run lasts a few seconds: ten and more rounds of kills.
THINK_S = (0.2, 0.6)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pooled_server(tmp_path):
    port, log = _free_port(), tmp_path / "gunicorn.log"
    env = subprocess_env(ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_POOL="1", DATABASE_POOL_MAX="4", DEBUG="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "detectbench_web.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--threads", "4", "--worker-class", "gthread", "--keep-alive", "5"],
        cwd=REPO_DIR, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.terminate()
        raise RuntimeError(log.read_text()[-2000:])
    yield url, log
    proc.terminate()
    proc.wait(timeout=20)


def _terminate_backends() -> int:
    """Terminate every other connection to this test database (never another database's)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                       " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def _run(url: str, slug: str, *, fault: bool) -> tuple[list, list[int], float]:
    stop, kills = threading.Event(), []

    def killer():
        from django.db import connection as own

        try:
            while not stop.wait(KILL_EVERY):
                kills.append(_terminate_backends())
        finally:
            own.close()

    thread = threading.Thread(target=killer) if fault else None
    began = time.monotonic()
    if thread:
        thread.start()
    try:
        results = run_bots(url, slug, BOTS, concurrency=BOTS, think=THINK_S, id_prefix=slug)
    finally:
        stop.set()
        if thread:
            thread.join()
        connection.close()  # this thread's connection was terminated too
    return results, kills, time.monotonic() - began


def test_terminated_connections_with_the_pool_while_30_bots_answer(pooled_server, detectbench_dir):
    assert connection.settings_dict["NAME"].startswith("test_")  # only ever the test database
    url, log = pooled_server
    ids = import_items(detectbench_dir, 80)
    studies = {name: study_create(slug=name, item_ids=ids[i * 40:(i + 1) * 40], status=StudyStatus.OPEN,
                                  per_participant=PER_PARTICIPANT, raters=3, time_limit_seconds=900)
               for i, name in enumerate(("calm", "faulty"))}
    _, _, calm_seconds = _run(url, "calm", fault=False)
    results, kills, took = _run(url, "faulty", fault=True)
    summary = summarize(results)
    study = studies["faulty"]
    acknowledged = {(r.token, p) for r in results for p in r.acknowledged}
    stored = set(Response.objects.filter(attempt__study=study).values_list("attempt__token", "lease__position"))
    seen = Counter()
    for r in results:
        seen.update(r.server_errors)
    retried = log.read_text(errors="replace").count("retrying once")
    print(f"\ngunicorn + pool, {BOTS} bots: fault-free {calm_seconds:.1f} s; connections terminated {len(kills)} "
          f"times ({sum(kills)} backends) -> {took:.1f} s; answers acknowledged {len(acknowledged)}, stored "
          f"{len(stored)}; requests retried on a new connection {retried}; 5xx seen by participants "
          f"{dict(seen) or 0}; outcomes {summary['outcomes']}")
    assert len(kills) >= 10 and sum(kills) > 0, kills  # the faults went on through the run
    assert acknowledged <= stored, f"acknowledged but not stored: {sorted(acknowledged - stored)[:5]}"
    assert 500 not in seen, f"participants saw {seen[500]} HTTP 500s"
    assert summary["outcomes"] == {"complete": BOTS}, [u["message"] for u in summary["unfinished"]][:5]
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == BOTS
    assert len(stored) == BOTS * PER_PARTICIPANT

"""Benchmark: 100 concurrent bots against gunicorn + PostgreSQL; p50/p95 of question page and answer submit.

Run: make bench (or pytest tests/perf/test_study_load.py -m perf -s). Prints figures; asserts only
correctness and the SQL query counts per request (<= 8), never timings.
"""
from __future__ import annotations

import json
import socket
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

from studies.models import Attempt, AttemptStatus, Response
from studies.services import attempt_start, study_create, study_join
from tests.conftest import REPO_DIR, subprocess_env
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

BOTS = 100


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gunicorn_url(tmp_path):
    port = _free_port()
    log = tmp_path / "gunicorn.log"
    env = subprocess_env(ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_POOL_MAX="4", DEBUG="0", LOG_LEVEL="ERROR")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "detectbench_web.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "4", "--threads", "4", "--worker-class", "gthread", "--backlog", "256"],
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
    yield url
    proc.terminate()
    proc.wait(timeout=20)


def _sql_count(captured) -> int:
    """Every statement the request sends, BEGIN and COMMIT included."""
    return len(captured.captured_queries)


def _query_counts(study) -> dict[str, int]:
    """SQL statements of the same views, through the test client."""
    client = Client()
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="query-counter").pk)
    url = reverse("studies_public:attempt", args=[attempt.token])
    client.get(url)
    with CaptureQueriesContext(connection) as page_q:
        page = client.get(url).content.decode()
    import re

    position = re.search(r'data-position="(\d+)"', page).group(1)
    with CaptureQueriesContext(connection) as answer_q:
        client.post(reverse("studies_public:answer", args=[attempt.token]),
                    {"position": position, "chosen_option": 0, "highlights": "[]"}, HTTP_HX_REQUEST="true")
    return {"question_page": _sql_count(page_q), "answer_submit": _sql_count(answer_q)}


def test_hundred_concurrent_bots_against_gunicorn(gunicorn_url, detectbench_dir):
    ids = import_items(detectbench_dir, 250)
    # 250 items x 6 raters = 1,500 = 100 participants x 15: every bot gets a full attempt (plus one for counting).
    study = study_create(slug="bench", item_ids=ids, per_participant=15, raters=6, time_limit_seconds=3600,
                         status="open", completion_code="BENCH")
    study.pool.update(quota=7)  # room for the query-count attempt
    counts = _query_counts(study)
    began = time.monotonic()
    run = subprocess.run(
        [sys.executable, "manage.py", "run_study_bots", "--study", "bench", "--participants", str(BOTS),
         "--concurrency", str(BOTS), "--base-url", gunicorn_url, "--json"],
        cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=600,
    )
    wall = time.monotonic() - began
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    lat = summary["latency"]
    print(f"\n{BOTS} concurrent bots vs gunicorn (4 workers x 4 threads, gthread) + PostgreSQL, wall {wall:.1f} s")
    for kind in ("landing", "join", "start", "question", "answer"):
        f = lat[kind]
        print(f"  {kind:>9}: n={f['n']:5d}  p50={f['p50_ms']:7.1f} ms  p95={f['p95_ms']:7.1f} ms  max={f['max_ms']:7.1f} ms")
    print(f"  SQL per request: question page {counts['question_page']}, answer submit {counts['answer_submit']}")
    print(f"  goal p95 < 50 ms: question {'met' if lat['question']['p95_ms'] < 50 else 'NOT met'}, "
          f"answer {'met' if lat['answer']['p95_ms'] < 50 else 'NOT met'}")
    assert summary["outcomes"] == {"complete": BOTS}, summary.get("errors")
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == BOTS
    assert Response.objects.filter(attempt__study=study).count() == BOTS * 15 + 1
    assert counts["question_page"] <= 8 and counts["answer_submit"] <= 8

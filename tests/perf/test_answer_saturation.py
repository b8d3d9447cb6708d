"""Benchmark: saturation of the answer path (issue 23). Participants who have started answer their 15 questions as
fast as the server lets them: each answer is the htmx POST that stores it and returns the next question, as a
participant's browser sends it (a highlight of one sentence of the story, an option, a confidence). Against the
image's gunicorn (docker/gunicorn.conf.py: 4 sync workers, the app preloaded, warmed up) on PostgreSQL on this 2-core
machine, the client on the same cores.

Prints the answers per second, the latency of an answer p50/p95/p99/max (at saturation mostly queueing), the CPU per
answer of the gunicorn workers, PostgreSQL and the client, and the load average (other work shares the machine).
BENCH_REPEAT (default 2) repeats the measurement with fresh participants; BENCH_CONCURRENCY (default 16) is how many
answers are in flight. Goal: >= 300 answers/s. Asserts every answer stored and none refused (never timings).

Run: `pytest tests/perf/test_answer_saturation.py -m perf -s` (make bench).
"""
from __future__ import annotations

import json
import os
import queue
import random
import re
import threading
import time
from urllib.parse import urlencode

import pytest

from studies.management.bots import Browser, parse_question, pick_highlight
from studies.models import Attempt, AttemptStatus, Response, StudyStatus
from studies.services import attempt_start, study_create, study_join
from tests.perf.gunicorn_server import CpuMark, percentiles, postgres_pids, start_image_server, stop, warm_up
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

PARTICIPANTS, QUESTIONS = 120, 15
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "16"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "2"))
GOAL_PER_SECOND = 300
_CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _answer_all(url: str, token: str, rng: random.Random, timings: list[float]) -> int:
    """Open the attempt's page (the first question), then answer until the end; returns the answers accepted."""
    browser = Browser(url, timeout=60)
    try:
        page = browser.request("GET", f"/s/a/{token}/")
        csrf = browser.cookies.get("csrftoken") or _CSRF_RE.search(page.text).group(1)
        question, accepted = parse_question(page.text), 0
        while question is not None:
            data = {"csrfmiddlewaretoken": csrf, "position": str(question.position),
                    "chosen_option": str(rng.randrange(max(1, question.n_options))),
                    "confidence": str(rng.randint(1, 5)),
                    "highlights": json.dumps(pick_highlight(question.context, rng))}
            began = time.perf_counter()
            page = browser._send("POST", f"/s/a/{token}/answer/", _form(data),
                                 {"X-CSRFToken": csrf, "HX-Request": "true", "Content-Type":
                                  "application/x-www-form-urlencoded"})
            timings.append(time.perf_counter() - began)
            if page.status_code not in (200, 204):
                raise AssertionError(f"answer refused: HTTP {page.status_code} {page.text[:200]}")
            accepted += 1
            question = parse_question(page.text) if page.status_code == 200 else None
        return accepted
    finally:
        browser.close()


def _form(data: dict) -> bytes:
    return urlencode(data).encode()


def _saturate(server, study, run: int) -> dict:
    tokens = [attempt_start(attempt_id=study_join(study=study, participant_id=f"sat-{run}-{i}").pk).token
              for i in range(PARTICIPANTS)]
    assert Attempt.objects.filter(token__in=tokens, status=AttemptStatus.STARTED).count() == PARTICIPANTS
    work: queue.Queue[str] = queue.Queue()
    for token in tokens:
        work.put(token)
    timings: list[float] = []
    accepted, errors = [], []
    postgres = postgres_pids()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while True:
            try:
                token = work.get_nowait()
            except queue.Empty:
                return
            try:
                accepted.append(_answer_all(server.url, token, rng, timings))
            except Exception as error:  # noqa: BLE001 - reported by the assertion below
                errors.append(repr(error))

    before = CpuMark.take(server, postgres)
    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(CONCURRENCY)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    after = CpuMark.take(server, postgres + [p for p in postgres_pids() if p not in postgres])
    assert not errors, errors[:3]
    assert sum(accepted) == PARTICIPANTS * QUESTIONS
    assert Response.objects.filter(attempt__token__in=tokens).count() == PARTICIPANTS * QUESTIONS
    assert Attempt.objects.filter(token__in=tokens, status=AttemptStatus.FINISHED).count() == PARTICIPANTS
    wall = after.at - before.at
    used = after.used_since(before)
    # Each participant's first page is part of the run (1 request in 16) but not counted: answers/s and CPU per answer
    # are a little conservative.
    requests = len(timings)
    return {"answers": requests, "wall": wall, "per_second": requests / wall, **percentiles(timings),
            **{f"cpu_{k}_ms": v / requests * 1000 for k, v in used.items()}, "load_before": before.load,
            "load_after": after.load}


def test_answer_path_saturation(detectbench_dir, tmp_path):
    ids = import_items(detectbench_dir, 250)
    # 250 items x 16 raters = 4,000 answers: room for 266 participants of 15, REPEAT x 120 of them here.
    study = study_create(slug="saturation", item_ids=ids, per_participant=QUESTIONS, raters=16,
                         time_limit_seconds=3600, status=StudyStatus.OPEN, completion_code="BENCH")
    server = start_image_server(tmp_path / "gunicorn.log")
    try:
        warm_up(server, f"/s/{study.slug}/")
        _answer_all(server.url, attempt_start(attempt_id=study_join(study=study, participant_id="warm").pk).token,
                    random.Random(0), [])
        print(f"\nAnswer path saturation: {PARTICIPANTS} participants x {QUESTIONS} answers, {CONCURRENCY} in flight, "
              f"against {server.describe()} + PostgreSQL, {os.cpu_count()} cores (client on the same cores)")
        for run in range(REPEAT):
            f = _saturate(server, study, run)
            print(f"  run {run + 1} of {REPEAT}: {f['answers']} answers in {f['wall']:.1f} s = {f['per_second']:.0f}/s; "
                  f"latency p50 {f['p50']:.1f} ms, p95 {f['p95']:.1f} ms, p99 {f['p99']:.1f} ms, max {f['max']:.0f} ms; "
                  f"CPU per answer: gunicorn {f['cpu_gunicorn_ms']:.2f} ms, PostgreSQL {f['cpu_postgres_ms']:.2f} ms, "
                  f"client {f['cpu_client_ms']:.2f} ms; load average {f['load_before']:.1f} -> {f['load_after']:.1f}; "
                  f"goal >= {GOAL_PER_SECOND}/s {'met' if f['per_second'] >= GOAL_PER_SECOND else 'NOT met'}")
    finally:
        stop(server)

"""Benchmark: a class starting at once (issue 23). N participants (100, then 300) join a study over the real
DetectBench items and press Start in the same instant (a barrier), each then loading the first question, against
gunicorn (the image's 4 sync workers) on PostgreSQL on this 2-core machine.

Run: make bench, or `pytest tests/perf/test_class_start.py -m perf -s`. Prints, per class size: the latency of
Start (the POST and the first question it redirects to) p50/p95/p99/max, starts per second, and the CPU of the
gunicorn workers and PostgreSQL per start. Asserts the exact quotas (never timings): every started participant
holds 15 distinct items, no item is held by more than its 3 raters, and the loads equal the leases.

Study: 15 questions per participant, 3 raters per item, over the test and train splits (1,563 items: room for
312 participants), so that all 300 of the larger class get a place.
"""
from __future__ import annotations

import time
from collections import Counter

import pytest
from django.db.models import Sum

from annotation.models import Item
from studies.management.bots import run_bots, summarize
from studies.models import Attempt, AttemptStatus, ParticipantLease, StudyItem, StudyStatus
from studies.services import study_create
from tests.perf.test_study_load import _cpu_seconds, _pct, _postgres_pids, _used, server  # noqa: F401 - fixture
from tests.support.items import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

PER_PARTICIPANT, RATERS = 15, 3


def _class_start(gunicorn, slug: str, n: int, item_ids: list[int]) -> None:
    study = study_create(slug=slug, item_ids=item_ids, status=StudyStatus.OPEN, per_participant=PER_PARTICIPANT,
                         raters=RATERS, time_limit_seconds=3600, completion_code="CLASS")
    workers = gunicorn.worker_pids()
    before = {**_cpu_seconds(workers), **_cpu_seconds(_postgres_pids())}
    began = time.monotonic()
    results = run_bots(gunicorn.url, slug, n, start_together=True, stop_after=0, id_prefix=slug)
    wall = time.monotonic() - began
    pg = _postgres_pids()
    server_cpu = _used({p: before.get(p, 0.0) for p in workers}, _cpu_seconds(workers))
    pg_cpu = _used({p: before.get(p, 0.0) for p in pg}, _cpu_seconds(pg))
    summary = summarize(results)
    starts = sorted(t for r in results for t in r.timings["start"])
    started = [r for r in results if r.outcome == "stopped" and r.answered == 0]
    print(f"\n{n} participants pressing Start at once ({len(item_ids)} items, {PER_PARTICIPANT} each, "
          f"{RATERS} raters): start + first question p50 {_pct(starts, 0.5) * 1000:.0f} ms, "
          f"p95 {_pct(starts, 0.95) * 1000:.0f} ms, p99 {_pct(starts, 0.99) * 1000:.0f} ms, "
          f"max {starts[-1] * 1000:.0f} ms; {n / (starts[-1] or 1):.0f} starts/s over the burst; "
          f"CPU per start: gunicorn {server_cpu / n * 1000:.1f} ms, PostgreSQL {pg_cpu / n * 1000:.1f} ms "
          f"(whole swarm incl. joins {wall:.1f} s; outcomes {summary['outcomes']}; 5xx {summary['server_errors']})")
    # Exact quotas: every place taken holds its 15 distinct items; no item above its raters; loads equal leases.
    assert len(started) == n, [(r.outcome, r.message) for r in results if r not in started][:5]
    assert summary["server_errors"] == {}
    held = Counter(ParticipantLease.objects.filter(attempt__study=study).values_list("attempt_id", flat=True))
    assert len(held) == n and set(held.values()) == {PER_PARTICIPANT}
    for attempt_id in held:
        assert ParticipantLease.objects.filter(attempt_id=attempt_id).values("item_id").distinct().count() == 15
    loads = dict(StudyItem.objects.filter(study=study).values_list("item_id", "load"))
    per_item = Counter(ParticipantLease.objects.filter(attempt__study=study).values_list("item_id", flat=True))
    assert max(loads.values()) <= RATERS and {k: v for k, v in loads.items() if v} == dict(per_item)
    assert StudyItem.objects.filter(study=study).aggregate(s=Sum("load"))["s"] == n * PER_PARTICIPANT
    assert Attempt.objects.filter(study=study, status=AttemptStatus.STARTED).count() == n


def test_a_class_of_100_then_300_starting_at_once(server, detectbench_dir):  # noqa: F811 - the imported fixture
    import_items(detectbench_dir / "test.jsonl", split="test")
    import_items(detectbench_dir / "train.jsonl", split="train")
    item_ids = list(Item.objects.order_by("pk").values_list("pk", flat=True))
    assert len(item_ids) * RATERS >= 300 * PER_PARTICIPANT
    _class_start(server, "class-100", 100, item_ids)
    _class_start(server, "class-300", 300, item_ids)

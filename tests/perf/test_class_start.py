"""Benchmark: a class starting at once (issue 23). N participants (100, then 300) have joined a study over the real
DetectBench items; then they press Start, each getting the first question (Start's answer), against the image's
gunicorn (docker/gunicorn.conf.py: 4 sync workers, the app preloaded, warmed up) on PostgreSQL on this 2-core machine.

Two arrivals: "at once" (a barrier: every Start in the same instant, the harshest) and "within one second" (the
Starts spread evenly over one second, a class told "go"). For each it prints the latency of Start (the POST, whose
answer is the first question) p50/p95/p99/max, starts per second over the burst, the CPU per start of the gunicorn
workers, PostgreSQL and the client (the bots run on the same 2 cores) and the load average (other work shares the
machine). BENCH_REPEAT (default 2) repeats every measurement on a fresh study.

Then the same class with nothing done before: each participant opens the study's link, consents (joins) as the
page's form does (answered with the attempt's page: the instructions and Start) and presses Start, all of them at
once or spread over one second; the latency printed is from opening the link to the first question, the CPU is per
participant (three requests). The goals are the start's. Last, 300 within one second again with the consent sent
as a script builds it (only the ids, without the form's field: redirected to the attempt's page, four requests).

Run: `pytest tests/perf/test_class_start.py -m perf -s` (make bench). Asserts the exact quotas (never timings): every
participant started with 15 distinct items, loads equal leases, and the loads stay level (water filling: no item
more than one rater ahead of another, none above its 3 raters). Study: 15 questions, 3 raters, over the test and
train splits (1,563 items: room for 312 participants).
"""
from __future__ import annotations

import os
import threading
import time
from collections import Counter

import pytest
from django.db.models import Max, Min, Sum

from annotation.models import Item
from studies.management.bots import StudyBot, run_bots
from studies.models import Attempt, AttemptStatus, ParticipantLease, StudyItem, StudyStatus
from studies.services import study_create
from tests.perf.gunicorn_server import CpuMark, percentiles, postgres_pids, start_image_server, stop, warm_up
from tests.support.items import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

PER_PARTICIPANT, RATERS = 15, 3
REPEAT = int(os.environ.get("BENCH_REPEAT", "2"))
GOALS_MS = {100: 300, 300: 1000}


class SpreadBot(StudyBot):
    """A bot that presses Start `delay` seconds after the barrier opens (the barrier's action records the instant)."""

    def __init__(self, *args, opened: dict, delay: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.opened, self.delay = opened, delay

    def _post(self, kind, url, data, htmx=False):
        if kind == "start" and self.delay:
            time.sleep(max(0.0, self.opened["at"] + self.delay - time.perf_counter()))
        return super()._post(kind, url, data, htmx)


class JoiningBot(StudyBot):
    """A bot that opens the study's link `delay` seconds after the gate opens and then joins and starts: its `total`
    is from opening the link to the first question (landing, consent answered with the attempt's page, Start; with
    `consent_form=False` the consent is redirected to the attempt's page, one request more)."""

    def __init__(self, *args, gate: threading.Barrier, opened: dict, delay: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate, self.opened, self.delay, self.total = gate, opened, delay, None

    def run(self):
        self.gate.wait(timeout=120)
        time.sleep(max(0.0, self.opened["at"] + self.delay - time.perf_counter()))
        began = time.perf_counter()
        result = super().run()
        self.total = time.perf_counter() - began
        return result


def _class_start(server, slug: str, n: int, spread: float, item_ids: list[int], joining: bool = False,
                 consent_form: bool = True) -> dict:
    study = study_create(slug=slug, item_ids=item_ids, status=StudyStatus.OPEN, per_participant=PER_PARTICIPANT,
                         raters=RATERS, time_limit_seconds=3600, completion_code="CLASS")
    postgres = postgres_pids()
    opened: dict = {}

    def at_barrier() -> None:  # run by the last bot to arrive, just before all of them go
        opened["mark"] = CpuMark.take(server, postgres)
        opened["at"] = opened["mark"].at

    barrier = threading.Barrier(n, action=at_barrier)
    if joining:  # each bot waits at the gate for the whole class, then opens the link, joins and starts
        bots = [JoiningBot(server.url, slug, f"{slug}-{i:04d}", gate=barrier, stop_after=0, opened=opened,
                           delay=spread * i / n, consent_form=consent_form) for i in range(n)]
    else:  # each bot joins (landing, consent), waits at the barrier for the whole class, then starts
        bots = [SpreadBot(server.url, slug, f"{slug}-{i:04d}", barrier=barrier, stop_after=0, opened=opened,
                          delay=spread * i / n) for i in range(n)]
    threads = [threading.Thread(target=bot.run) for bot in bots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    after = CpuMark.take(server, postgres + [p for p in postgres_pids() if p not in postgres])
    used = after.used_since(opened["mark"])
    starts = [bot.total for bot in bots] if joining else [t for bot in bots for t in bot.result.timings["start"]]
    figures = {"n": n, "spread": spread, "joining": joining, "consent_form": consent_form, "load_before": opened["mark"].load, "load_after": after.load,
               "burst_s": after.at - opened["at"], **percentiles(starts),
               **{f"cpu_{k}_ms": v / n * 1000 for k, v in used.items()}}
    # Exact quotas: all n started with 15 distinct items, loads equal leases, water filling keeps the loads level.
    assert Counter(bot.result.outcome for bot in bots) == {"stopped": n}, [b.result.message for b in bots][:3]
    assert not any(bot.result.server_errors for bot in bots)
    assert Attempt.objects.filter(study=study, status=AttemptStatus.STARTED).count() == n
    leases = ParticipantLease.objects.filter(attempt__study=study)
    per_attempt = Counter(leases.values_list("attempt_id", flat=True))
    assert len(per_attempt) == n and set(per_attempt.values()) == {PER_PARTICIPANT}
    assert leases.values("attempt_id", "item_id").distinct().count() == n * PER_PARTICIPANT
    loads = dict(StudyItem.objects.filter(study=study, load__gt=0).values_list("item_id", "load"))
    assert loads == dict(Counter(leases.values_list("item_id", flat=True)))
    pool = StudyItem.objects.filter(study=study).aggregate(low=Min("load"), high=Max("load"), total=Sum("load"))
    assert pool["total"] == n * PER_PARTICIPANT and pool["high"] - pool["low"] <= 1 and pool["high"] <= RATERS
    return figures


def _print(figures: dict) -> None:
    arrival = "at once" if not figures["spread"] else f"within {figures['spread']:g} s"
    goal = GOALS_MS[figures["n"]]
    what, each = ("opening the link, joining and starting", "participant") if figures["joining"] else ("starting", "start")
    if figures["joining"]:
        what += " (consent as the page's form sends it)" if figures["consent_form"] else \
            " (consent as a script builds it, redirected: 4 requests)"
    print(f"  {figures['n']} {what} {arrival}: p50 {figures['p50']:.0f} ms, p95 {figures['p95']:.0f} ms, "
          f"p99 {figures['p99']:.0f} ms, max {figures['max']:.0f} ms; {figures['n'] / figures['burst_s']:.0f} {each}s/s "
          f"(burst {figures['burst_s']:.2f} s); CPU per {each}: gunicorn {figures['cpu_gunicorn_ms']:.1f} ms, "
          f"PostgreSQL {figures['cpu_postgres_ms']:.1f} ms, client {figures['cpu_client_ms']:.1f} ms; "
          f"load average {figures['load_before']:.1f} -> {figures['load_after']:.1f}; "
          f"goal p95 <= {goal} ms {'met' if figures['p95'] <= goal else 'NOT met'}")


def test_a_class_of_100_then_300_starting_at_once(detectbench_dir, tmp_path):
    import_items(detectbench_dir / "test.jsonl", split="test")
    import_items(detectbench_dir / "train.jsonl", split="train")
    item_ids = list(Item.objects.order_by("pk").values_list("pk", flat=True))
    assert len(item_ids) * RATERS >= 300 * PER_PARTICIPANT
    server = start_image_server(tmp_path / "gunicorn.log")
    try:
        warm = study_create(slug="warm-up", item_ids=item_ids[:100], status=StudyStatus.OPEN, per_participant=5,
                            raters=100, time_limit_seconds=3600, completion_code="W")
        warm_up(server, f"/s/{warm.slug}/")
        run_bots(server.url, warm.slug, 40, concurrency=8, stop_after=1, id_prefix="warm")
        print(f"\nA class starting ({len(item_ids)} items, {PER_PARTICIPANT} each, {RATERS} raters) against "
              f"{server.describe()} + PostgreSQL, {os.cpu_count()} cores; start = POST Start, answered with the first question")
        runs = [(n, spread, joining, True) for joining in (False, True) for n in (100, 300) for spread in (0.0, 1.0)]
        runs.append((300, 1.0, True, False))
        for repeat in range(REPEAT):
            print(f" run {repeat + 1} of {REPEAT}:")
            for n, spread, joining, consent_form in runs:
                slug = f"class-{n}-{int(spread * 10)}-{'j' if joining else 's'}{'' if consent_form else 'x'}-{repeat}"
                _print(_class_start(server, slug, n, spread, item_ids, joining=joining, consent_form=consent_form))
    finally:
        stop(server)

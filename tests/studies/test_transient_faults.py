"""A database fault while participants answer: the test database's connections are terminated again and again.

Participants must never see a 500: a request whose connection was dropped is retried once on a new one,
and otherwise answered with a "please try again" page (503) that leaves the attempt untouched. Every answer
the server acknowledged must be stored. Prints answers acknowledged vs stored and the 5xx seen.
"""
import logging
import threading
import time
from collections import Counter

import pytest
from django.db import connection

from studies.management.bots import run_bots, summarize
from studies.models import Attempt, AttemptStatus, Response, StudyStatus
from studies.services import study_create

from .conftest import import_items

pytestmark = pytest.mark.django_db(transaction=True)

BOTS = 30
KILL_EVERY = 0.5  # seconds between two rounds of terminated connections


def _terminate_backends() -> int:
    """Terminate every other connection to this test database (never another database's)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                       " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def test_terminated_database_connections_while_30_bots_answer(live_server, detectbench_dir, caplog):
    assert connection.settings_dict["NAME"].startswith("test_")  # only ever the test database
    ids = import_items(detectbench_dir, 40)
    study = study_create(slug="faults", item_ids=ids, status=StudyStatus.OPEN, per_participant=4, raters=3,
                         time_limit_seconds=900, completion_code="F-OK")
    stop, kills = threading.Event(), []

    def killer():
        from django.db import connection as own

        try:
            while not stop.wait(KILL_EVERY):
                kills.append(_terminate_backends())
        finally:
            own.close()

    caplog.set_level(logging.WARNING, logger="studies.participants")
    thread = threading.Thread(target=killer)
    began = time.monotonic()
    thread.start()
    try:
        results = run_bots(live_server.url, study.slug, BOTS, concurrency=BOTS, think=(0.05, 0.2))
    finally:
        stop.set()
        thread.join()
        connection.close()  # this thread's connection was terminated too
    took = time.monotonic() - began
    summary = summarize(results)
    acknowledged = {(r.token, p) for r in results for p in r.acknowledged}
    stored = set(Response.objects.filter(attempt__study=study).values_list("attempt__token", "lease__position"))
    seen = Counter()
    for r in results:
        seen.update(r.server_errors)
    retried = sum("retrying once" in record.getMessage() for record in caplog.records)
    print(f"\n{BOTS} bots, database connections terminated {len(kills)} times ({sum(kills)} backends) in "
          f"{took:.1f} s: answers acknowledged {len(acknowledged)}, stored {len(stored)}; "
          f"requests retried on a new connection {retried}; 5xx seen by participants {dict(seen) or 0}; "
          f"outcomes {summary['outcomes']}; connections closed or refused {summary['connection_errors']}")
    assert sum(kills) > 0  # the fault happened
    assert acknowledged <= stored, f"acknowledged but not stored: {sorted(acknowledged - stored)[:5]}"
    assert 500 not in seen, f"participants saw {seen[500]} HTTP 500s"
    assert summary["outcomes"] == {"complete": BOTS}, [(r.participant_id, r.outcome, r.message, r.http_status)
                                                       for r in results if r.outcome != "complete"]
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == BOTS
    assert len(stored) == BOTS * 4


def test_a_fault_that_outlasts_the_retry_is_a_please_try_again_page_and_the_attempt_is_untouched(
        make_study, database_down):
    from django.test import Client
    from django.urls import reverse

    from studies.services import question_open

    study = make_study()
    client = Client()
    client.post(reverse("studies_public:join", args=[study.slug]),
                {"consent": "yes", "PROLIFIC_PID": "F1", "SESSION_ID": "S"})
    attempt = Attempt.objects.get(external_participant_id="F1")
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    position = question_open(attempt=attempt).lease.position
    hub = reverse("studies_public:attempt", args=[attempt.token])
    with database_down:
        page = client.get(hub)
        answer = client.post(reverse("studies_public:answer", args=[attempt.token]),
                             {"position": position, "chosen_option": 0, "highlights": "[]"}, HTTP_HX_REQUEST="true")
    assert page.status_code == 503 and page.headers["Retry-After"] == "2"
    body = page.content.decode()
    assert "<html" in body and "participant-bar" in body and 'data-retry' in body  # the layout, a way back
    assert "Please try again" in body and f'href="{hub}"' in body
    assert answer.status_code == 503 and "<html" not in answer.content.decode()  # htmx: the card for #question
    assert 'data-retry' in answer.content.decode() and f'href="{hub}"' in answer.content.decode()
    # Nothing changed: the same question is waiting, and answering it now works.
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.STARTED and not attempt.responses.exists()
    again = client.get(hub)
    assert again.status_code == 200 and f'data-position="{position}"' in again.content.decode()

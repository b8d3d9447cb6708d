"""Screen-outs reported to Prolific by a real Celery worker, against the stand-in Prolific API: a participant screened
out in the middle of a connected study gives every item back at once (the answered ones too, as their answers are
counted nowhere), every item still ends with exactly its raters' counted answers, and the stand-in records the
screen-out once although the task runs three times (twice at once); Prolific unavailable at first is retried; the
webhook's echo changes nothing, and a participant screened out on Prolific itself ends screened out in the app; a
participant screened out by the screening question sees the screen-out code and its way back to Prolific."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db.models import Count
from django.urls import reverse

from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    ProlificReport,
    Response,
    StudyItem,
)
from studies.prolific import services as prolific
from studies.selectors.results import study_results
from studies.services import (
    attempt_expire,
    attempt_screen_out,
    attempt_start,
    question_open,
    response_submit,
    study_join,
)
from studies.tasks import report_screen_out
from tests.conftest import start_celery_worker, subprocess_env
from tests.support.prolific_server import ProlificStandIn
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SECRET, TOKEN, PSTUDY = "whsec-screen-0123456789", "token-screen", "64f0c0ffee0000000000abcd"


def _answer(attempt, n: int | None = None) -> None:
    while (n is None or n > 0) and (question := question_open(attempt=attempt)) is not None:
        response_submit(token=attempt.token, position=question.lease.position,
                        chosen_option=question.lease.item.answer_index)
        n = None if n is None else n - 1


def test_a_screen_out_gives_the_items_back_at_once_and_prolific_records_it_once(
        make_study, tmp_path, monkeypatch, settings, researcher_client, live_server):
    monkeypatch.setenv("PROLIFIC_TEST_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    with ProlificStandIn(token=TOKEN, webhook_secret=SECRET,
                         webhook_url=f"{live_server.url}/studies/prolific/webhook/") as stand_in:
        settings.PROLIFIC_API_URL = stand_in.base_url
        env = subprocess_env(PROLIFIC_API_URL=stand_in.base_url, PROLIFIC_TEST_TOKEN=TOKEN,
                             PROLIFIC_API_TIMEOUT_S="5")
        study = make_study(n_items=8, per_participant=4, raters=2, time_limit_seconds=3600, slug="screen-life",
                           screen_out_code="SCREENED-1")
        prolific.connection_set(study_id=study.pk, prolific_study_id=PSTUDY, token_env="PROLIFIC_TEST_TOKEN")
        stand_in.add_study(PSTUDY, places=6)
        sessions, attempts = [], []
        for n in range(6):
            pid = f"5f{n:022d}"
            sessions.append(stand_in.add_submission(PSTUDY, pid))
            attempts.append(study_join(study=study, participant_id=pid, external_study_id=PSTUDY,
                                       session_id=sessions[-1]))
        for i in range(4):  # 4 x 4 = 8 items x 2 raters: the pool is taken
            attempts[i] = attempt_start(attempt_id=attempts[i].pk)
        assert attempt_start(attempt_id=attempts[4].pk).status == AttemptStatus.FULL
        _answer(attempts[1], 1)
        _answer(attempts[0], 2)  # fails a check after two answers

        stand_in.fail_next(2)  # Prolific is unavailable at first: the worker retries with backoff
        worker = start_celery_worker(tmp_path, pool="prefork", concurrency=2, env=env)
        try:
            screened = attempt_screen_out(attempt_id=attempts[0].pk, reason="Failed the attention check.")
            # At once, before the worker has said anything to Prolific: every item of the attempt is back.
            assert screened.status == AttemptStatus.SCREENED_OUT
            assert set(screened.leases.values_list("status", flat=True)) == {ParticipantLeaseStatus.SCREENED_OUT}
            assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 8 * 2 - 4
            assert Response.objects.filter(attempt=screened).count() == 2  # kept
            report_screen_out.delay(screened.pk)  # the task runs again (a redelivery), twice at once
            report_screen_out.delay(screened.pk)
            wait_until(lambda: Attempt.objects.get(pk=screened.pk).prolific_report, 60, "the screen-out reported")
            time.sleep(1.0)  # the other runs finish too
        finally:
            worker.stop()
        report_screen_out.apply(args=[screened.pk])  # and once more, in this process
        assert stand_in.state.screen_outs == [(sessions[0], True)]
        assert stand_in.state.submissions[sessions[0]]["status"] == "SCREENED-OUT"
        assert stand_in.state.studies[PSTUDY]["total_available_places"] == 7
        screened.refresh_from_db()
        assert screened.prolific_report == ProlificReport.SCREENED_OUT and screened.prolific_reported_at
        page = researcher_client.get(reverse("studies:prolific", args=[study.slug])).content.decode()
        row = page.split(f'id="report-{screened.pk}"')[1].split("</tr>")[0]
        assert "Screened out through Prolific&#x27;s API" in row and sessions[0] in row
        assert "Failed the attention check." in row

        # Prolific's webhook echoes the screen-out: nothing changes in the app. A participant screened out on
        # Prolific itself ends screened out in the app at once, and is not reported back.
        loads = sorted(StudyItem.objects.filter(study=study).values_list("pk", "load"))
        echo = stand_in.deliver([stand_in.set_status(sessions[0], "SCREENED-OUT")])
        assert echo[0][1] == 200 and sorted(StudyItem.objects.filter(study=study).values_list("pk", "load")) == loads
        assert Attempt.objects.get(pk=screened.pk).prolific_report == ProlificReport.SCREENED_OUT
        there = stand_in.deliver([stand_in.set_status(sessions[1], "SCREENED-OUT")])
        assert there[0][1] == 200
        on_prolific = Attempt.objects.get(pk=attempts[1].pk)
        assert on_prolific.status == AttemptStatus.SCREENED_OUT and on_prolific.prolific_report == ""
        assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 8 * 2 - 8
        assert stand_in.state.screen_outs == [(sessions[0], True)]

        # The waiting participants take the items back; all finish: each item has exactly 2 counted answers.
        for i in (4, 5):
            attempts[i] = attempt_start(attempt_id=attempts[i].pk)
            assert attempts[i].status == AttemptStatus.STARTED
        for attempt in attempts[2:]:
            _answer(attempt)
        counted = Response.objects.filter(attempt__study=study).exclude(attempt__status=AttemptStatus.SCREENED_OUT)
        per_item = dict(counted.values_list("item").annotate(n=Count("id")))
        assert len(per_item) == 8 and set(per_item.values()) == {2}
        assert not ParticipantLease.objects.filter(attempt__study=study, status=ParticipantLeaseStatus.ACTIVE).exists()
        results = study_results(study)
        assert results.n_responses == 16 and results.n_screened_out == 2
        assert screened.pk not in {p.attempt.pk for p in results.participants}


def test_the_screening_question_screens_out_with_the_code_and_the_way_back_to_prolific(make_study, client):
    study = make_study(n_items=6, per_participant=2, screen_out_code="SO-CODE", completion_code="DONE",
                       screening_question="Do you read English fluently?", screening_options=["Yes", "No"],
                       screening_pass=[0])
    landing = reverse("studies_public:landing", args=[study.slug])
    join = reverse("studies_public:join", args=[study.slug])
    answers = {}
    for pid, option in (("5fpass", "0"), ("5ffail", "1")):
        client.cookies.clear()
        client.get(landing, {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": f"sess-{pid}"})
        hub = client.post(join, {"consent": "yes", "PROLIFIC_PID": pid, "STUDY_ID": "s",
                                 "SESSION_ID": f"sess-{pid}"})["Location"]
        page = client.get(hub).content.decode()
        assert 'id="screening"' in page and "Do you read English fluently?" in page
        token = hub.rstrip("/").split("/")[-1]
        start = reverse("studies_public:start", args=[token])
        missing = client.post(start)
        assert missing.status_code == 400 and b'id="screening-error"' in missing.content
        assert Attempt.objects.get(token=token).status == AttemptStatus.JOINED
        client.post(start, {"screening_answer": option})
        answers[pid] = (Attempt.objects.get(token=token), client.get(hub).content.decode())
    passed, page = answers["5fpass"]
    assert passed.status == AttemptStatus.STARTED and passed.screening_answer == 0
    failed, page = answers["5ffail"]
    assert failed.status == AttemptStatus.SCREENED_OUT and failed.screening_answer == 1
    assert not failed.leases.exists()
    assert 'id="screened-out"' in page and 'id="completion-code">SO-CODE<' in page
    assert "https://app.prolific.com/submissions/complete?cc=SO-CODE" in page and 'id="screen-out-payment"' in page


def test_a_time_out_in_the_app_records_the_time_out_code_given_and_the_prolific_page_shows_it(
        make_study, researcher_client):
    study = make_study(n_items=4, per_participant=2, time_limit_seconds=60, timeout_completion_code="TIME-9")
    prolific.connection_set(study_id=study.pk, prolific_study_id="p-time", token_env="PROLIFIC_TIME_TOKEN")
    attempt = study_join(study=study, participant_id="5ftime", session_id="sub-time")
    attempt = attempt_start(attempt_id=attempt.pk)
    expired = attempt_expire(attempt_id=attempt.pk, now=attempt.deadline + timedelta(minutes=5), overdue_only=True)
    assert expired.status == AttemptStatus.EXPIRED
    expired.refresh_from_db()
    assert expired.prolific_report == ProlificReport.TIMEOUT_CODE and expired.prolific_report_detail == "TIME-9"
    assert expired.prolific_reported_at == expired.ended_at
    page = researcher_client.get(reverse("studies:prolific", args=[study.slug])).content.decode()
    row = page.split(f'id="report-{expired.pk}"')[1].split("</tr>")[0]
    assert "Time-out code shown to the participant" in row and "TIME-9" in row


def test_a_screen_out_left_unreported_is_queued_again_by_the_periodic_task(make_study):
    from studies.prolific.services import screen_outs_unreported

    study = make_study(n_items=4, per_participant=2)
    prolific.connection_set(study_id=study.pk, prolific_study_id="p-later", token_env="PROLIFIC_LATER_TOKEN")
    attempt = study_join(study=study, participant_id="5flater", session_id="sub-later")
    screened = attempt_screen_out(attempt_id=attempt.pk, reason="Failed.", screening_answer=1, before_start=True)
    assert screened.status == AttemptStatus.SCREENED_OUT and screen_outs_unreported() == []  # just now: queued
    Attempt.objects.filter(pk=screened.pk).update(ended_at=screened.ended_at - timedelta(minutes=2))
    assert screen_outs_unreported() == [screened.pk]
    Attempt.objects.filter(pk=screened.pk).update(prolific_report=ProlificReport.SCREEN_OUT_REFUSED)
    assert screen_outs_unreported() == []

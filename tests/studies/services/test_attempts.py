"""How an attempt ends: every path that ends one, and what its participant's end page then gives them.

The property: the completion code (the one that gets a participant paid as having completed the study) is shown
only for an attempt that ended finished, and an attempt ends finished only when it answered at least one question.
An attempt that answered nothing, all of whose questions timed out, ends expired: the time-out code, if any.
"""
from __future__ import annotations

import pickle
import random
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Item
from studies.errors import ParticipantIdTaken, StudyNotOpen
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    ProlificReport,
    StudyStatus,
)
from studies.prolific import services as prolific
from studies.prolific.models import BonusBatch, BonusPayment
from studies.services import (
    attempt_expire,
    attempt_question,
    attempt_return,
    attempt_screen_out,
    attempt_start,
    attempts_sweep,
    question_open,
    response_submit,
    study_join,
)

HX = {"HTTP_HX_REQUEST": "true"}
COMPLETION, TIMEOUT, SCREEN_OUT = "PAID-COMPLETE-1", "TIMED-OUT-2", "SCREENED-3"


def _running(make_study, **fields):
    study = make_study(n_items=6, per_participant=3, raters=1, question_time_limit_seconds=30, grace_seconds=0,
                       completion_code=COMPLETION, timeout_completion_code=TIMEOUT, screen_out_code=SCREEN_OUT,
                       **fields)
    client = Client()
    client.post(reverse("studies_public:join", args=[study.slug]),
                {"consent": "yes", "PROLIFIC_PID": "P1", "STUDY_ID": "S", "SESSION_ID": "X"})
    attempt = Attempt.objects.get(study=study)
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    return client, attempt


def _answer(attempt, now) -> None:
    attempt = Attempt.objects.select_related("study").get(pk=attempt.pk)
    question = attempt_question(attempt=attempt, now=now)
    key = Item.objects.get(pk=question.lease.item_id).answer_index
    response_submit(token=attempt.token, position=question.lease.position, chosen_option=key, now=now)


def _wait_out_question(attempt, now):
    """The participant stays on the page until the question's own limit has passed: the next page load times it out."""
    later = now + timedelta(seconds=31)
    attempt_question(attempt=Attempt.objects.select_related("study").get(pk=attempt.pk), now=later)
    return later


def _every_question_times_out(attempt):
    now = attempt.started_at
    for _ in range(3):
        now = _wait_out_question(attempt, now)


def _one_answer_then_time_outs(attempt):
    now = _wait_out_question(attempt, attempt.started_at)
    _answer(attempt, now + timedelta(seconds=1))
    _wait_out_question(attempt, now + timedelta(seconds=1))


def _answer_all(attempt):
    for k in range(3):
        _answer(attempt, attempt.started_at + timedelta(seconds=k + 1))


def _answer_one_then_deadline(attempt):
    _answer(attempt, attempt.started_at + timedelta(seconds=1))
    attempts_sweep(now=attempt.deadline + timedelta(seconds=1))


def _nothing_then_deadline(attempt):
    attempts_sweep(now=attempt.deadline + timedelta(seconds=1))


def _answer_one_then_return(attempt):
    _answer(attempt, attempt.started_at + timedelta(seconds=1))
    attempt_return(attempt_id=attempt.pk)


def _researcher_closes(attempt):
    attempt_expire(attempt_id=attempt.pk)


def _screened_out_after_answers(attempt):
    _answer(attempt, attempt.started_at + timedelta(seconds=1))
    attempt_screen_out(attempt_id=attempt.pk, reason="failed check", report=False)


PATHS = {
    "every question times out": (_every_question_times_out, AttemptStatus.EXPIRED, TIMEOUT),
    "one answer, the rest time out": (_one_answer_then_time_outs, AttemptStatus.FINISHED, COMPLETION),
    "every question answered": (_answer_all, AttemptStatus.FINISHED, COMPLETION),
    "one answer, then the deadline": (_answer_one_then_deadline, AttemptStatus.EXPIRED, TIMEOUT),
    "nothing, then the deadline": (_nothing_then_deadline, AttemptStatus.EXPIRED, TIMEOUT),
    "one answer, then returned": (_answer_one_then_return, AttemptStatus.RETURNED, None),
    "closed by the researcher": (_researcher_closes, AttemptStatus.EXPIRED, TIMEOUT),
    "screened out after an answer": (_screened_out_after_answers, AttemptStatus.SCREENED_OUT, SCREEN_OUT),
}


@pytest.mark.parametrize("path", PATHS)
def test_the_completion_code_is_shown_only_for_a_finished_attempt_with_an_answer(make_study, path):
    end, status, code = PATHS[path]
    client, attempt = _running(make_study)
    end(attempt)
    attempt.refresh_from_db()
    page = client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()
    answered = attempt.responses.count()
    # The property, for every path: the completion code only for a finished attempt, and only with an answer.
    assert (COMPLETION in page) == (attempt.status == AttemptStatus.FINISHED)
    assert attempt.status != AttemptStatus.FINISHED or answered >= 1
    assert not attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists()
    # What this path is.
    assert attempt.status == status, path
    assert code is None or code in page
    assert [c for c in (COMPLETION, TIMEOUT, SCREEN_OUT) if c in page] == ([code] if code else [])


def test_an_attempt_whose_every_question_timed_out_ends_expired_with_the_time_out_code_recorded(make_study):
    client, attempt = _running(make_study)
    _every_question_times_out(attempt)
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.EXPIRED and attempt.ended_at < attempt.deadline
    assert (attempt.prolific_report, attempt.prolific_report_detail) == (ProlificReport.TIMEOUT_CODE, TIMEOUT)
    page = client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()
    # It says why: the questions' own limits, not the researcher's closing.
    assert 'id="questions-time-up"' in page and "The researcher closed this attempt" not in page


def test_a_screen_out_takes_the_participant_out_of_every_batch_not_sent_yet(make_study):
    """A batch proposed before this rule could hold a running attempt; screened out, it leaves the batch (a batch left
    empty goes), so no bonus is paid to a participant whose answers count nowhere."""
    study = make_study(n_items=8, per_participant=4, raters=2, bonus_per_correct=Decimal("0.50"))
    prolific.connection_set(study_id=study.pk, prolific_study_id="p-1", token_env="PROLIFIC_TOKEN_X")
    from tests.studies.conftest import started_attempt

    attempts = [started_attempt(study, pid) for pid in ("A", "B")]
    for attempt in attempts:
        question = question_open(attempt=attempt)
        response_submit(token=attempt.token, position=question.lease.position,
                        chosen_option=Item.objects.get(pk=question.lease.item_id).answer_index)
    batch = BonusBatch.objects.create(study=study, currency="GBP", total=Decimal("1.00"))
    for attempt in attempts:  # as a proposal made while they ran would have
        BonusPayment.objects.create(batch=batch, attempt=attempt, participant_id=attempt.external_participant_id,
                                    correct=1, amount=Decimal("0.50"))
    attempt_screen_out(attempt_id=attempts[0].pk, reason="failed check", report=False)
    batch.refresh_from_db()
    assert list(batch.payments.values_list("attempt_id", flat=True)) == [attempts[1].pk]
    assert batch.total == Decimal("0.50")
    attempt_screen_out(attempt_id=attempts[1].pk, reason="failed check", report=False)
    assert not BonusBatch.objects.filter(pk=batch.pk).exists() and not BonusPayment.objects.exists()



def test_a_start_makes_a_model_instance_of_the_first_lease_only_and_the_others_when_read(make_study):
    """Start's page needs the first question's lease; the others stay the rows the hand-out wrote until read."""
    study = make_study(n_items=10, per_participant=4, raters=1)
    joined = study_join(study=study, participant_id="lazy-1")
    made = []

    def count(sender, instance, **_):
        made.append(instance)

    post_init.connect(count, sender=ParticipantLease)
    try:
        attempt = attempt_start(attempt_id=joined.pk)
        handed_out = attempt.handed_out
        first = attempt_question(attempt=attempt)
        assert len(made) == 1 and first.lease is made[0] is handed_out[0]
        assert (first.number, first.total, first.answered) == (1, 4, 0)
        last = handed_out[-1]  # read later: made then, once
        assert len(made) == 2 and last is handed_out[3] and [lease.position for lease in handed_out[1:3]] == [1, 2]
        assert len(made) == 4 and len(handed_out) == 4
    finally:
        post_init.disconnect(count, sender=ParticipantLease)
    with pytest.raises(IndexError):
        handed_out[4]
    written = [(lease.pk, lease.item_id, lease.study_item_id)
               for lease in ParticipantLease.objects.filter(attempt_id=joined.pk).order_by("position")]
    assert [(lease.pk, lease.item_id, lease.study_item_id) for lease in handed_out] == written
    copied = pickle.loads(pickle.dumps(handed_out))  # as a cached Attempt would be: plain values, no closure
    assert [(lease.pk, lease.item_id, lease.study_item_id) for lease in copied] == written


def test_joining_inserts_the_row_the_orms_create_inserts(make_study):
    """study_join inserts the attempt with SQL built once per process: field for field the row `create` makes."""
    study = make_study(n_items=6, per_participant=3, raters=2)
    joined = study_join(study=study, participant_id="prepared-1", external_study_id="S" * 120, session_id="x" * 120,
                        user_agent="Agent " * 80, language="fr")  # not offered: the study's own
    made = Attempt.objects.create(study=study, external_participant_id="prepared-2", external_study_id="S" * 100,
                                  external_session_id="x" * 100, user_agent=("Agent " * 80)[:300], language="")
    stored = {a.external_participant_id: a for a in Attempt.objects.filter(study=study)}
    assert joined.pk and not joined._state.adding and joined.token == stored["prepared-1"].token
    differ = {"id", "token", "joined_at", "external_participant_id"}
    fields = [f.attname for f in Attempt._meta.concrete_fields if f.attname not in differ]
    assert {f: getattr(stored["prepared-1"], f) for f in fields} == {f: getattr(stored["prepared-2"], f) for f in fields}
    assert abs(stored["prepared-1"].joined_at - made.joined_at).total_seconds() < 5
    assert study_join(study=study, participant_id="prepared-1", session_id="x" * 120).pk == joined.pk  # resumes


def test_joining_follows_the_rule_over_random_joins_and_a_new_browser_joins_in_one_statement(make_study):
    """Random joins (participant ids new and known, session ids matching or not, the browser's cookie or none, the
    study open or closed): each gives what the rule says (resume, ParticipantIdTaken, StudyNotOpen, a new attempt),
    and a new browser with a new participant id joins in one statement (the INSERT, nothing read first)."""
    rng = random.Random(5)
    study = make_study(n_items=6, per_participant=3, raters=2)
    cookies = []
    for _ in range(300):
        if rng.random() < 0.1:
            study.status = rng.choice([StudyStatus.OPEN, StudyStatus.CLOSED])
            study.save(update_fields=["status"])
        pid, session = rng.choice(["", "", "A", "B", "C", " A ", "D" * 120]), rng.choice(["", "s1", "s2"])
        cookie = rng.choice(["", "", *cookies[-3:]])
        known = {a.token: a for a in Attempt.objects.filter(study=study)}
        by_pid = {a.external_participant_id: a for a in known.values() if a.external_participant_id}
        theirs = by_pid.get(pid.strip()[:100])
        if cookie in known:
            expected = known[cookie].pk
        elif theirs is not None:
            expected = theirs.pk if session and theirs.external_session_id == session else ParticipantIdTaken
        elif study.status != StudyStatus.OPEN:
            expected = StudyNotOpen
        else:
            expected = "new"
        with CaptureQueriesContext(connection) as ran:
            try:
                got = study_join(study=study, participant_id=pid, session_id=session, cookie_token=cookie)
            except (ParticipantIdTaken, StudyNotOpen) as refused:
                got = type(refused)
        if expected == "new":
            assert got not in known and isinstance(got, Attempt) and got.pk not in {a.pk for a in known.values()}
            cookies.append(got.token)
            if not cookie:
                assert len([q for q in ran if not q["sql"].startswith(("SAVEPOINT", "PREPARE", "RELEASE"))]) == 1
        else:
            assert (got.pk if isinstance(got, Attempt) else got) == expected, (pid, session, cookie)
    assert Attempt.objects.filter(study=study).exclude(external_participant_id="").values(
        "external_participant_id").distinct().count() == Attempt.objects.filter(study=study).exclude(
        external_participant_id="").count()  # one attempt per participant id

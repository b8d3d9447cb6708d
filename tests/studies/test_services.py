"""Services: joining, hand-out, answers, deadlines, dropout and the sweep (real PostgreSQL)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from studies.errors import (
    AnswerInvalid,
    AnswerRefused,
    AttemptNotRunning,
    ParticipantIdTaken,
    PracticeItemInPool,
    RatersBelowLoad,
)
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    RefusedAnswer,
    Response,
    StudyItem,
)
from studies.services import (
    attempt_expire,
    attempt_extend,
    attempt_return,
    attempt_start,
    attempts_sweep,
    question_open,
    response_submit,
    study_join,
    study_update,
)

from .conftest import started_attempt


def _answer(attempt, position=None, option=0, now=None, **kw):
    if position is None:
        position = question_open(attempt=attempt, now=now).lease.position
    return response_submit(token=attempt.token, position=position, chosen_option=option, now=now, **kw).response


def test_join_is_idempotent_on_participant_id_and_cookie(make_study):
    study = make_study()
    a = study_join(study=study, participant_id="P1", session_id="S-1")
    assert study_join(study=study, participant_id="P1", session_id="S-1").pk == a.pk
    with pytest.raises(ParticipantIdTaken):  # the participant id alone opens no one's attempt
        study_join(study=study, participant_id="P1")
    b = study_join(study=study)
    assert study_join(study=study, cookie_token=b.token).pk == b.pk
    assert len(a.token) >= 40 and a.token != b.token


def test_start_hands_out_distinct_items_in_seeded_order_and_is_idempotent(make_study):
    study = make_study(n_items=10, per_participant=4, raters=2)
    attempt = started_attempt(study, "P1")
    leases = list(attempt.leases.order_by("position"))
    assert attempt.status == AttemptStatus.STARTED and len(leases) == 4
    assert len({l.item_id for l in leases}) == 4
    assert all(l.expires_at == attempt.deadline for l in leases)
    assert attempt.deadline - attempt.started_at == timedelta(seconds=600)
    again = attempt_start(attempt_id=attempt.pk)
    assert again.deadline == attempt.deadline and attempt.leases.count() == 4


def test_quota_is_never_exceeded_and_full_when_pool_is_used_up(make_study):
    study = make_study(n_items=6, per_participant=3, raters=2)  # 12 slots = 4 attempts
    attempts = [started_attempt(study, f"P{i}") for i in range(5)]
    assert [a.status for a in attempts].count(AttemptStatus.STARTED) == 4
    assert attempts[-1].status == AttemptStatus.FULL
    assert set(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == {2}


def test_answer_is_recorded_with_times_and_finishes_the_attempt(make_study):
    study = make_study(n_items=4, per_participant=2, raters=1)
    attempt = started_attempt(study)
    for _ in range(2):
        q = question_open(attempt=attempt)
        ctx = q.lease.item.context
        response = _answer(attempt, q.lease.position, option=1, confidence=4,
                           highlights=[{"start": 0, "end": 10, "text": ctx[:10]}])
        assert response.shown_at <= response.answered_at and response.confidence == 4
        assert response.is_correct == (response.item.answer_index == 1)
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.FINISHED and attempt.ended_at
    assert question_open(attempt=attempt) is None


def test_answer_ends_its_lease_and_shows_the_next_question(make_study):
    """The submit's one UPDATE of two leases: the answered one ends, the next one is shown from now on."""
    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = started_attempt(study)
    t0 = attempt.started_at  # the first question is shown from the start: its page is the answer to Start
    first = question_open(attempt=attempt, now=t0 + timedelta(seconds=3))
    t1 = t0 + timedelta(seconds=20)
    submitted = response_submit(token=attempt.token, position=first.lease.position, chosen_option=0, now=t1)
    answered = ParticipantLease.objects.get(pk=first.lease.pk)
    assert (answered.status, answered.shown_at, answered.ended_at) == (ParticipantLeaseStatus.ANSWERED, t0, t1)
    nxt = submitted.next_question
    assert nxt.number == 2 and nxt.answered == 1 and nxt.lease.shown_at == t1
    assert ParticipantLease.objects.get(pk=nxt.lease.pk).shown_at == t1
    assert ParticipantLease.objects.get(pk=nxt.lease.pk).status == ParticipantLeaseStatus.ACTIVE
    # The next item comes with the answer (one query for both items), without its clue graph.
    assert ParticipantLease.item.is_cached(nxt.lease)
    assert {"evidence", "reasoning"} <= nxt.lease.item.get_deferred_fields()
    # A question shown before (a reload) keeps its first shown time.
    t2 = t1 + timedelta(seconds=30)
    second = question_open(attempt=attempt, now=t2)
    assert second.lease.pk == nxt.lease.pk and second.lease.shown_at == t1
    response_submit(token=attempt.token, position=second.lease.position, chosen_option=1, now=t2)
    assert ParticipantLease.objects.get(pk=second.lease.pk).shown_at == t1
    assert Response.objects.get(lease=second.lease).shown_at == t1


def test_answer_validation_and_ownership(make_study):
    study = make_study(n_items=6, per_participant=2, raters=2)
    mine, other = started_attempt(study, "A"), started_attempt(study, "B")
    with pytest.raises(AnswerInvalid):
        _answer(mine, option=9)
    with pytest.raises(AnswerInvalid):
        _answer(mine, option=0, highlights=[{"start": 0, "end": 5, "text": "xxxxx"}])
    with pytest.raises(AnswerRefused) as error:
        _answer(mine, position=7, option=0)
    assert error.value.http_status == 404
    position = question_open(attempt=mine).lease.position
    _answer(mine, position, option=0)
    with pytest.raises(AnswerRefused) as error:
        _answer(mine, position, option=1)
    assert error.value.reason == RefusedAnswer.Reason.ALREADY_ANSWERED
    assert Response.objects.filter(attempt=mine).count() == 1
    assert Response.objects.filter(attempt=other).count() == 0


def test_late_answer_is_refused_recorded_and_attempt_closed(make_study):
    study = make_study(n_items=4, per_participant=2, raters=2, grace_seconds=5)
    attempt = started_attempt(study)
    q = question_open(attempt=attempt)
    in_grace = attempt.deadline + timedelta(seconds=3)
    response = _answer(attempt, q.lease.position, now=in_grace)
    assert response.is_late
    too_late = attempt.deadline + timedelta(seconds=6)
    with pytest.raises(AnswerRefused) as error:
        _answer(attempt, q.lease.position + 1 if q.lease.position == 0 else 0, now=too_late)
    assert error.value.http_status == 409 and error.value.reason == RefusedAnswer.Reason.LATE
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.EXPIRED
    assert RefusedAnswer.objects.filter(attempt=attempt, reason=RefusedAnswer.Reason.LATE).count() == 1
    assert ParticipantLease.objects.filter(attempt=attempt, status=ParticipantLeaseStatus.RELEASED).count() == 1


def test_question_time_limit(make_study):
    study = make_study(n_items=4, per_participant=2, raters=2, question_time_limit_seconds=30, grace_seconds=2)
    attempt = started_attempt(study)
    now = attempt.started_at  # the first question counts as shown from the start (its page answers Start)
    q = question_open(attempt=attempt, now=now)
    assert q.seconds_left == 30 and q.lease.shown_at == now
    assert question_open(attempt=attempt, now=now + timedelta(seconds=10)).seconds_left == 20
    with pytest.raises(AnswerRefused) as error:
        _answer(attempt, q.lease.position, now=now + timedelta(seconds=40))
    assert error.value.reason == RefusedAnswer.Reason.QUESTION_TIMEOUT
    lease = ParticipantLease.objects.get(pk=q.lease.pk)
    assert lease.status == ParticipantLeaseStatus.TIMED_OUT
    assert StudyItem.objects.get(pk=lease.study_item_id).load == 0  # back to the pool
    nxt = question_open(attempt=attempt, now=now + timedelta(seconds=41))
    assert nxt.lease.pk != q.lease.pk


def test_dropout_items_go_to_the_next_participant_first(make_study):
    """With 250 items x 3 raters, a dropout's 10 unanswered items are handed to the next participant."""
    study = make_study(n_items=40, per_participant=15, raters=3)
    first = started_attempt(study, "quitter")
    started_attempt(study, "other")
    for _ in range(5):
        _answer(first, option=0)
    unanswered = set(first.leases.filter(status=ParticipantLeaseStatus.ACTIVE).values_list("item_id", flat=True))
    attempt_expire(attempt_id=first.pk)
    nxt = started_attempt(study, "next")
    assert unanswered <= set(nxt.leases.values_list("item_id", flat=True))
    assert Response.objects.filter(attempt=first).count() == 5


def test_dropout_hand_over_with_spare_items(make_study):
    study = make_study(n_items=15, per_participant=10, raters=1)
    first = started_attempt(study, "quitter")
    for _ in range(5):
        _answer(first, option=0)
    unanswered = set(first.leases.filter(status=ParticipantLeaseStatus.ACTIVE).values_list("item_id", flat=True))
    assert started_attempt(study, "blocked").status == AttemptStatus.FULL  # only 5 items free
    attempt_return(attempt_id=first.pk)
    first.refresh_from_db()
    assert first.status == AttemptStatus.RETURNED
    nxt = started_attempt(study, "next")
    assert nxt.status == AttemptStatus.STARTED
    assert unanswered <= set(nxt.leases.values_list("item_id", flat=True))
    assert Response.objects.filter(attempt=first).count() == 5


def test_full_attempt_can_try_again_after_release(make_study):
    study = make_study(n_items=3, per_participant=3, raters=1)
    first = started_attempt(study, "a")
    blocked = started_attempt(study, "b")
    assert blocked.status == AttemptStatus.FULL
    attempt_expire(attempt_id=first.pk)
    assert attempt_start(attempt_id=blocked.pk).status == AttemptStatus.STARTED


def test_sweep_expires_overdue_attempts_and_is_idempotent(make_study):
    study = make_study(n_items=6, per_participant=2, raters=2, grace_seconds=5)
    overdue, running = started_attempt(study, "o"), started_attempt(study, "r")
    Attempt.objects.filter(pk=overdue.pk).update(deadline=timezone.now() - timedelta(seconds=10))
    assert attempts_sweep() == [overdue.pk]
    assert attempts_sweep() == []
    overdue.refresh_from_db()
    running.refresh_from_db()
    assert overdue.status == AttemptStatus.EXPIRED and running.status == AttemptStatus.STARTED
    assert not overdue.leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists()


def test_start_releases_overdue_leases_without_waiting_for_the_sweep(make_study):
    study = make_study(n_items=3, per_participant=3, raters=1)
    gone = started_attempt(study, "gone")
    Attempt.objects.filter(pk=gone.pk).update(deadline=timezone.now() - timedelta(minutes=5))
    assert started_attempt(study, "new").status == AttemptStatus.STARTED


def test_extend_moves_deadline_and_leases(make_study):
    study = make_study()
    attempt = started_attempt(study)
    extended = attempt_extend(attempt_id=attempt.pk, seconds=600)
    assert extended.deadline == attempt.deadline + timedelta(seconds=600)
    assert set(extended.leases.values_list("expires_at", flat=True)) == {extended.deadline}


def test_raters_cannot_drop_below_current_load(make_study):
    study = make_study(n_items=3, per_participant=3, raters=2)
    started_attempt(study, "a")
    started_attempt(study, "b")
    with pytest.raises(RatersBelowLoad) as error:
        study_update(study_id=study.pk, raters=1)
    assert (error.value.field, error.value.http_status, error.value.busiest) == ("raters", 409, 2)


# --------------------------------------------------------------------------- review fixes

@pytest.mark.django_db(transaction=True)
def test_sweep_does_not_expire_an_attempt_extended_meanwhile(make_study):
    """The sweep picks candidates without locks; an extension committed before it gets the row lock must win."""
    import threading
    import time

    from django.db import connection, transaction

    study = make_study(grace_seconds=0)
    attempt = started_attempt(study)
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=10))
    locked, release = threading.Event(), threading.Event()
    sweep_waited = threading.Event()

    def researcher_extends():
        try:
            with transaction.atomic():
                Attempt.objects.select_for_update().get(pk=attempt.pk)
                locked.set()
                release.wait(10)
                attempt_extend(attempt_id=attempt.pk, seconds=600)
        finally:
            connection.close()

    def release_once_the_sweep_waits():
        """Let the extension commit only while the sweep waits for the attempt's row lock (seen by PostgreSQL)."""
        try:
            with connection.cursor() as cursor:
                for _ in range(1000):
                    cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                   " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
                    if cursor.fetchone()[0]:
                        sweep_waited.set()
                        break
                    time.sleep(0.01)
        finally:
            release.set()
            connection.close()

    thread = threading.Thread(target=researcher_extends)
    thread.start()
    assert locked.wait(10)
    threading.Thread(target=release_once_the_sweep_waits).start()
    expired = attempts_sweep()
    thread.join(10)
    attempt.refresh_from_db()
    assert sweep_waited.is_set()  # the race this test is about did happen
    assert expired == [] and attempt.status == AttemptStatus.STARTED
    assert attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).count() == study.per_participant


def test_expire_overdue_only_leaves_a_running_attempt_alone(make_study):
    attempt = started_attempt(make_study())
    assert attempt_expire(attempt_id=attempt.pk, overdue_only=True).status == AttemptStatus.STARTED


def test_return_after_the_deadline_closes_the_attempt_as_expired(make_study):
    study = make_study(grace_seconds=5)
    attempt = started_attempt(study)
    _answer(attempt)
    returned = attempt_return(attempt_id=attempt.pk, now=attempt.deadline + timedelta(seconds=6))
    assert returned.status == AttemptStatus.EXPIRED
    assert Response.objects.filter(attempt=attempt).count() == 1


def test_extending_an_expired_attempt_is_refused_and_hands_nothing_back(make_study):
    study = make_study(n_items=3, per_participant=3, raters=1)
    first = started_attempt(study, "a")
    attempt_expire(attempt_id=first.pk)
    second = started_attempt(study, "b")  # takes the released items
    with pytest.raises(AttemptNotRunning):
        attempt_extend(attempt_id=first.pk, seconds=600)
    assert second.status == AttemptStatus.STARTED
    assert set(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == {1}
    assert not first.leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists()


def test_practice_item_can_never_be_a_study_item(make_study, items):
    from annotation.models import Item
    from studies.services import study_create

    ids = items(4)
    with pytest.raises(PracticeItemInPool, match="practice"):
        study_create(slug="prac", item_ids=ids, practice_item=Item.objects.get(pk=ids[0]))
    study = make_study(n_items=3)
    with pytest.raises(PracticeItemInPool, match="practice"):
        study_update(study_id=study.pk, practice_item=Item.objects.get(pk=ids[0]))
    assert study_update(study_id=study.pk, practice_item=Item.objects.get(pk=ids[3])).practice_item_id == ids[3]


def test_an_unshown_question_cannot_be_answered(make_study):
    """Questions come one at a time; answering a later one blind would record a time of 0 s."""
    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = started_attempt(study)
    current = question_open(attempt=attempt).lease.position
    later = next(p for p in range(3) if p != current)
    with pytest.raises(AnswerInvalid) as error:
        _answer(attempt, later)
    assert "position" in error.value.errors and not Response.objects.exists()


def test_refused_answer_keeps_a_bounded_payload(make_study):
    study = make_study()
    attempt = started_attempt(study)
    position = question_open(attempt=attempt).lease.position
    with pytest.raises(AnswerRefused):
        response_submit(token=attempt.token, position=position, chosen_option="9" * 100_000,
                        confidence="x" * 100_000, now=attempt.deadline + timedelta(minutes=1))
    refused = RefusedAnswer.objects.get()
    assert len(refused.payload["chosen_option"]) <= 100 and len(refused.payload["confidence"]) <= 100


def test_response_records_the_language_actually_shown(make_study, items):
    from annotation.models import Item

    ids = items(2)
    zh = {"context": "管家在花园里。", "question": "谁？", "options": ["甲"] * len(Item.objects.get(pk=ids[0]).options)}
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": zh})  # an open Chinese study needs them
    study = make_study(n_items=2, per_participant=1, raters=2, language="zh-hans")
    Item.objects.filter(pk=ids[1]).update(translations={})  # a translation removed after the study opened
    for pid in ("a", "b", "c", "d"):
        attempt = started_attempt(study, pid)
        if attempt.status == AttemptStatus.STARTED:
            _answer(attempt)
    languages = dict(Response.objects.values_list("item_id", "language"))
    assert languages == {ids[0]: "zh-hans", ids[1]: ""}  # item 2 has no translation: shown in the original

"""The current question of an attempt, read with statements built once per process: the same lease, counts and
shown time as the ORM gives, and the shown-time UPDATE is the ORM's own statement with the ORM's effect."""
from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from foundation.server_statements import plain_statements
from studies.models import Attempt, ParticipantLease, ParticipantLeaseStatus
from studies.services import attempt_question, attempt_start, question_open, response_submit, study_join
from studies.services.attempts import _HANDED_OUT_FIELDS
from studies.services.questions import _SHOWN_AT_UPDATE
from tests.studies.conftest import started_attempt


def _same_lease(a: ParticipantLease, b: ParticipantLease) -> None:
    assert type(a) is type(b) and a.get_deferred_fields() == b.get_deferred_fields()
    loaded = [f.attname for f in a._meta.concrete_fields if f.attname not in a.get_deferred_fields()]
    assert {n: getattr(a, n) for n in loaded} == {n: getattr(b, n) for n in loaded}
    assert a._state.db == b._state.db and a._state.adding is b._state.adding is False


def _orm_leases(attempt) -> list[ParticipantLease]:
    return list(ParticipantLease.objects.filter(attempt_id=attempt.pk)
                .only("id", "position", "status", "shown_at", "shown_content_version", "shown_language", "item_id",
                      "draft_highlights", "draft_revision")
                .order_by("position"))


def test_the_question_is_the_first_active_lease_as_the_orm_reads_it_with_the_counts(make_study):
    study = make_study(n_items=10, per_participant=4, raters=1)
    attempt = started_attempt(study)
    for answered in range(4):
        question = question_open(attempt=attempt)
        leases = _orm_leases(attempt)
        current = next(lease for lease in leases if lease.status == ParticipantLeaseStatus.ACTIVE)
        _same_lease(question.lease, current)  # shown now: the row and the instance agree on the time
        assert question.lease.shown_at is not None
        assert (question.number, question.total, question.answered) == (current.position + 1, 4, answered)
        ParticipantLease.objects.filter(pk=current.pk).update(draft_highlights=[{"start": 0, "end": 3, "text": "x"}])
        again = question_open(attempt=attempt)  # a reload: the draft comes with the lease, converted
        _same_lease(again.lease, _orm_leases(attempt)[current.position])
        assert again.lease.draft_highlights == [{"start": 0, "end": 3, "text": "x"}] and not again.first_shown
        response_submit(token=attempt.token, position=current.position, chosen_option=0)
    assert question_open(attempt=attempt) is None


def test_a_question_past_its_own_limit_is_timed_out_and_the_next_one_is_shown(make_study):
    study = make_study(n_items=10, per_participant=3, raters=1, question_time_limit_seconds=30, grace_seconds=2)
    attempt = started_attempt(study)
    t0 = timezone.now()
    first = question_open(attempt=attempt, now=t0)
    second = question_open(attempt=attempt, now=t0 + timedelta(seconds=33))
    assert second.lease.pk != first.lease.pk and second.answered == 0 and second.number == first.number + 1
    assert ParticipantLease.objects.get(pk=first.lease.pk).status == ParticipantLeaseStatus.TIMED_OUT
    assert second.first_shown and second.seconds_left == 30


def test_the_shown_at_update_is_the_orms_statement_with_the_orms_effect(make_study):
    study = make_study(n_items=10, per_participant=3, raters=2)
    # The second question of each (the first counts as shown from the start).
    ours, orm = (ParticipantLease.objects.get(attempt=started_attempt(study), position=1) for _ in range(2))
    now = timezone.now()
    with plain_statements(), CaptureQueriesContext(connection) as ran_ours:  # prepared: tests/foundation
        counts_ours = [_SHOWN_AT_UPDATE.run(ours.pk, now, 3, "zh-hans"),
                       _SHOWN_AT_UPDATE.run(ours.pk, now + timedelta(seconds=1), 4, "")]
    with CaptureQueriesContext(connection) as ran_orm:
        counts_orm = [_SHOWN_AT_UPDATE.orm_update(orm.pk, now, 3, "zh-hans"),
                      _SHOWN_AT_UPDATE.orm_update(orm.pk, now + timedelta(seconds=1), 4, "")]
    assert counts_ours == counts_orm == [1, 0]  # only the first time: a second showing keeps the first time
    assert [q["sql"].replace(f'."id" = {ours.pk} ', '."id" = ID ') for q in ran_ours] == \
        [q["sql"].replace(f'."id" = {orm.pk} ', '."id" = ID ') for q in ran_orm]
    assert all('."id" = ID ' in q["sql"].replace(f'."id" = {ours.pk} ', '."id" = ID ') for q in ran_ours)
    assert ParticipantLease.objects.get(pk=ours.pk).shown_at == ParticipantLease.objects.get(pk=orm.pk).shown_at == now
    assert [(lease.shown_content_version, lease.shown_language) for lease in
            ParticipantLease.objects.filter(pk__in=[ours.pk, orm.pk])] == [(3, "zh-hans")] * 2
    with transaction.atomic():  # inside a transaction too (the next question after an answer)
        assert _SHOWN_AT_UPDATE.run(-1, now, 1, "") == 0


def test_the_question_of_a_start_comes_from_the_leases_it_handed_out_once_then_from_the_database(make_study):
    """Start's page reads no lease (the hand-out gave them), counts the time left from now, and has no draft yet;
    the same instance's next question is read from the database again (the handed-out leases are used once)."""
    study = make_study(n_items=10, per_participant=3, raters=1, question_time_limit_seconds=60)
    attempt = started_attempt(study)
    assert [lease.position for lease in attempt.handed_out] == [0, 1, 2]
    later = attempt.started_at + timedelta(seconds=10)
    with CaptureQueriesContext(connection) as ran:
        first = attempt_question(attempt=attempt, now=later)
    assert not ran.captured_queries and attempt.handed_out is None
    assert first.first_shown and first.seconds_left == 50 and (first.number, first.total, first.answered) == (1, 3, 0)
    _same_lease(first.lease, ParticipantLease.objects.only(*_HANDED_OUT_FIELDS).get(pk=first.lease.pk))
    ParticipantLease.objects.filter(pk=first.lease.pk).update(draft_highlights=[{"start": 0, "end": 3, "text": "x"}])
    again = attempt_question(attempt=attempt, now=later)  # a reload: the database, the draft with it
    assert again.lease.draft_highlights == [{"start": 0, "end": 3, "text": "x"}] and not again.first_shown


def test_a_second_start_that_overlaps_the_first_returns_the_attempt_as_the_first_left_it(make_study):
    """Two Starts of one attempt at once (a double click, two tabs): the second read the attempt before the first
    handed out; its hand-out does nothing, and it returns the attempt as it now is (started, with its deadline),
    whose page is the first question: not its stale copy (which had no deadline: a 500 on the page)."""
    study = make_study(n_items=10, per_participant=3, raters=1)
    joined = study_join(study=study, participant_id="twice")
    stale = Attempt.objects.select_related("study").get(pk=joined.pk)
    first = attempt_start(attempt_id=joined.pk)
    second = attempt_start(attempt_id=joined.pk, attempt=stale)
    assert (second.status, second.started_at, second.deadline) == (first.status, first.started_at, first.deadline)
    assert second.handed_out is None and ParticipantLease.objects.filter(attempt=joined).count() == 3
    question = attempt_question(attempt=second)
    assert question.number == 1 and question.lease.pk == first.handed_out[0].pk

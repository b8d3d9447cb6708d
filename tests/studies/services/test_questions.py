"""The current question of an attempt, read with statements built once per process: the same lease, counts and
shown time as the ORM gives, and the shown-time UPDATE is the ORM's own statement with the ORM's effect."""
from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from studies.models import ParticipantLease, ParticipantLeaseStatus
from studies.services import question_open, response_submit
from studies.services.questions import _SHOWN_AT_UPDATE
from tests.studies.conftest import started_attempt


def _same_lease(a: ParticipantLease, b: ParticipantLease) -> None:
    assert type(a) is type(b) and a.get_deferred_fields() == b.get_deferred_fields()
    loaded = [f.attname for f in a._meta.concrete_fields if f.attname not in a.get_deferred_fields()]
    assert {n: getattr(a, n) for n in loaded} == {n: getattr(b, n) for n in loaded}
    assert a._state.db == b._state.db and a._state.adding is b._state.adding is False


def _orm_leases(attempt) -> list[ParticipantLease]:
    return list(ParticipantLease.objects.filter(attempt_id=attempt.pk)
                .only("id", "position", "status", "shown_at", "item_id", "draft_highlights").order_by("position"))


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
    with CaptureQueriesContext(connection) as ran_ours:
        counts_ours = [_SHOWN_AT_UPDATE.run(ours.pk, now), _SHOWN_AT_UPDATE.run(ours.pk, now + timedelta(seconds=1))]
    with CaptureQueriesContext(connection) as ran_orm:
        counts_orm = [_SHOWN_AT_UPDATE.orm_update(orm.pk, now),
                      _SHOWN_AT_UPDATE.orm_update(orm.pk, now + timedelta(seconds=1))]
    assert counts_ours == counts_orm == [1, 0]  # only the first time: a second showing keeps the first time
    assert [q["sql"].replace(f'."id" = {ours.pk} ', '."id" = ID ') for q in ran_ours] == \
        [q["sql"].replace(f'."id" = {orm.pk} ', '."id" = ID ') for q in ran_orm]
    assert all('."id" = ID ' in q["sql"].replace(f'."id" = {ours.pk} ', '."id" = ID ') for q in ran_ours)
    assert ParticipantLease.objects.get(pk=ours.pk).shown_at == ParticipantLease.objects.get(pk=orm.pk).shown_at == now
    with transaction.atomic():  # inside a transaction too (the next question after an answer)
        assert _SHOWN_AT_UPDATE.run(-1, now) == 0

"""The question an attempt is on: which one, the time left for it, and when it was first shown.

The hottest read of a study (every question page, and the next question after each answer), so its statements
are built once per process: the leases read (`_LEASES`, foundation.prepared_queries) and the UPDATE that records
when a question is first shown (`_SHOWN_AT_UPDATE`, a PreparedUpdate). A page needs only
the current lease as a model instance: the others are read as rows (status, shown time), not fifteen instances.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from annotation.models import Item
from foundation.prepared_queries import PreparedQuery, PreparedUpdate
from studies.content import SHOWN_ITEM_FIELDS
from studies.models import Attempt, AttemptStatus, ParticipantLease, ParticipantLeaseStatus
from studies.services.attempts import attempt_expire, attempt_finish_if_done, leases_time_out

#: An attempt's leases in presentation order, with only what the question flow and an answer need.
_LEASES = PreparedQuery(
    lambda attempt_id: ParticipantLease.objects.filter(attempt_id=attempt_id)
    .only("id", "position", "status", "shown_at", "shown_content_version", "shown_language", "item_id",
          "draft_highlights", "draft_revision").order_by("position"),
    -730_001)
_SHOWN_ITEM = PreparedQuery(lambda pk: Item.objects.only(*SHOWN_ITEM_FIELDS).filter(pk=pk)[:1], -730_004)


@dataclass
class Question:
    """The question an attempt is on now, with the time the participant has left for it."""

    lease: ParticipantLease
    number: int          # 1-based among the attempt's items
    total: int
    answered: int
    seconds_left: int    # min(attempt deadline, question deadline) - now
    first_shown: bool = False  # shown for the first time now (so it has no highlight draft yet)


def shown_item_of(lease: ParticipantLease) -> Item:
    """The item of a lease with only the fields a participant may see (already loaded after an answer)."""
    if ParticipantLease.item.is_cached(lease):
        return lease.item
    item = _SHOWN_ITEM.first(lease.item_id)
    if item is None:
        raise Item.DoesNotExist(f"no item {lease.item_id}")
    lease.item = item
    return item


def question_open(*, attempt: Attempt, now: datetime | None = None) -> Question | None:
    """The attempt's current question (first unanswered lease); records when it was first shown.

    Questions whose own time limit has passed are timed out first (their items return to the pool).
    Returns None when nothing is left (the attempt is then finished).
    """
    now = now or timezone.now()
    rows = _LeaseRows.read(attempt.pk)
    ID, STATUS, SHOWN_AT = _LeaseRows.ID, _LeaseRows.STATUS, _LeaseRows.SHOWN_AT
    statuses = [row[STATUS] for row in rows]
    limit = attempt.study.question_time_limit_seconds
    grace = timedelta(seconds=attempt.study.grace_seconds)
    if limit:
        overdue = [i for i, row in enumerate(rows) if row[STATUS] == ParticipantLeaseStatus.ACTIVE and row[SHOWN_AT]
                   and row[SHOWN_AT] + timedelta(seconds=limit) + grace < now]
        if overdue:
            leases_time_out(attempt_id=attempt.pk, lease_ids=[rows[i][ID] for i in overdue], now=now)
            for i in overdue:
                statuses[i] = ParticipantLeaseStatus.TIMED_OUT
    if ParticipantLeaseStatus.ACTIVE not in statuses:
        attempt_finish_if_done(attempt_id=attempt.pk, now=now)
        attempt.refresh_from_db(fields=["status", "ended_at"])
        return None
    lease = _LeaseRows.instance(rows[statuses.index(ParticipantLeaseStatus.ACTIVE)])
    return question_next(attempt, lease, total=len(rows), answered=statuses.count(ParticipantLeaseStatus.ANSWERED),
                     now=now)


def attempt_question(*, attempt: Attempt, now: datetime | None = None) -> Question | None:
    """The question the attempt's page shows now; None when the attempt is not running (any more).

    A page load after the deadline (plus grace) closes the attempt before the sweep does; an extension
    committed meanwhile wins (the deadline is checked again under the row lock). `attempt` is updated.
    """
    if attempt.status != AttemptStatus.STARTED:
        return None
    now = now or timezone.now()
    if attempt.handed_out:  # this instance's Start handed them out just now (once: later pages read them)
        leases, attempt.handed_out = attempt.handed_out, None
        # All just handed out, none answered: the first is the question (the others stay rows, not instances).
        question = question_next(attempt, leases[0], total=len(leases), answered=0, now=now)
        question.first_shown = True  # shown from the start: no highlight draft yet
        return question

    if attempt.grace_deadline() < now:
        closed = attempt_expire(attempt_id=attempt.pk, now=now, overdue_only=True)
        attempt.status, attempt.ended_at, attempt.deadline = closed.status, closed.ended_at, closed.deadline
        if attempt.status != AttemptStatus.STARTED:
            return None
    return question_open(attempt=attempt, now=now)


def question_next(attempt: Attempt, lease: ParticipantLease, *, total: int, answered: int, now: datetime) -> Question:
    """`lease` as the current question of an attempt of `total` questions, `answered` of them answered; records when
    it is first shown, and the content version and language it is shown at (those of the item read here, which the
    page shows: an answer is scored on them, or refused when the item changed since; a question shown again in
    another language or at another version records that)."""
    first_shown = lease.shown_at is None or lease.shown_at == now
    version = shown_item_of(lease).content_version
    language = attempt.study.language_of(attempt.language)
    if lease.shown_at is None:  # first time shown (after an answer, its UPDATE did this already)
        _SHOWN_AT_UPDATE.run(lease.pk, now, version, language)
        lease.shown_at = now
    elif (lease.shown_content_version, lease.shown_language) != (version, language):  # shown again, otherwise
        _SHOWN_CONTENT_UPDATE.run(lease.pk, version, language)
    lease.shown_content_version, lease.shown_language = version, language
    left = attempt.seconds_left(now)
    limit = attempt.study.question_time_limit_seconds
    if limit:
        left = min(left, max(0, int((lease.shown_at + timedelta(seconds=limit) - now).total_seconds())))
    return Question(lease=lease, number=lease.position + 1, total=total, answered=answered, seconds_left=left,
                    first_shown=first_shown)


class _LeaseRows:
    """`_LEASES`'s rows kept as they are read: a page or an answer needs the statuses, shown times and positions of
    all the leases but only one or two of them as model instances (made as `_LEASES.run` makes them, converters
    included): not fifteen instances, each with its draft's JSON decoded."""

    ID, STATUS, SHOWN_AT, POSITION = 0, 1, 2, 3  # a row of `read`: these, then the row as the statement gives it

    @staticmethod
    def read(attempt_id: int) -> list[tuple]:
        rows = _LEASES.rows(attempt_id)
        return [(*values, row) for values, row in zip(_LEASES.fields(rows, "id", "status", "shown_at", "position"),
                                                      rows)]

    @staticmethod
    def instance(row: tuple) -> ParticipantLease:
        return _LEASES.instances([row[-1]])[0]


#: When a question is first shown: `filter(pk=lease_id, shown_at__isnull=True).update(shown_at=now, ...)` with the
#: content version and language shown, compiled once.
_SHOWN_AT_UPDATE = PreparedUpdate(
    lambda lease_id, at, version, language: (
        ParticipantLease.objects.filter(pk=lease_id, shown_at__isnull=True),
        {"shown_at": at, "shown_content_version": version, "shown_language": language}),
    -730_005, datetime(1901, 2, 3, 4, 5, 6, 789, tzinfo=UTC), 730_006, "marker:language")
#: A question shown again at another content version or in another language (after a language switch, or after an
#: answer refused because the item changed): what the page shows now is what an answer is checked against.
_SHOWN_CONTENT_UPDATE = PreparedUpdate(
    lambda lease_id, version, language: (
        ParticipantLease.objects.filter(pk=lease_id),
        {"shown_content_version": version, "shown_language": language}),
    -730_007, 730_008, "marker:language")

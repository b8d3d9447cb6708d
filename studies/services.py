"""Writes for studies: setup, joining, hand-out of leases, answers, expiry. One transaction each.

Lock order everywhere: attempt row -> study row -> study-item rows. Every change of a
study item's load (hand-out and release) happens while holding the study row, so that
hand-outs of one study are serialized and quotas can never be exceeded; the database
check `load <= quota` guards it as well.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Sequence

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Item

from .allocation import Slot, choose_items, presentation_order
from .content import AnswerInvalid, clean_answer, shown_item
from .models import (
    Attempt, AttemptStatus, ParticipantLease, ParticipantLeaseStatus, RefusedAnswer, Response, Study, StudyItem, StudyStatus,
)


class StudyError(Exception):
    """A participant-facing refusal: `code` for programs, message for people, `http_status` for views."""

    http_status = 409
    code = "study_error"


class StudyNotOpen(StudyError):
    code = "not_open"


class AnswerRefused(StudyError):
    """An answer that cannot be accepted (late, already answered, attempt not running)."""

    def __init__(self, reason: str, message: str, http_status: int = 409):
        super().__init__(message)
        self.reason, self.http_status = reason, http_status
        self.code = reason


__all__ = [
    "AnswerInvalid", "AnswerRefused", "StudyError", "StudyNotOpen", "attempt_expire",
    "attempt_extend", "attempt_return", "attempt_start", "attempts_sweep", "question_open", "response_submit",
    "shown_item_of",
    "study_create", "study_join", "study_set_pool", "study_update", "sample_pool",
]


# --------------------------------------------------------------------------- setup

def sample_pool(*, split: str, sample: int | None, seed: int) -> list[int]:
    """Item ids of a split, a seeded random sample of `sample` of them (all when None), in id order."""
    ids = list(Item.objects.filter(split=split).order_by("id").values_list("id", flat=True))
    if sample is not None and sample < len(ids):
        ids = sorted(random.Random(seed).sample(ids, sample))
    return ids


@transaction.atomic
def study_create(*, slug: str, title: str = "", item_ids: Sequence[int], user=None, **fields: Any) -> Study:
    """Create a study (draft unless `status` is given) with its item pool."""
    study = Study(slug=slug, title=title or slug, created_by=user, **fields)
    study.full_clean(exclude=["created_by", "practice_item"])
    study.save()
    _pool_write(study, item_ids)
    _practice_check(study)
    return study


@transaction.atomic
def study_update(*, study_id: int, item_ids: Sequence[int] | None = None, **fields: Any) -> Study:
    """Change a study's settings; the pool may change only while no attempt has started."""
    study = Study.objects.select_for_update().get(pk=study_id)
    for name, value in fields.items():
        setattr(study, name, value)
    study.full_clean(exclude=["created_by", "practice_item"])
    study.save()
    if item_ids is not None and list(item_ids) != list(study.pool.values_list("item_id", flat=True)):
        study_set_pool(study=study, item_ids=item_ids)
    if "raters" in fields:
        busiest = max(study.pool.values_list("load", flat=True), default=0)
        if study.raters < busiest:
            raise ValueError(f"An item already has {busiest} raters; raters cannot go below that.")
        study.pool.update(quota=study.raters)
    _practice_check(study)
    return study


def _practice_check(study: Study) -> None:
    """The practice question tells the participant whether they were right: it must never be a study item."""
    if study.practice_item_id and study.pool.filter(item_id=study.practice_item_id).exists():
        raise ValueError("The practice item is part of the study's item pool; choose another practice item.")


@transaction.atomic
def study_set_pool(*, study: Study, item_ids: Sequence[int]) -> None:
    if ParticipantLease.objects.filter(attempt__study=study).exists():
        raise ValueError("The item pool cannot change after participants have started.")
    study.pool.all().delete()
    _pool_write(study, item_ids)


def _pool_write(study: Study, item_ids: Sequence[int]) -> None:
    unique = list(dict.fromkeys(item_ids))
    if len(unique) != Item.objects.filter(pk__in=unique).count():
        raise ValueError("Some item ids do not exist.")
    StudyItem.objects.bulk_create(
        StudyItem(study=study, item_id=item_id, position=i, quota=study.raters) for i, item_id in enumerate(unique)
    )


# --------------------------------------------------------------------------- joining and starting

def study_join(*, study: Study, participant_id: str = "", external_study_id: str = "", session_id: str = "",
               cookie_token: str = "", user_agent: str = "") -> Attempt:
    """Join a study after consent; idempotent on the external participant id or the browser's attempt cookie."""
    participant_id = participant_id.strip()[:100]
    existing = None
    if participant_id:
        existing = Attempt.objects.filter(study=study, external_participant_id=participant_id).first()
    if existing is None and cookie_token:
        existing = Attempt.objects.filter(study=study, token=cookie_token).first()
    if existing is not None:
        return existing
    if study.status != StudyStatus.OPEN:
        raise StudyNotOpen("This study is not open.")
    try:
        with transaction.atomic():
            return Attempt.objects.create(
                study=study, external_participant_id=participant_id, external_study_id=external_study_id[:100],
                external_session_id=session_id[:100], user_agent=user_agent[:300],
            )
    except IntegrityError:  # the same participant joined twice at once
        return Attempt.objects.get(study=study, external_participant_id=participant_id)


@transaction.atomic
def attempt_start(*, attempt_id: int, now: datetime | None = None) -> Attempt:
    """Hand out the attempt's items as leases and start its clock; the attempt becomes FULL when the pool cannot.

    Idempotent: an attempt that already started is returned unchanged (double click, second tab).
    """
    now = now or timezone.now()
    attempt = Attempt.objects.select_for_update(of=("self",)).select_related("study").get(pk=attempt_id)
    if attempt.status not in (AttemptStatus.JOINED, AttemptStatus.FULL):
        return attempt
    study = Study.objects.select_for_update().get(pk=attempt.study_id)  # serializes this study's hand-outs
    if study.status != StudyStatus.OPEN:
        raise StudyNotOpen("This study is not open.")
    _release_overdue(study, now)
    rows = list(
        StudyItem.objects.select_for_update(skip_locked=True)
        .filter(study=study, load__lt=F("quota"))
        .values_list("id", "item_id", "quota", "load", "released_at")
    )
    item_of = {row[0]: row[1] for row in rows}
    seed = f"{study.seed}:{attempt.pk}"
    chosen = choose_items((Slot(pk, quota, load, released is not None) for pk, _, quota, load, released in rows),
                          study.per_participant, seed=seed)
    if chosen is None:
        attempt.status = AttemptStatus.FULL
        attempt.save(update_fields=["status"])
        return attempt
    deadline = now + timedelta(seconds=study.time_limit_seconds)
    StudyItem.objects.filter(pk__in=chosen).update(load=F("load") + 1, released_at=None)
    ParticipantLease.objects.bulk_create(
        ParticipantLease(attempt=attempt, study_item_id=pk, item_id=item_of[pk], position=i, expires_at=deadline)
        for i, pk in enumerate(presentation_order(chosen, seed=seed))
    )
    attempt.status, attempt.started_at, attempt.deadline = AttemptStatus.STARTED, now, deadline
    attempt.save(update_fields=["status", "started_at", "deadline"])
    return attempt


# --------------------------------------------------------------------------- questions and answers

@dataclass
class Question:
    """The question an attempt is on now, with the time the participant has left for it."""

    lease: ParticipantLease
    number: int          # 1-based among the attempt's items
    total: int
    answered: int
    seconds_left: int    # min(attempt deadline, question deadline) - now


def question_open(*, attempt: Attempt, now: datetime | None = None) -> Question | None:
    """The attempt's current question (first unanswered lease); records when it was first shown.

    Questions whose own time limit has passed are timed out first (their items return to the pool).
    Returns None when nothing is left (the attempt is then finished).
    """
    now = now or timezone.now()
    leases = _attempt_leases(attempt)
    limit = attempt.study.question_time_limit_seconds
    grace = timedelta(seconds=attempt.study.grace_seconds)
    if limit:
        overdue = [l for l in leases if l.status == ParticipantLeaseStatus.ACTIVE and l.shown_at
                   and l.shown_at + timedelta(seconds=limit) + grace < now]
        if overdue:
            _leases_time_out(attempt_id=attempt.pk, lease_ids=[l.pk for l in overdue], now=now)
            for l in overdue:
                l.status = ParticipantLeaseStatus.TIMED_OUT
    if not any(l.status == ParticipantLeaseStatus.ACTIVE for l in leases):
        _attempt_finish_if_done(attempt_id=attempt.pk, now=now)
        attempt.refresh_from_db(fields=["status", "ended_at"])
        return None
    return _question_from(attempt, leases, now)


SHOWN_ITEM_FIELDS = ("id", "context", "question", "options", "translations")


def _attempt_leases(attempt: Attempt) -> list[ParticipantLease]:
    """The attempt's leases in presentation order, with only what the question flow needs."""
    return list(
        ParticipantLease.objects.filter(attempt=attempt).only("id", "position", "status", "shown_at", "item_id")
        .order_by("position")
    )


def shown_item_of(lease: ParticipantLease) -> Item:
    """The item of a lease with only the fields a participant may see (already loaded after an answer)."""
    if ParticipantLease.item.is_cached(lease):
        return lease.item
    item = Item.objects.only(*SHOWN_ITEM_FIELDS).get(pk=lease.item_id)
    lease.item = item
    return item


def _question_from(attempt: Attempt, leases: list[ParticipantLease], now: datetime) -> Question:
    """The first active lease of `leases` as the current question; records when it is first shown."""
    lease = next(l for l in leases if l.status == ParticipantLeaseStatus.ACTIVE)
    if lease.shown_at is None:  # first time shown (after an answer, its UPDATE did this already)
        ParticipantLease.objects.filter(pk=lease.pk, shown_at__isnull=True).update(shown_at=now)
        lease.shown_at = now
    left = attempt.seconds_left(now)
    limit = attempt.study.question_time_limit_seconds
    if limit:
        left = min(left, max(0, int((lease.shown_at + timedelta(seconds=limit) - now).total_seconds())))
    answered = sum(1 for l in leases if l.status == ParticipantLeaseStatus.ANSWERED)
    return Question(lease=lease, number=lease.position + 1, total=len(leases), answered=answered, seconds_left=left)


def response_submit(*, token: str, position: int, chosen_option: Any, confidence: Any = None,
                    highlights: Any = None, now: datetime | None = None) -> Submitted:
    """Accept one answer, or refuse it (AnswerRefused: kept as a RefusedAnswer) or reject it (AnswerInvalid).

    Accepted: within the attempt's deadline (and the question's limit) plus the study's grace seconds;
    answers in the grace period are flagged late. Refused after that: the attempt is expired right away.
    """
    now = now or timezone.now()
    try:
        return _response_submit(token=token, position=position, chosen_option=chosen_option,
                                confidence=confidence, highlights=highlights, now=now)
    except AnswerRefused as refusal:
        _refusal_record(token=token, position=position, reason=refusal.reason, now=now,
                        payload={"chosen_option": _bounded(chosen_option), "confidence": _bounded(confidence),
                                 "highlights": highlights})
        raise


@dataclass
class Submitted:
    """An accepted answer and what comes next (None when it was the last one: the attempt is finished)."""

    response: Response
    attempt: Attempt
    next_question: Question | None


@transaction.atomic
def _response_submit(*, token, position, chosen_option, confidence, highlights, now) -> Submitted:
    # The hot path of a study: BEGIN, attempt (locked), its leases, the answered and the next item (one
    # statement), INSERT the response, UPDATE both leases (one statement), COMMIT; the last answer adds
    # the UPDATE that finishes the attempt. The attempt row lock serializes every change of its leases.
    attempt = Attempt.objects.select_for_update(of=("self",)).select_related("study").filter(token=token).first()
    if attempt is None:
        raise AnswerRefused("unknown", "Unknown attempt.", 404)
    if attempt.status != AttemptStatus.STARTED:
        raise AnswerRefused(RefusedAnswer.Reason.CLOSED, CLOSED_MESSAGE, 410)
    study = attempt.study
    leases = _attempt_leases(attempt)
    at = _as_position(position)
    lease = next((l for l in leases if l.position == at), None)
    if lease is None:
        raise AnswerRefused("unknown", "This question is not part of your attempt.", 404)
    grace = timedelta(seconds=study.grace_seconds)
    if now > attempt.deadline + grace:
        raise AnswerRefused(RefusedAnswer.Reason.LATE, "Time is up: answers after the deadline are not accepted.", 409)
    if lease.status == ParticipantLeaseStatus.ANSWERED:
        raise AnswerRefused(RefusedAnswer.Reason.ALREADY_ANSWERED, "This question has already been answered.", 409)
    if lease.status != ParticipantLeaseStatus.ACTIVE:
        raise AnswerRefused(RefusedAnswer.Reason.QUESTION_TIMEOUT, "The time for this question is up.", 409)
    if lease.shown_at is None:  # questions come one at a time: an answer needs the time its question was shown
        raise AnswerInvalid({"position": "This question has not been shown yet."})
    shown_at = lease.shown_at
    question_deadline = attempt.deadline
    if study.question_time_limit_seconds:
        question_deadline = min(question_deadline, shown_at + timedelta(seconds=study.question_time_limit_seconds))
        if now > question_deadline + grace:
            raise AnswerRefused(RefusedAnswer.Reason.QUESTION_TIMEOUT, "The time for this question is up.", 409)
    following = next((l for l in leases if l.status == ParticipantLeaseStatus.ACTIVE and l.pk != lease.pk), None)
    items = Item.objects.only(*SHOWN_ITEM_FIELDS, "answer_index").in_bulk(
        [lease.item_id] + ([following.item_id] if following else []))
    item = items[lease.item_id]
    shown = shown_item(context=item.context, question=item.question, options=item.options,
                       translations=item.translations, language=study.language)
    option, conf, spans = clean_answer(context=shown.context, n_options=len(shown.options),
                                       chosen_option=chosen_option, confidence=confidence, highlights=highlights)
    response = Response.objects.create(
        attempt=attempt, item=item, lease=lease, chosen_option=option, confidence=conf, highlights=spans,
        language=shown.language, is_correct=option == item.answer_index, shown_at=shown_at, answered_at=now,
        is_late=now > question_deadline,
    )
    lease.status, lease.ended_at, lease.shown_at = ParticipantLeaseStatus.ANSWERED, now, shown_at
    if following is None:
        ParticipantLease.objects.filter(pk=lease.pk).update(status=ParticipantLeaseStatus.ANSWERED, ended_at=now, shown_at=shown_at)
        # The final answer and the end of the attempt commit together: the completion code follows this.
        Attempt.objects.filter(pk=attempt.pk).update(status=AttemptStatus.FINISHED, ended_at=now)
        attempt.status, attempt.ended_at = AttemptStatus.FINISHED, now
        return Submitted(response=response, attempt=attempt, next_question=None)
    # The answered lease ends and the next question is shown from now on (unless it was shown already).
    # Plain SQL: the ORM's Case/When version of this statement costs more CPU than the rest of the request's queries.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {ParticipantLease._meta.db_table} SET"
            " status = CASE WHEN id = %(answered)s THEN %(status)s ELSE status END,"
            " ended_at = CASE WHEN id = %(answered)s THEN %(now)s ELSE ended_at END,"
            " shown_at = CASE WHEN id = %(answered)s THEN %(shown_at)s ELSE COALESCE(shown_at, %(now)s) END"
            " WHERE id IN (%(answered)s, %(following)s)",
            {"answered": lease.pk, "following": following.pk, "status": ParticipantLeaseStatus.ANSWERED.value, "now": now,
             "shown_at": shown_at},
        )
    if following.shown_at is None:
        following.shown_at = now
    following.item = items[following.item_id]  # rendered next: no second query for it
    return Submitted(response=response, attempt=attempt, next_question=_question_from(attempt, leases, now))


CLOSED_MESSAGE = "This attempt is no longer running: time is up or it was closed."


def _bounded(value: Any, limit: int = 100) -> Any:
    """A raw form value as kept with a refused answer: strings cut to `limit` characters."""
    return value[:limit] if isinstance(value, str) else value


def _as_position(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


@transaction.atomic
def _refusal_record(*, token: str, position: Any, reason: str, now: datetime, payload: dict) -> None:
    attempt = Attempt.objects.filter(token=token).first()
    if attempt is None:
        return
    lease = ParticipantLease.objects.filter(attempt=attempt, position=_as_position(position)).only("id", "item_id").first()
    RefusedAnswer.objects.create(attempt=attempt, item_id=lease.item_id if lease else None, reason=reason,
                                 received_at=now, payload=payload)
    if reason == RefusedAnswer.Reason.LATE:
        attempt_expire(attempt_id=attempt.pk, now=now, overdue_only=True)
    elif reason == RefusedAnswer.Reason.QUESTION_TIMEOUT and lease is not None:
        _leases_time_out(attempt_id=attempt.pk, lease_ids=[lease.pk], now=now)


@transaction.atomic
def _leases_time_out(*, attempt_id: int, lease_ids: Sequence[int], now: datetime) -> None:
    attempt = Attempt.objects.select_for_update().get(pk=attempt_id)
    Study.objects.select_for_update().filter(pk=attempt.study_id).first()
    _leases_release(ParticipantLease.objects.filter(pk__in=lease_ids, status=ParticipantLeaseStatus.ACTIVE), now, ParticipantLeaseStatus.TIMED_OUT)
    _attempt_finish_if_done(attempt_id=attempt_id, now=now)


def _attempt_finish_if_done(*, attempt_id: int, now: datetime) -> None:
    if not ParticipantLease.objects.filter(attempt_id=attempt_id, status=ParticipantLeaseStatus.ACTIVE).exists():
        Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.STARTED).update(
            status=AttemptStatus.FINISHED, ended_at=now)


# --------------------------------------------------------------------------- dropout and time

@transaction.atomic
def attempt_expire(*, attempt_id: int, now: datetime | None = None, status: str = AttemptStatus.EXPIRED,
                   overdue_only: bool = False) -> Attempt:
    """Close a running attempt (deadline passed, researcher, or the participant returned it).

    Its unanswered leases go back to the pool; its answers are kept. Idempotent. With `overdue_only`
    (the sweep, a late answer, a page load after the deadline) the deadline is checked again under the
    row lock, so that an extension committed in the meantime wins. Returning an attempt after its
    deadline (plus grace) closes it as expired: the deadline holds on every write path.
    """
    now = now or timezone.now()
    attempt = Attempt.objects.select_for_update(of=("self",)).select_related("study").get(pk=attempt_id)
    if attempt.status not in (AttemptStatus.STARTED, AttemptStatus.JOINED):
        return attempt
    overdue = attempt.deadline is not None and attempt.grace_deadline() < now
    if overdue_only and not overdue:
        return attempt
    if overdue:
        status = AttemptStatus.EXPIRED
    Study.objects.select_for_update().filter(pk=attempt.study_id).first()
    _leases_release(ParticipantLease.objects.filter(attempt=attempt, status=ParticipantLeaseStatus.ACTIVE), now, ParticipantLeaseStatus.RELEASED)
    attempt.status, attempt.ended_at = status, now
    attempt.save(update_fields=["status", "ended_at"])
    return attempt


def attempt_return(*, attempt_id: int, now: datetime | None = None) -> Attempt:
    """The participant gives up (Prolific: "return the submission")."""
    return attempt_expire(attempt_id=attempt_id, now=now, status=AttemptStatus.RETURNED)


@transaction.atomic
def attempt_extend(*, attempt_id: int, seconds: int) -> Attempt:
    """Move a running attempt's deadline (researcher action); its leases follow."""
    attempt = Attempt.objects.select_for_update().get(pk=attempt_id)
    if attempt.status != AttemptStatus.STARTED:
        raise ValueError("Only a running attempt can be extended.")
    attempt.deadline += timedelta(seconds=seconds)
    attempt.save(update_fields=["deadline"])
    attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).update(expires_at=attempt.deadline)
    return attempt


def attempts_sweep(*, now: datetime | None = None) -> list[int]:
    """Expire every running attempt whose deadline (plus grace) has passed; returns their ids."""
    now = now or timezone.now()
    candidates = Attempt.objects.filter(status=AttemptStatus.STARTED, deadline__lt=now).select_related("study")
    expired = []
    for attempt in candidates:
        if attempt.grace_deadline() < now:
            if attempt_expire(attempt_id=attempt.pk, now=now, overdue_only=True).status == AttemptStatus.EXPIRED:
                expired.append(attempt.pk)
    return expired


def _release_overdue(study: Study, now: datetime) -> None:
    """Inside a hand-out (study row held): release the leases of attempts past their deadline."""
    overdue = list(
        Attempt.objects.select_for_update(skip_locked=True)
        .filter(study=study, status=AttemptStatus.STARTED, deadline__lt=now - timedelta(seconds=study.grace_seconds))
    )
    if not overdue:
        return
    _leases_release(ParticipantLease.objects.filter(attempt__in=overdue, status=ParticipantLeaseStatus.ACTIVE), now, ParticipantLeaseStatus.RELEASED)
    Attempt.objects.filter(pk__in=[a.pk for a in overdue]).update(status=AttemptStatus.EXPIRED, ended_at=now)


def _leases_release(leases, now: datetime, status: str) -> int:
    """End active leases and give their quota back (caller holds the study row)."""
    rows = list(leases.values_list("id", "study_item_id"))
    if not rows:
        return 0
    ParticipantLease.objects.filter(pk__in=[pk for pk, _ in rows]).update(status=status, ended_at=now)
    per_item = Counter(study_item_id for _, study_item_id in rows)
    by_count: dict[int, list[int]] = {}
    for study_item_id, count in per_item.items():
        by_count.setdefault(count, []).append(study_item_id)
    for count, ids in by_count.items():
        StudyItem.objects.filter(pk__in=ids).update(load=F("load") - count, released_at=now)
    return len(rows)


def bonus_for(*, correct: int, study: Study) -> Decimal:
    return study.bonus_per_correct * correct

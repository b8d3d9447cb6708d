"""Attempts: joining, the hand-out of participant leases, dropout and time (expiry, return, extension, sweep).

Lock order everywhere: attempt row -> study row -> study-item rows. Every change of a
study item's load (hand-out and release) happens while holding the study row, so that
hand-outs of one study are serialized and quotas can never be exceeded; the database
check `load <= quota` guards it as well. On PostgreSQL a hand-out holds the study row for
one statement only (studies.services.hand_out), so a class starting at once is not queued
behind round trips.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Item, ItemStatus
from foundation.prepared_queries import PreparedInsert
from studies.allocation import Slot, choose_items, presentation_order
from studies.errors import AttemptNotRunning, PlaceholderId, StudyNotOpen
from studies.links import unfilled_fields
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    ProlificReport,
    Study,
    StudyItem,
    StudyStatus,
)
from studies.prolific.withdrawals import bonus_payments_withdraw
from studies.selectors import attempt_resumable
from studies.services.hand_out import hand_out
from studies.services.loads import loads_change
from studies.services.reasking import given_back_reclaim

log = logging.getLogger(__name__)

#: Joining inserts the attempt with the SQL built once per process (a class joins at once): the row `create` makes.
_ATTEMPT_INSERT = PreparedInsert(Attempt)
#: A new browser's join: the same row, written unless the participant id has an attempt (ON CONFLICT DO NOTHING).
_NEW_ATTEMPT_INSERT = PreparedInsert(Attempt, ignore_conflicts=True)


def study_join(*, study: Study, participant_id: str = "", external_study_id: str = "", session_id: str = "",
               cookie_token: str = "", user_agent: str = "", language: str | None = None) -> Attempt:
    """Join a study after consent; idempotent on the browser's attempt cookie, or on the external participant
    id together with its session id (ParticipantIdTaken when the id has an attempt neither of them opens).
    An id that is an unfilled placeholder of the study link (``{{%PROLIFIC_PID%}}``) is refused (PlaceholderId).

    `language` is the one the participant chose on the consent page (None or one the study does not offer:
    the study's own); a returning participant keeps the attempt's.
    """
    participant_id = participant_id.strip()[:100]
    unfilled = unfilled_fields({"PROLIFIC_PID": participant_id, "STUDY_ID": external_study_id,
                                "SESSION_ID": session_id})
    if unfilled:  # a placeholder as an id: refused (the browser's own attempt still resumes)
        own = attempt_resumable(study=study, cookie_token=cookie_token) if cookie_token else None
        if own is not None:
            return own
        raise PlaceholderId(unfilled)
    def new_attempt() -> Attempt:
        return Attempt(study=study, external_participant_id=participant_id, external_study_id=external_study_id[:100],
                       external_session_id=session_id[:100], user_agent=user_agent[:300],
                       language=study.language_of(language))

    if not cookie_token and study.status == StudyStatus.OPEN and connection.features.can_return_columns_from_insert:
        # A new browser: the INSERT first (one round trip); a participant id with an attempt writes nothing: the rule below
        joined = _NEW_ATTEMPT_INSERT.insert_or_none(new_attempt())
        if joined is not None:
            return joined
    existing = attempt_resumable(study=study, participant_id=participant_id, session_id=session_id,
                                 cookie_token=cookie_token)
    if existing is not None:
        return existing
    if study.status != StudyStatus.OPEN:
        raise StudyNotOpen()
    attempt = new_attempt()
    try:
        if not connection.in_atomic_block:  # one INSERT in autocommit: atomic by itself, no BEGIN and COMMIT round trips
            return _ATTEMPT_INSERT.save(attempt)
        with transaction.atomic():  # in a caller's transaction: a savepoint, so that a lost race leaves it usable
            return _ATTEMPT_INSERT.save(attempt)
    except IntegrityError:  # the same participant joined twice at once: the same rule as above
        existing = attempt_resumable(study=study, participant_id=participant_id, session_id=session_id)
        if existing is None:
            raise
        return existing


def attempt_start(*, attempt_id: int, now: datetime | None = None, attempt: Attempt | None = None) -> Attempt:
    """Hand out the attempt's items as leases and start its clock; the attempt becomes FULL when the pool cannot.

    Idempotent: an attempt that already started is returned unchanged (double click, second tab). On PostgreSQL
    the hand-out is one round trip (studies.services.hand_out), elsewhere the same rule step by step. `attempt`:
    the attempt already read with its study (a page's), updated in place (its status is read again under the lock).
    """
    now = now or timezone.now()
    if connection.vendor != "postgresql":
        return _attempt_start_locked(attempt_id=attempt_id, now=now)
    if attempt is None or attempt.pk != attempt_id:
        attempt = Attempt.objects.select_related("study").get(pk=attempt_id)
    if attempt.status not in (AttemptStatus.JOINED, AttemptStatus.FULL):
        return attempt
    study = attempt.study
    seed = f"{study.seed}:{attempt.pk}"
    overdue_before = now - timedelta(seconds=study.grace_seconds)
    language = study.language_of(attempt.language)  # the first question's page is shown in it
    done = hand_out(attempt_id=attempt.pk, study_id=study.pk, seed=seed, now=now, overdue_before=overdue_before,
                    language=language)
    if done.overdue:  # the study has attempts past their deadline: their leases go back first, then the hand-out
        with transaction.atomic():
            Attempt.objects.select_for_update().filter(pk=attempt.pk).first()  # lock order: attempt -> study
            _release_overdue(Study.objects.select_for_update().get(pk=study.pk), now)
        done = hand_out(attempt_id=attempt.pk, study_id=study.pk, seed=seed, now=now, overdue_before=overdue_before,
                        language=language, ignore_overdue=True)
    if done.status is None:
        if done.status_before != attempt.status:  # changed since it was read (a second Start, a return): as it is
            attempt.refresh_from_db(fields=["status", "started_at", "deadline", "ended_at"])
        if attempt.status in (AttemptStatus.JOINED, AttemptStatus.FULL) and done.study_status != StudyStatus.OPEN:
            raise StudyNotOpen()
        return attempt
    attempt.status, attempt.started_at, attempt.deadline = done.status, done.started_at, done.deadline
    if done.leases:  # the leases as the statement wrote them (a field not written here is left deferred)
        attempt.handed_out = HandedOut(done.leases, attempt_id=attempt.pk, deadline=done.deadline, now=now,
                                       first_version=done.first_item.content_version, language=language)
        attempt.handed_out[0].item = done.first_item  # the first question's page reads no item either
    return attempt


class HandedOut(Sequence):
    """The leases a Start wrote, in presentation order, each made a model instance when it is first read: the first
    question's page reads only the first (ParticipantLease.from_db for all fifteen was a few per cent of a start).
    `written`: (id, study_item_id, item_id) per position, as the hand-out statement returns them."""

    def __init__(self, written: tuple, *, attempt_id: int, deadline: datetime, now: datetime, first_version: int,
                 language: str):
        self._written, self._made = written, {}
        self._attempt_id, self._deadline, self._now = attempt_id, deadline, now
        self._first_version, self._language = first_version, language

    def _make(self, position: int, written: tuple) -> ParticipantLease:
        """The lease as the statement wrote it (a field not written there is left deferred); the first is shown now."""
        lease_id, study_item_id, item_id = written
        first = position == 0
        return ParticipantLease.from_db(connection.alias, _HANDED_OUT_FIELDS, [
            lease_id, self._attempt_id, study_item_id, item_id, position, ParticipantLeaseStatus.ACTIVE,
            self._deadline, self._now if first else None, self._first_version if first else None,
            self._language if first else "", self._now, None, [], None, 0, False,
        ])

    def __repr__(self) -> str:
        return f"<HandedOut {len(self)} leases of attempt {self._attempt_id}>"

    def __len__(self) -> int:
        return len(self._written)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = range(len(self._written))[index]  # a negative index counts from the end; IndexError past it
        if position not in self._made:
            self._made[position] = self._make(position, self._written[position])
        return self._made[position]


_HANDED_OUT_FIELDS = ["id", "attempt_id", "study_item_id", "item_id", "position", "status", "expires_at", "shown_at",
                      "shown_content_version", "shown_language", "created_at", "ended_at", "draft_highlights",
                      "draft_saved_at", "draft_revision", "quota_given_back"]


@transaction.atomic
def _attempt_start_locked(*, attempt_id: int, now: datetime) -> Attempt:
    """attempt_start step by step under the study's row lock (databases other than PostgreSQL)."""
    attempt = Attempt.objects.select_for_update(of=("self",)).select_related("study").get(pk=attempt_id)
    if attempt.status not in (AttemptStatus.JOINED, AttemptStatus.FULL):
        return attempt
    study = Study.objects.select_for_update().get(pk=attempt.study_id)  # serializes this study's hand-outs
    if study.status != StudyStatus.OPEN:
        raise StudyNotOpen()
    _release_overdue(study, now)
    # No row locks: every change of an item's load (hand-outs here, releases in _leases_release) happens while
    # holding the study's row, taken above, so these loads cannot change under us.
    open_items = StudyItem.objects.filter(study=study, load__lt=F("quota"))
    if not study.pool_include_rejected:  # a rejected item is asked about no more (as on PostgreSQL)
        open_items = open_items.exclude(item__status=ItemStatus.REJECTED)
    rows = list(open_items.values_list("id", "item_id", "quota", "load", "released_at"))
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
    # The first question counts as shown from the start: its page is the answer to Start (as on PostgreSQL).
    order = presentation_order(chosen, seed=seed)
    first_version = Item.objects.filter(pk=item_of[order[0]]).values_list("content_version", flat=True).first()
    ParticipantLease.objects.bulk_create(
        ParticipantLease(attempt=attempt, study_item_id=pk, item_id=item_of[pk], position=i, expires_at=deadline,
                         shown_at=now if i == 0 else None, shown_content_version=first_version if i == 0 else None,
                         shown_language=study.language_of(attempt.language) if i == 0 else "")
        for i, pk in enumerate(order)
    )
    attempt.status, attempt.started_at, attempt.deadline = AttemptStatus.STARTED, now, deadline
    attempt.save(update_fields=["status", "started_at", "deadline"])
    return attempt


@transaction.atomic
def leases_time_out(*, attempt_id: int, lease_ids: Sequence[int], now: datetime) -> None:
    attempt = Attempt.objects.select_for_update().get(pk=attempt_id)
    Study.objects.select_for_update().filter(pk=attempt.study_id).first()
    _leases_release(ParticipantLease.objects.filter(pk__in=lease_ids, status=ParticipantLeaseStatus.ACTIVE), now,
                    ParticipantLeaseStatus.TIMED_OUT)
    attempt_finish_if_done(attempt_id=attempt_id, now=now)


def attempt_finish_if_done(*, attempt_id: int, now: datetime) -> None:
    """End a running attempt that has no open question left: finished when it answered at least one question,
    else expired (every question's own time limit ran out): a participant who answered nothing gets the time-out
    code, never the completion code. The caller holds the attempt's row (and the study's) or runs after them."""
    leases = ParticipantLease.objects.filter(attempt_id=attempt_id)
    if leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists():
        return
    answered = leases.filter(status=ParticipantLeaseStatus.ANSWERED).exists()
    ended = Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.STARTED).update(
        status=AttemptStatus.FINISHED if answered else AttemptStatus.EXPIRED, ended_at=now)
    if ended and not answered:
        study = Study.objects.get(attempts__pk=attempt_id)
        _record_timeout_code([attempt_id], study, now)


def attempt_set_language(*, attempt_id: int, language: str) -> Attempt:
    """The participant switches to another of the study's languages (one it does not offer: no change).

    Each answer records the language its item was shown in, so a switch mid-way is visible in the data.
    """
    attempt = Attempt.objects.select_related("study").get(pk=attempt_id)
    if language in attempt.study.languages and language != attempt.language:
        Attempt.objects.filter(pk=attempt_id).update(language=language)
        attempt.language = language
    return attempt


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
    _leases_release(ParticipantLease.objects.filter(attempt=attempt, status=ParticipantLeaseStatus.ACTIVE), now,
                    ParticipantLeaseStatus.RELEASED)
    attempt.status, attempt.ended_at = status, now
    attempt.save(update_fields=["status", "ended_at"])
    _record_timeout_code([attempt.pk], attempt.study, now)
    return attempt


@transaction.atomic
def attempt_screen_out(*, attempt_id: int, reason: str, screening_answer: int | None = None,
                       before_start: bool = False, report: bool = True, now: datetime | None = None) -> Attempt:
    """Screen a participant out (a failed screening question, or a failed check): the attempt ends SCREENED_OUT.

    Every lease it holds goes back to the pool at once, the answered ones too (their answers are kept, marked by
    the lease status SCREENED_OUT, and counted nowhere: not in results, quotas, bonuses or the leaderboard), so that
    every item still ends with its raters. Idempotent; an attempt that already ended otherwise (or, `before_start`,
    that started meanwhile in another tab) is left as it is. `report=False`: Prolific screened it out itself.
    """
    now = now or timezone.now()
    attempt = Attempt.objects.select_for_update(of=("self",)).select_related("study").get(pk=attempt_id)
    if attempt.status not in ((AttemptStatus.JOINED,) if before_start else (AttemptStatus.STARTED, AttemptStatus.JOINED)):
        return attempt
    Study.objects.select_for_update().filter(pk=attempt.study_id).first()  # held by every change of a load
    _leases_release(ParticipantLease.objects.filter(
        attempt=attempt, status__in=[ParticipantLeaseStatus.ACTIVE, ParticipantLeaseStatus.ANSWERED]), now,
        ParticipantLeaseStatus.SCREENED_OUT)
    bonus_payments_withdraw(attempt_ids=[attempt.pk])  # no bonus: out of every batch not sent yet
    attempt.status, attempt.ended_at, attempt.screened_out_reason = AttemptStatus.SCREENED_OUT, now, reason[:200]
    attempt.screening_answer = screening_answer
    attempt.save(update_fields=["status", "ended_at", "screened_out_reason", "screening_answer"])
    if report and attempt.external_session_id and hasattr(attempt.study, "prolific"):  # connected: the worker tells it
        transaction.on_commit(lambda: _report_screen_out(attempt.pk))
    return attempt


def _report_screen_out(attempt_id: int) -> None:
    """Queue the report to Prolific; a broker that does not answer never fails the participant's page (the
    attempt shows "not reported" on the Prolific page)."""
    from studies.tasks import report_screen_out

    try:
        report_screen_out.delay(attempt_id)
    except Exception:  # noqa: BLE001  (kombu's errors are many; the participant's page must not fail)
        log.exception("screen-out of attempt %s not queued for Prolific", attempt_id)


def attempt_screening_answer(*, attempt_id: int, option: int, attempt: Attempt | None = None) -> Attempt:
    """The answer to the study's screening question, before the start: a passing one starts the attempt, any
    other screens the participant out (nothing handed out yet). `attempt`: the attempt already read with its study
    (the page's; the start and the screen-out read its status again under its lock)."""
    if attempt is None or attempt.pk != attempt_id:
        attempt = Attempt.objects.select_related("study").get(pk=attempt_id)
    if attempt.status != AttemptStatus.JOINED:  # answered in another tab already: as it stands
        return attempt
    if attempt.study.screening_passes(option):
        attempt = attempt_start(attempt_id=attempt_id, attempt=attempt)
        Attempt.objects.filter(pk=attempt_id, screening_answer__isnull=True).update(screening_answer=option)
        return attempt
    return attempt_screen_out(attempt_id=attempt_id, reason="The screening question's answer does not pass.",
                              screening_answer=option, before_start=True)


def attempt_return(*, attempt_id: int, now: datetime | None = None) -> Attempt:
    """The participant gives up (Prolific: "return the submission")."""
    return attempt_expire(attempt_id=attempt_id, now=now, status=AttemptStatus.RETURNED)


@transaction.atomic
def attempt_extend(*, attempt_id: int, seconds: int) -> Attempt:
    """Move a running attempt's deadline (researcher action); its leases follow."""
    attempt = Attempt.objects.select_for_update().get(pk=attempt_id)
    if attempt.status != AttemptStatus.STARTED:
        raise AttemptNotRunning()
    attempt.deadline += timedelta(seconds=seconds)
    attempt.save(update_fields=["deadline"])
    attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).update(expires_at=attempt.deadline)
    return attempt


def attempts_sweep(*, now: datetime | None = None) -> list[int]:
    """Expire every running attempt whose deadline (plus grace) has passed; returns their ids. Given-back answers
    current again (an edit undone) take their places back (studies.services.reasking)."""
    now = now or timezone.now()
    candidates = Attempt.objects.filter(status=AttemptStatus.STARTED, deadline__lt=now).select_related("study")
    expired = []
    for attempt in candidates:
        if attempt.grace_deadline() < now:
            if attempt_expire(attempt_id=attempt.pk, now=now, overdue_only=True).status == AttemptStatus.EXPIRED:
                expired.append(attempt.pk)
    given_back_reclaim()  # after the expiries, which it never holds back
    return expired


def _release_overdue(study: Study, now: datetime) -> None:
    """Inside a hand-out (study row held): release the leases of attempts past their deadline."""
    overdue = list(
        Attempt.objects.select_for_update(skip_locked=True)
        .filter(study=study, status=AttemptStatus.STARTED, deadline__lt=now - timedelta(seconds=study.grace_seconds))
    )
    if not overdue:
        return
    _leases_release(ParticipantLease.objects.filter(attempt__in=overdue, status=ParticipantLeaseStatus.ACTIVE), now,
                    ParticipantLeaseStatus.RELEASED)
    Attempt.objects.filter(pk__in=[a.pk for a in overdue]).update(status=AttemptStatus.EXPIRED, ended_at=now)
    _record_timeout_code([a.pk for a in overdue], study, now)


def _record_timeout_code(attempt_ids: list[int], study: Study, now: datetime) -> None:
    """A participant from Prolific whose time ran out in the app is shown the time-out code, which they enter on
    Prolific: recorded on the attempt (what Prolific was told, and when) for the study's Prolific page."""
    if study.timeout_completion_code:
        Attempt.objects.filter(pk__in=attempt_ids, status=AttemptStatus.EXPIRED, prolific_report="").exclude(
            external_participant_id="").update(prolific_report=ProlificReport.TIMEOUT_CODE, prolific_reported_at=now,
                                               prolific_report_detail=study.timeout_completion_code)


def _leases_release(leases, now: datetime, status: str) -> int:
    """End leases and give their quota back (caller holds the study row); an answer whose place was given back
    already (``quota_given_back``: asked again at the item's current content) is not in the load any more."""
    rows = list(leases.values_list("id", "study_item_id", "quota_given_back"))
    if not rows:
        return 0
    ParticipantLease.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(status=status, ended_at=now)
    loads_change(Counter(study_item_id for _, study_item_id, given_back in rows if not given_back), sign=-1,
                 released_at=now)
    return len(rows)

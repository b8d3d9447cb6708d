"""Questions and answers: the current question of an attempt, and accepting or refusing an answer."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Item
from foundation.prepared_queries import PreparedInsert, PreparedQuery
from foundation.server_statements import ServerStatement
from foundation.storable import storable
from foundation.words import gettext, gettext_noop
from studies.content import clean_answer, clean_highlights, draft_save_wanted, matching_highlights, shown_item
from studies.errors import AnswerInvalid, AnswerRefused, DraftRefused
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    RefusedAnswer,
    Response,
    Study,
)
from studies.services.attempts import attempt_expire, leases_time_out
from studies.services.questions import (  # noqa: F401  (re-exported: studies.services and callers import them here)
    _LEASES,
    SHOWN_ITEM_FIELDS,
    Question,
    _LeaseRows,
    attempt_question,
    question_next,
    question_open,
    shown_item_of,
)


def practice_check(*, study: Study, chosen_option: Any, confidence: Any = None, highlights: Any = None,
                   language: str | None = None) -> bool:
    """Whether a practice answer is right (AnswerInvalid when malformed); nothing is stored.

    `language`: the participant's (the practice item is shown in it when the study offers it).

    Telling it is safe: the practice item is never one of the study's items (setup refuses that).
    """
    item = study.practice_item
    shown = shown_item(context=item.context, question=item.question, options=item.options,
                       translations=item.translations, language=study.language_of(language))
    option, _, _ = clean_answer(context=shown.context, n_options=len(shown.options), chosen_option=chosen_option,
                                confidence=confidence, highlights=highlights)
    return option == item.answer_index


# The reads of an answer and a question, compiled once per process (foundation.prepared_queries): the same SQL as
# these querysets, without the ORM compiling it again on every answer (the leases: studies.services.questions).
_LOCKED_ATTEMPT = PreparedQuery(
    lambda token: Attempt.objects.select_for_update(of=("self",)).select_related("study").filter(token=token)[:1],
    "prepared:token")
_ANSWERED_AND_NEXT_ITEMS = PreparedQuery(
    lambda first, second: Item.objects.only(*SHOWN_ITEM_FIELDS, "answer_index", "content_version")
    .filter(pk__in=[first, second]), -730_002, -730_003)
_RESPONSE_INSERT = PreparedInsert(Response)
#: An answer ends its lease and shows the next question: one UPDATE of the two leases, prepared on each connection.
#: Plain SQL: the ORM's Case/When version of this statement costs more CPU than the rest of the request's queries.
#: The casts (SQL's own, SQLite reads them too) give PostgreSQL the parameters' types where both branches of a CASE
#: are parameters.
_ANSWERED_AND_NEXT_LEASES = ServerStatement(
    f"UPDATE {ParticipantLease._meta.db_table} SET"
    " status = CASE WHEN id = %(answered)s THEN %(status)s ELSE status END,"
    " ended_at = CASE WHEN id = %(answered)s THEN %(now)s ELSE ended_at END,"
    " shown_at = CASE WHEN id = %(answered)s THEN %(shown_at)s ELSE COALESCE(shown_at, %(now)s) END,"
    " shown_content_version = CASE WHEN id = %(answered)s THEN CAST(%(seen)s AS integer)"
    " ELSE CAST(%(next_version)s AS integer) END,"
    " shown_language = CASE WHEN id = %(answered)s THEN CAST(%(language)s AS text)"
    " ELSE CAST(%(next_language)s AS text) END"
    " WHERE id IN (%(answered)s, %(following)s)", "answered_and_next")


def response_submit(*, token: str, position: int, chosen_option: Any, confidence: Any = None,
                    highlights: Any = None, shown_version: Any = None, shown_language: Any = None,
                    now: datetime | None = None) -> Submitted:
    """Accept one answer, or refuse it (AnswerRefused: kept as a RefusedAnswer) or reject it (AnswerInvalid).

    Accepted: within the attempt's deadline (and the question's limit) plus the study's grace seconds;
    answers in the grace period are flagged late. Refused after that: the attempt is expired right away.

    The answer is checked and scored on what the participant was shown: the content version and language that the
    page sends (`shown_version`, `shown_language`: those it was rendered with), else those the question's lease
    recorded when it was last shown. When the item's content changed since, the answer is refused
    (`RefusedAnswer.Reason.CONTENT_CHANGED`) and the question is to be shown again at its new version: an answer is
    never scored on a version the participant did not see. A language switch elsewhere (another tab) changes
    nothing of an answer given on a page shown in another language.
    """
    now = now or timezone.now()
    try:
        return _response_submit(token=token, position=position, chosen_option=chosen_option,
                                confidence=confidence, highlights=highlights, shown_version=shown_version,
                                shown_language=shown_language, now=now)
    except AnswerRefused as refusal:
        _refusal_record(token=token, position=position, reason=refusal.reason, now=now,
                        payload=storable({"chosen_option": _bounded(chosen_option),
                                          "confidence": _bounded(confidence),
                                          "highlights": None if highlights is USE_DRAFT else highlights,
                                          **refusal.details}))
        raise


@dataclass
class Submitted:
    """An accepted answer and what comes next (None when it was the last one: the attempt is finished)."""

    response: Response
    attempt: Attempt
    next_question: Question | None


@transaction.atomic
def _response_submit(*, token, position, chosen_option, confidence, highlights, shown_version, shown_language,
                     now) -> Submitted:
    # The hot path of a study: BEGIN, attempt (locked), its leases, the answered and the next item (one
    # statement), INSERT the response, UPDATE both leases (one statement), COMMIT; the last answer adds
    # the UPDATE that finishes the attempt. The attempt row lock serializes every change of its leases.
    attempt = _LOCKED_ATTEMPT.first(token)
    if attempt is None:
        raise AnswerRefused(AnswerRefused.UNKNOWN, gettext("Unknown attempt."), 404)
    if attempt.status != AttemptStatus.STARTED:
        raise AnswerRefused(RefusedAnswer.Reason.CLOSED, gettext(CLOSED_MESSAGE), 410)
    study = attempt.study
    # The leases as rows: only the answered one and the next one become model instances.
    rows = _LeaseRows.read(attempt.pk)
    ID, STATUS, POSITION = _LeaseRows.ID, _LeaseRows.STATUS, _LeaseRows.POSITION
    at = _as_position(position)
    answered_row = next((row for row in rows if row[POSITION] == at), None)
    if answered_row is None:
        raise AnswerRefused(AnswerRefused.UNKNOWN, gettext("This question is not part of your attempt."), 404)
    lease = _LeaseRows.instance(answered_row)
    grace = timedelta(seconds=study.grace_seconds)
    if now > attempt.deadline + grace:
        raise AnswerRefused(RefusedAnswer.Reason.LATE, gettext("Time is up: answers after the deadline are not accepted."), 409)
    if lease.status == ParticipantLeaseStatus.ANSWERED:
        raise AnswerRefused(RefusedAnswer.Reason.ALREADY_ANSWERED, gettext("This question has already been answered."), 409)
    if lease.status != ParticipantLeaseStatus.ACTIVE:
        raise AnswerRefused(RefusedAnswer.Reason.QUESTION_TIMEOUT, gettext("The time for this question is up."), 409)
    if lease.shown_at is None:  # questions come one at a time: an answer needs the time its question was shown
        raise AnswerInvalid({"position": gettext("This question has not been shown yet.")})
    shown_at = lease.shown_at
    question_deadline = attempt.deadline
    if study.question_time_limit_seconds:
        question_deadline = min(question_deadline, shown_at + timedelta(seconds=study.question_time_limit_seconds))
        if now > question_deadline + grace:
            raise AnswerRefused(RefusedAnswer.Reason.QUESTION_TIMEOUT, gettext("The time for this question is up."), 409)
    following_row = next((row for row in rows if row[STATUS] == ParticipantLeaseStatus.ACTIVE and row[ID] != lease.pk),
                         None)
    following = None if following_row is None else _LeaseRows.instance(following_row)
    items = {item.pk: item for item in _ANSWERED_AND_NEXT_ITEMS.run(
        lease.item_id, following.item_id if following else lease.item_id)}
    item = items[lease.item_id]
    seen_version, language = _seen(attempt, lease, shown_version, shown_language)
    if seen_version is not None and seen_version != item.content_version:
        raise AnswerRefused(RefusedAnswer.Reason.CONTENT_CHANGED, gettext(CONTENT_CHANGED_MESSAGE), 409,
                            details={"item_version": seen_version, "current_version": item.content_version,
                                     "language": language})
    shown = shown_item(context=item.context, question=item.question, options=item.options,
                       translations=item.translations, language=language)
    if highlights is USE_DRAFT:  # the answer came without its highlights field: the ones saved as a draft
        highlights = matching_highlights(context=shown.context, highlights=lease.draft_highlights)
    option, conf, spans = clean_answer(context=shown.context, n_options=len(shown.options),
                                       chosen_option=chosen_option, confidence=confidence, highlights=highlights)
    response = _RESPONSE_INSERT.save(Response(
        attempt=attempt, item=item, lease=lease, chosen_option=option, confidence=conf, highlights=spans,
        language=shown.language, is_correct=option == item.answer_index, item_version=item.content_version,
        shown_at=shown_at, answered_at=now,
        is_late=now > question_deadline,
    ))
    lease.status, lease.ended_at, lease.shown_at = ParticipantLeaseStatus.ANSWERED, now, shown_at
    if following is None:
        ParticipantLease.objects.filter(pk=lease.pk).update(
            status=ParticipantLeaseStatus.ANSWERED, ended_at=now, shown_at=shown_at,
            shown_content_version=item.content_version, shown_language=language)
        # The final answer and the end of the attempt commit together: the completion code follows this.
        Attempt.objects.filter(pk=attempt.pk).update(status=AttemptStatus.FINISHED, ended_at=now)
        attempt.status, attempt.ended_at = AttemptStatus.FINISHED, now
        return Submitted(response=response, attempt=attempt, next_question=None)
    # The answered lease ends and the next question is shown from now on (unless it was shown already), at the
    # content version read above (its page is rendered from that very read) and in the attempt's language.
    next_item, next_language = items[following.item_id], study.language_of(attempt.language)
    with connection.cursor() as cursor:
        _ANSWERED_AND_NEXT_LEASES.execute(connection, cursor, {
            "answered": lease.pk, "following": following.pk, "status": ParticipantLeaseStatus.ANSWERED.value,
            "now": now, "shown_at": shown_at, "seen": item.content_version, "language": language,
            "next_version": next_item.content_version, "next_language": next_language})
    if following.shown_at is None:
        following.shown_at = now
    following.shown_content_version, following.shown_language = next_item.content_version, next_language
    following.item = next_item  # rendered next: no second query for it
    answered = 1 + sum(1 for row in rows if row[STATUS] == ParticipantLeaseStatus.ANSWERED)  # this one, and before
    return Submitted(response=response, attempt=attempt,
                     next_question=question_next(attempt, following, total=len(rows), answered=answered, now=now))


CLOSED_MESSAGE = gettext_noop("This attempt is no longer running: time is up or it was closed.")
CONTENT_CHANGED_MESSAGE = gettext_noop(
    "This question was corrected by the researchers while you were answering it, so your answer was not recorded. "
    "Please read it again as it is now, check your highlighted clues and answer again.")


def _seen(attempt: Attempt, lease: ParticipantLease, version: Any, language: Any) -> tuple[int | None, str]:
    """The content version and language an answer was given on: those its page sent, else those the lease recorded
    when the question was last shown (None: a lease shown before versions were recorded; nothing to compare)."""
    study = attempt.study
    seen = lease.shown_content_version
    if version not in (None, ""):
        seen = _as_position(version)
    if not (isinstance(language, str) and language in study.languages):
        language = lease.shown_language if lease.shown_content_version is not None else \
            study.language_of(attempt.language)
    return seen, language


def _shown_language(attempt: Attempt, lease: ParticipantLease) -> str:
    """The language the lease's question was last shown in (the attempt's for a lease shown before it was kept)."""
    return lease.shown_language if lease.shown_content_version is not None else \
        attempt.study.language_of(attempt.language)


#: `response_submit(highlights=USE_DRAFT)`: the answer's highlights are the question's saved draft.
USE_DRAFT = object()


# --------------------------------------------------------------------------- highlight drafts

@dataclass
class Draft:
    """The highlights saved so far on an attempt's open question, and how many saves made them (`revision`)."""

    position: int
    highlights: list[dict]
    revision: int = 0


def highlight_draft_save(*, token: str, position: Any, highlights: Any, revision: Any = None,
                         now: datetime | None = None) -> Draft:
    """Save the highlights made so far on the question the attempt is on (replacing the last draft).

    Only the open question takes a draft: the attempt running and within its deadline (plus grace), the
    question the first unanswered one, already shown and within its own limit. Anything else is refused
    (DraftRefused: 404 unknown, 410 attempt not running, 409 another question is open) and nothing is stored.
    The highlights are validated as an answer's are (AnswerInvalid). Holds the attempt's row lock, as an
    answer does, so a draft can never land on a question after its answer.

    `revision`: the draft's revision the save replaces (the one the page was shown with, or its last save
    answered), checked by studies.content.draft_save_wanted: another one is DraftStale (412), nothing stored,
    unless the same highlights are stored. Each save stored adds one to the revision.
    """
    now = now or timezone.now()
    with transaction.atomic():
        attempt = Attempt.objects.select_for_update(of=("self",)).select_related("study").filter(token=token).first()
        if attempt is None:
            raise DraftRefused(DraftRefused.UNKNOWN, gettext("Unknown attempt."), 404)
        lease = _open_lease(attempt, _as_position(position), now)
        item = Item.objects.only(*SHOWN_ITEM_FIELDS).get(pk=lease.item_id)
        shown = shown_item(context=item.context, question=item.question, options=item.options,
                           translations=item.translations, language=_shown_language(attempt, lease))
        spans = clean_highlights(context=shown.context, highlights=highlights)
        if not draft_save_wanted(revision=revision, current=lease.draft_revision, spans=spans,
                                 stored=lambda: draft_of(attempt=attempt, lease=lease, context=shown.context)):
            return Draft(position=lease.position, highlights=spans, revision=lease.draft_revision)
        ParticipantLease.objects.filter(pk=lease.pk).update(draft_highlights=spans, draft_saved_at=now,
                                                            draft_revision=F("draft_revision") + 1)
    return Draft(position=lease.position, highlights=spans, revision=lease.draft_revision + 1)


def highlight_draft(*, token: str, position: Any, now: datetime | None = None) -> Draft:
    """The draft of the question the attempt is on (the same refusals as saving one); reads only."""
    now = now or timezone.now()
    attempt = Attempt.objects.select_related("study").filter(token=token).first()
    if attempt is None:
        raise DraftRefused(DraftRefused.UNKNOWN, gettext("Unknown attempt."), 404)
    lease = _open_lease(attempt, _as_position(position), now)
    return Draft(position=lease.position, highlights=draft_of(attempt=attempt, lease=lease),
                 revision=lease.draft_revision)


def draft_of(*, attempt: Attempt, lease: ParticipantLease, context: str | None = None) -> list[dict]:
    """A lease's highlight draft, kept to the passages that fit the context shown now (`context`, else the item's
    in the language the question was last shown in): a draft made before a language switch does not fit the other
    text."""
    if "draft_highlights" in lease.get_deferred_fields():
        lease.refresh_from_db(fields=["draft_highlights"])
    draft = lease.draft_highlights
    if not draft:
        return []
    if context is None:
        item = shown_item_of(lease)
        context = shown_item(context=item.context, question=item.question, options=item.options,
                             translations=item.translations, language=_shown_language(attempt, lease)).context
    return matching_highlights(context=context, highlights=draft)


def _open_lease(attempt: Attempt, position: int, now: datetime) -> ParticipantLease:
    """The attempt's open question when it is at `position`, else DraftRefused."""
    study = attempt.study
    grace = timedelta(seconds=study.grace_seconds)
    if attempt.status != AttemptStatus.STARTED or now > attempt.deadline + grace:
        raise DraftRefused(DraftRefused.CLOSED, gettext(CLOSED_MESSAGE), 410)
    rows = _LeaseRows.read(attempt.pk)
    current = next((_LeaseRows.instance(row) for row in rows if row[_LeaseRows.STATUS] == ParticipantLeaseStatus.ACTIVE),
                   None)
    if current is None or current.position != position or current.shown_at is None:
        raise DraftRefused(DraftRefused.NOT_OPEN, gettext("This question is not open: your attempt is on another one."))
    limit = study.question_time_limit_seconds
    if limit and now > current.shown_at + timedelta(seconds=limit) + grace:
        raise DraftRefused(DraftRefused.NOT_OPEN, gettext("The time for this question is up."))
    return current


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
    lease = (ParticipantLease.objects.filter(attempt=attempt, position=_as_position(position))
             .only("id", "item_id").first())
    RefusedAnswer.objects.create(attempt=attempt, item_id=lease.item_id if lease else None, reason=reason,
                                 received_at=now, payload=payload)
    if reason == RefusedAnswer.Reason.LATE:
        attempt_expire(attempt_id=attempt.pk, now=now, overdue_only=True)
    elif reason == RefusedAnswer.Reason.QUESTION_TIMEOUT and lease is not None:
        leases_time_out(attempt_id=attempt.pk, lease_ids=[lease.pk], now=now)



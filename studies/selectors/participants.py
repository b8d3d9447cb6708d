"""Participant-facing reads: where a study's public link leads, the attempt a participant resumes, an attempt by
its token and its counts for the completion page. Reads only: a GET never takes a place."""
from __future__ import annotations

import hmac
from dataclasses import dataclass
from enum import Enum

from django.db import connection
from django.db.models import Count, F, Q, QuerySet

from annotation.models import ItemStatus
from foundation.prepared_queries import PreparedQuery
from foundation.server_statements import ServerStatement
from studies.errors import ParticipantIdTaken
from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus, Study, StudyItem, StudyStatus

#: An attempt with its study by token: every participant request reads it (compiled once per process).
_ATTEMPT_BY_TOKEN = PreparedQuery(lambda token: Attempt.objects.select_related("study").filter(token=token)[:1],
                                  "prepared:token")


#: The reads of a study's public link and of joining (every participant of a class makes them at once), compiled
#: once per process as `_ATTEMPT_BY_TOKEN`; each is its queryset's `.first()` (the models are ordered: `[:1]`).
_STUDY_BY_SLUG = PreparedQuery(lambda slug: Study.objects.filter(slug=slug)[:1], "prepared:slug")
_OWN_ATTEMPT = PreparedQuery(lambda study_id, token: Attempt.objects.filter(study_id=study_id, token=token)[:1],
                             -730_101, "prepared:own-token")
_ATTEMPT_OF_PARTICIPANT = PreparedQuery(
    lambda study_id, participant_id: Attempt.objects.filter(study_id=study_id,
                                                            external_participant_id=participant_id)[:1],
    -730_102, "prepared:participant")


def attempt_by_token(token: str) -> Attempt | None:
    return _ATTEMPT_BY_TOKEN.first(token)


def study_public(slug: str) -> Study | None:
    return _STUDY_BY_SLUG.first(slug)


def _spare_items(study_id: int) -> QuerySet:
    """The study's items with spare quota that a start may hand out (not rejected, unless the study draws its pool
    with the rejected items), unordered (the pool's ordering would sort all of them)."""
    return (StudyItem.objects.filter(study_id=study_id, load__lt=F("quota"))
            .filter(~Q(item__status=ItemStatus.REJECTED) | Q(study__pool_include_rejected=True))
            .order_by().values_list("pk", flat=True))


_ROOM_MARKER = -730_103
#: Per database vendor: the statement, its parameters, the marker's slot.
_room_sql: dict[str, tuple[ServerStatement, list, int]] = {}


def _room_statement() -> tuple[ServerStatement, list, int]:
    """`_spare_items` compiled once per process (every participant opening the link reads it): its SQL counted up to
    a limit given as a parameter, prepared on each PostgreSQL connection (planning it cost five times running it)."""
    vendor = connection.vendor
    if vendor not in _room_sql:
        sql, params = _spare_items(_ROOM_MARKER).query.sql_with_params()
        slots = [i for i, param in enumerate(params) if param == _ROOM_MARKER]
        assert len(slots) == 1, (sql, params)
        _room_sql[vendor] = (ServerStatement(f"SELECT COUNT(*) FROM ({sql} LIMIT %s) spare", "room"), list(params),
                             slots[0])
    return _room_sql[vendor]


def study_has_room(study: Study) -> bool:
    """Whether a new attempt could still be filled (enough distinct items with spare quota): the database stops at
    the first `per_participant` such items instead of counting all of them, as a class opening the link at once
    made it do for each participant. The same rows as `len(_spare_items(study.pk)[:needed])`, without compiling
    that queryset at every request (tests/studies/selectors/test_participants.py compares them)."""
    needed = study.per_participant
    statement, params, slot = _room_statement()
    params = [*params, needed]
    params[slot] = study.pk
    with connection.cursor() as cursor:
        statement.execute(connection, cursor, params)
        return cursor.fetchone()[0] >= needed


def attempt_resumable(*, study: Study, participant_id: str = "", session_id: str = "",
                      cookie_token: str = "") -> Attempt | None:
    """The attempt a returning participant resumes: the browser's own (its cookie), else the attempt of the
    external participant id when the external session id matches too (Prolific reopened in a new browser).

    A participant id alone is public enough to be guessed or shared: an attempt it names that neither the
    cookie nor the session id opens raises `ParticipantIdTaken` (the page says so; nothing of the attempt is
    shown). An attempt joined without a session id resumes only in its own browser.
    """
    if cookie_token:
        own = _OWN_ATTEMPT.first(study.pk, cookie_token)
        if own is not None:
            return own
    participant_id = participant_id.strip()[:100]
    if not participant_id:
        return None
    existing = _ATTEMPT_OF_PARTICIPANT.first(study.pk, participant_id)
    if existing is None:
        return None
    session_id = session_id[:100]
    if session_id and existing.external_session_id and hmac.compare_digest(
            session_id.encode(), existing.external_session_id.encode()):
        return existing
    raise ParticipantIdTaken(participant_id)


class Entry(str, Enum):
    """What the public link of a study leads to."""

    RESUME = "resume"      # the participant has an attempt: back to it
    CLOSED = "closed"      # not open
    FULL = "full"          # no new attempt could be filled
    CONSENT = "consent"    # the consent form (joining takes a place only after it)
    TAKEN = "taken"        # the participant id has an attempt that this browser may not resume


@dataclass
class StudyEntry:
    study: Study
    entry: Entry
    attempt: Attempt | None = None


def study_entry(*, slug: str, participant_id: str = "", session_id: str = "",
                cookie_token: str = "") -> StudyEntry | None:
    """Where the public link leads (None: no such study). Reads only: a GET never takes a place.

    On PostgreSQL one statement reads what the three reads of `study_entry_step_by_step` read (the study, which of
    its attempts the browser's cookie or the participant id names, whether it has room): every participant of a
    class opening the link at once makes it. A returning participant goes by the three reads (the rare case)."""
    if connection.vendor != "postgresql":
        return study_entry_step_by_step(slug=slug, participant_id=participant_id, session_id=session_id,
                                        cookie_token=cookie_token)
    participant_id, session_id = participant_id.strip()[:100], session_id[:100]
    statement, params, columns = _entry_statement()
    with connection.cursor() as cursor:
        statement.execute(connection, cursor, [cookie_token, *params, slug, participant_id])  # in the SQL's order
        row = cursor.fetchone()
    if row is None:
        return None
    study = _STUDY_BY_SLUG.instances([row[:columns]])[0]
    own_id, their_id, their_session, spare = row[columns:]
    resumes = cookie_token and own_id is not None
    if not resumes and participant_id and their_id is not None:  # the rule of attempt_resumable
        if not (session_id and their_session and hmac.compare_digest(session_id.encode(), their_session.encode())):
            return StudyEntry(study, Entry.TAKEN)
        resumes = True
    if resumes:  # their attempt read whole, by the three reads (an attempt deleted meanwhile is no longer found)
        return study_entry_step_by_step(slug=slug, participant_id=participant_id, session_id=session_id,
                                        cookie_token=cookie_token)
    if study.status != StudyStatus.OPEN:
        return StudyEntry(study, Entry.CLOSED)
    if spare < study.per_participant:
        return StudyEntry(study, Entry.FULL)
    return StudyEntry(study, Entry.CONSENT)


def study_entry_step_by_step(*, slug: str, participant_id: str = "", session_id: str = "",
                             cookie_token: str = "") -> StudyEntry | None:
    """`study_entry` in three reads (the study, the resumable attempt, the room), on any database."""
    study = study_public(slug)
    if study is None:
        return None
    try:
        existing = attempt_resumable(study=study, participant_id=participant_id, session_id=session_id,
                                     cookie_token=cookie_token)
    except ParticipantIdTaken:
        return StudyEntry(study, Entry.TAKEN)
    if existing is not None:
        return StudyEntry(study, Entry.RESUME, existing)
    if study.status != StudyStatus.OPEN:
        return StudyEntry(study, Entry.CLOSED)
    if not study_has_room(study):
        return StudyEntry(study, Entry.FULL)
    return StudyEntry(study, Entry.CONSENT)


_entry_sql: list[tuple[ServerStatement, list, int]] = []


def _entry_statement() -> tuple[ServerStatement, list, int]:
    """PostgreSQL's one statement of `study_entry` (built once per process): the study's row as `_STUDY_BY_SLUG`
    reads it, then the id of its attempt with the cookie's token, the id and session id of its attempt with the
    participant id, and its spare items counted up to its need (`_spare_items`, as `study_has_room` counts them).
    Its parameters, in the SQL's order: the token, the spare items' own, the slug, the participant id. Also returns
    how many columns the study's row has."""
    if not _entry_sql:
        study_sql, study_params, columns = _STUDY_BY_SLUG.compiled_sql()
        assert list(study_params) == list(_STUDY_BY_SLUG.markers), study_params
        spare_sql, spare_params = _spare_items(_ROOM_MARKER).query.sql_with_params()
        pieces = spare_sql.split("%s")
        slot = [i for i, param in enumerate(spare_params) if param == _ROOM_MARKER]
        assert len(slot) == 1 and len(pieces) == len(spare_params) + 1, (spare_sql, spare_params)
        # The spare items of this study: its id in the marker's place (a column, no longer a parameter).
        spare_sql = "".join(piece + ("" if i == len(pieces) - 1 else "study.id" if i == slot[0] else "%s")
                            for i, piece in enumerate(pieces))
        params = [param for i, param in enumerate(spare_params) if i != slot[0]]
        attempts = Attempt._meta.db_table
        sql = (f"SELECT study.*, "
               f"(SELECT own.id FROM {attempts} own WHERE own.study_id = study.id AND own.token = %s) AS own_id, "
               f"their.id, their.external_session_id, "
               f"(SELECT COUNT(*) FROM ({spare_sql} LIMIT study.per_participant) spare) AS spare "
               f"FROM ({study_sql}) study "
               f"LEFT JOIN {attempts} their ON their.study_id = study.id AND their.external_participant_id = %s "
               f"AND their.external_participant_id <> ''")
        _entry_sql.append((ServerStatement(sql, "entry"), params, columns))
    return _entry_sql[0]


def attempt_counts(attempt: Attempt) -> dict:
    """Answered / correct counts of one attempt and its bonus (for the completion page); for an expired attempt
    also whether every question's own time limit ran out (`all_timed_out`: it ended with no answer before its
    deadline, which is neither the researcher's closing nor the attempt's time limit)."""
    counts = attempt.responses.aggregate(answered=Count("id"), correct=Count("id", filter=Q(is_correct=True)))
    all_timed_out = False
    if attempt.status == AttemptStatus.EXPIRED and not counts["answered"]:
        leases = attempt.leases.aggregate(timed_out=Count("id", filter=Q(status=ParticipantLeaseStatus.TIMED_OUT)),
                                          other=Count("id", filter=~Q(status=ParticipantLeaseStatus.TIMED_OUT)))
        all_timed_out = bool(leases["timed_out"]) and not leases["other"]
    return {**counts, "bonus": attempt.study.bonus_for(counts["correct"]), "all_timed_out": all_timed_out}


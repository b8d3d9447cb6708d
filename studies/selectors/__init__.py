"""Reads for studies: the participant's attempt, the live monitor, results and (`exports`) the exports.

A screened-out attempt's answers are kept but counted nowhere: not in the results (Table 3, items, kappa, time,
bonuses), the monitor's answered counts, nor the answers the leaderboard and the one-scale fit read
(`response_outcomes`, `response_rows`); the exports list them, marked."""
from __future__ import annotations

import hmac
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from annotation.agreement import counts_table, fleiss_kappa
from annotation.clue_graph import gold_key_information
from annotation.keyinfo import keyinfo_score
from studies import stats
from studies.errors import ParticipantIdTaken
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLeaseStatus,
    RefusedAnswer,
    Response,
    Study,
    StudyItem,
    StudyStatus,
)


def attempt_by_token(token: str) -> Attempt | None:
    return Attempt.objects.select_related("study").filter(token=token).first()


def study_public(slug: str) -> Study | None:
    return Study.objects.filter(slug=slug).first()


def study_has_room(study: Study) -> bool:
    """Whether a new attempt could still be filled (enough distinct items with spare quota)."""
    return StudyItem.objects.filter(study=study, load__lt=F("quota")).count() >= study.per_participant


def attempt_resumable(*, study: Study, participant_id: str = "", session_id: str = "",
                      cookie_token: str = "") -> Attempt | None:
    """The attempt a returning participant resumes: the browser's own (its cookie), else the attempt of the
    external participant id when the external session id matches too (Prolific reopened in a new browser).

    A participant id alone is public enough to be guessed or shared: an attempt it names that neither the
    cookie nor the session id opens raises `ParticipantIdTaken` (the page says so; nothing of the attempt is
    shown). An attempt joined without a session id resumes only in its own browser.
    """
    if cookie_token:
        own = Attempt.objects.filter(study=study, token=cookie_token).first()
        if own is not None:
            return own
    participant_id = participant_id.strip()[:100]
    if not participant_id:
        return None
    existing = Attempt.objects.filter(study=study, external_participant_id=participant_id).first()
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
    """Where the public link leads (None: no such study). Reads only: a GET never takes a place."""
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


def attempt_counts(attempt: Attempt) -> dict:
    """Answered / correct counts of one attempt and its bonus (for the completion page)."""
    counts = attempt.responses.aggregate(answered=Count("id"), correct=Count("id", filter=Q(is_correct=True)))
    return {**counts, "bonus": attempt.study.bonus_for(counts["correct"])}


def study_list() -> QuerySet[Study]:
    """Studies with their pool size and number of attempts, in one query."""
    return Study.objects.annotate(
        n_items=Count("pool", distinct=True),
        n_attempts=Count("attempts", distinct=True),
    ).order_by("-created_at")


def attempt_list(*, study: Study) -> QuerySet[Attempt]:
    """A study's attempts in joining order, each with its number of answers (one query)."""
    return study.attempts.annotate(n_answered=Count("responses")).order_by("joined_at")


# --------------------------------------------------------------------------- monitor

@dataclass
class MonitorRow:
    attempt: Attempt
    answered: int
    total: int
    seconds_left: int | None


def study_monitor(study: Study) -> dict:
    """Live view: every attempt with answered k/n and time left; per-item load; totals by status."""
    now = timezone.now()
    attempts = list(
        study.attempts.annotate(
            n_answered=Count("leases", filter=Q(leases__status=ParticipantLeaseStatus.ANSWERED)),
            n_leases=Count("leases"),
        ).order_by("-joined_at")
    )
    rows = [
        MonitorRow(a, a.n_answered, a.n_leases or study.per_participant,
                   a.seconds_left(now) if a.status == AttemptStatus.STARTED else None)
        for a in attempts
    ]
    by_status: dict[str, int] = defaultdict(int)
    for a in attempts:
        by_status[a.status] += 1
    pool = list(
        StudyItem.objects.filter(study=study).select_related("item").only(
            "id", "position", "quota", "load", "item__id", "item__external_id", "item__source"
        ).annotate(n_answered=Count("leases", filter=Q(leases__status=ParticipantLeaseStatus.ANSWERED)))
        .order_by("position")
    )
    answered_total = sum(p.n_answered for p in pool)
    return {
        "rows": rows, "by_status": dict(by_status), "pool": pool, "now": now,
        "answers": answered_total, "answers_wanted": len(pool) * study.raters,
        "complete_items": sum(1 for p in pool if p.n_answered >= p.quota),
    }


# --------------------------------------------------------------------------- results

@dataclass
class ItemResult:
    study_item: StudyItem
    chosen: list[int]
    accuracy: float | None
    majority: int | None
    majority_correct: bool | None
    keyinfo: float | None
    median_seconds: float | None


@dataclass
class ParticipantResult:
    attempt: Attempt
    answered: int
    correct: int
    accuracy: float | None
    bonus: Decimal
    keyinfo: float | None
    median_seconds: float | None


@dataclass
class StudyResults:
    table3: stats.AccuracySummary        # finished attempts only (the paper's participants answered all questions)
    table3_all: stats.AccuracySummary    # every attempt with at least one answer (dropouts too)
    participants: list[ParticipantResult]
    items: list[ItemResult]
    kappa: float | None
    kappa_items: int
    keyinfo: float | None
    median_seconds: float | None
    seconds: list[float] = field(default_factory=list)
    time_svg: str = ""
    n_responses: int = 0
    n_late: int = 0
    n_refused: int = 0
    majority_accuracy: float | None = None
    first_option_share: float | None = None
    n_screened_out: int = 0  # attempts screened out: their answers are in none of the figures


#: Attempts with no participant result: never started (or found the study full), or screened out.
NOT_COUNTED = [AttemptStatus.JOINED, AttemptStatus.FULL, AttemptStatus.SCREENED_OUT]


def study_results(study: Study) -> StudyResults:
    """Paper Table 3, per-item accuracy and majority, Fleiss' kappa, human KeyInfo, time, bonus.

    Table 3 (average, top, lowest of per-participant accuracy = correct / answered) is computed over
    finished attempts: a dropout with one lucky answer would otherwise be the "top" participant. The
    same summary over every attempt with answers is given beside it; per-item figures, kappa, KeyInfo,
    time and the exports use every accepted answer, unfinished attempts included.
    """
    responses = list(
        Response.objects.filter(attempt__study=study).exclude(attempt__status=AttemptStatus.SCREENED_OUT)
        .select_related("item", "attempt")
        .only("id", "chosen_option", "is_correct", "highlights", "shown_at", "answered_at", "is_late",
              "attempt__id", "attempt__status", "attempt__external_participant_id",
              "language", "item__id", "item__evidence", "item__translations", "item__options", "item__answer_index")
        .order_by("attempt_id", "answered_at")
    )
    gold_cache: dict[tuple[int, str], list[str]] = {}
    keyinfo_of: dict[int, float] = {}
    for r in responses:
        key = (r.item_id, r.language)  # the language the participant was shown
        if key not in gold_cache:
            # A translated study scores against translated evidence when the item carries one.
            translated = (r.item.translations or {}).get(r.language) or {} if r.language else {}
            gold_cache[key] = gold_key_information(translated.get("evidence") or r.item.evidence)
        keyinfo_of[r.pk] = keyinfo_score([h["text"] for h in r.highlights], gold_cache[key])

    by_attempt: dict[int, list[Response]] = defaultdict(list)
    by_item: dict[int, list[Response]] = defaultdict(list)
    for r in responses:
        by_attempt[r.attempt_id].append(r)
        by_item[r.item_id].append(r)

    participants = []
    for attempt in study.attempts.exclude(status__in=NOT_COUNTED).order_by("joined_at"):
        rs = by_attempt.get(attempt.pk, [])
        correct = sum(r.is_correct for r in rs)
        participants.append(ParticipantResult(
            attempt=attempt, answered=len(rs), correct=correct,
            accuracy=correct / len(rs) if rs else None,
            bonus=study.bonus_for(correct),
            keyinfo=_mean([keyinfo_of[r.pk] for r in rs]),
            median_seconds=stats.median([r.seconds for r in rs]),
        ))
    table3 = stats.accuracy_summary(
        [(p.correct, p.answered) for p in participants if p.attempt.status == AttemptStatus.FINISHED])
    table3_all = stats.accuracy_summary([(p.correct, p.answered) for p in participants])

    items = []
    kappa_rows = []
    max_options = 2
    for si in StudyItem.objects.filter(study=study).select_related("item").only(
            "id", "position", "quota", "load", "item__id", "item__source", "item__external_id",
            "item__answer_index", "item__options").order_by("position"):
        rs = by_item.get(si.item_id, [])
        chosen = [r.chosen_option for r in rs]
        maj = stats.majority(chosen)
        max_options = max(max_options, len(si.item.options))
        if len(chosen) == study.raters and study.raters >= 2:
            kappa_rows.append(chosen)
        items.append(ItemResult(
            study_item=si, chosen=chosen,
            accuracy=sum(r.is_correct for r in rs) / len(rs) if rs else None,
            majority=maj, majority_correct=None if maj is None else maj == si.item.answer_index,
            keyinfo=_mean([keyinfo_of[r.pk] for r in rs]),
            median_seconds=stats.median([r.seconds for r in rs]),
        ))
    kappa = fleiss_kappa(counts_table(kappa_rows, range(max_options))) if kappa_rows else None
    seconds = [r.seconds for r in responses]
    with_majority = [i for i in items if i.majority_correct is not None]
    return StudyResults(
        table3=table3, table3_all=table3_all, participants=participants, items=items, kappa=kappa, kappa_items=len(kappa_rows),
        keyinfo=_mean(list(keyinfo_of.values())), median_seconds=stats.median(seconds), seconds=seconds,
        time_svg=stats.histogram_svg(seconds, label="seconds per question"),
        n_responses=len(responses), n_late=sum(r.is_late for r in responses),
        n_refused=RefusedAnswer.objects.filter(attempt__study=study).count(),
        n_screened_out=study.attempts.filter(status=AttemptStatus.SCREENED_OUT).count(),
        majority_accuracy=_mean([1.0 if i.majority_correct else 0.0 for i in with_majority]),
        first_option_share=_mean([1.0 if r.chosen_option == 0 else 0.0 for r in responses]),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class ItemAnswers:
    responses: int
    correct: int


def response_outcomes(*, item_ids) -> dict[int, ItemAnswers]:
    """Accepted answers per item over every study, counting only answers scored on the item's current version
    (the version model results are compared on): item id -> ItemAnswers; one query. ``item_ids`` may be a
    list or a subquery of ids."""
    rows = (Response.objects.filter(item_id__in=item_ids, item_version=F("item__content_version"))
            .exclude(attempt__status=AttemptStatus.SCREENED_OUT).order_by()
            .values("item_id").annotate(responses=Count("pk"), correct=Count("pk", filter=Q(is_correct=True))))
    return {r["item_id"]: ItemAnswers(responses=r["responses"], correct=r["correct"]) for r in rows}


def response_rows(*, item_ids) -> list[tuple[int, str, int, int, bool]]:
    """Every accepted answer on these items, at whatever item version it was scored on: (attempt id, study slug,
    item id, item version, right), ordered by attempt; one query (the item-response fit of evaluation reads it:
    each attempt is a respondent, each (item, version) an item)."""
    return list(Response.objects.filter(item_id__in=item_ids).exclude(attempt__status=AttemptStatus.SCREENED_OUT)
                .order_by("attempt_id", "pk")
                .values_list("attempt_id", "attempt__study__slug", "item_id", "item_version", "is_correct"))


from studies.selectors.exports import (  # noqa: E402,F401  (the exports read the models only)
    EXPORT_FIELDS,
    study_attempts_export,
    study_export,
    study_export_rows,
)

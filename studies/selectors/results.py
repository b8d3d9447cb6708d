"""A study's results: paper Table 3 (over finished attempts, and over every attempt beside it), per-item accuracy
and majority, Fleiss' kappa, human KeyInfo, time per question and bonuses. A screened-out attempt's answers are in
none of these figures."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from annotation.agreement import counts_table, fleiss_kappa
from annotation.clue_graph import gold_key_information
from annotation.keyinfo import keyinfo_score
from studies import stats
from studies.models import Attempt, AttemptStatus, RefusedAnswer, Response, Study, StudyItem


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


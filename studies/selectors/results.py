"""A study's results: paper Table 3 (over finished attempts, and over every attempt beside it; a question whose own
time limit ran out counts as not correct), per-(item, version) accuracy and majority, Fleiss' kappa, human KeyInfo,
time per question and bonuses. A screened-out attempt's answers are in none of these figures.

The accuracy figures (Table 3, the participants' accuracy, the majority vote) count *current* answers only, as the
leaderboard's Humans row does (`studies.selectors.item_states`): answers and time-outs on items not deleted whose
content is still the one the participant saw. Answers on items whose content changed since (stale) or that were
deleted are counted apart (`StudyResults.states`), and each item row says which it is and what changed."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from annotation.agreement import counts_table, fleiss_kappa
from annotation.clue_graph import gold_key_information
from annotation.keyinfo import keyinfo_score
from annotation.models import ItemStatus
from annotation.selectors.versions import item_contents_at
from studies import stats
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    RefusedAnswer,
    Response,
    Study,
    StudyItem,
)
from studies.selectors.item_states import CURRENT, DELETED, STALE, STATES, ItemState, item_states


@dataclass
class ItemResult:
    """An item's figures at one content version (like for like: answers to different versions are never pooled)."""

    study_item: StudyItem
    chosen: list[int]
    accuracy: float | None         # correct / (answers + questions timed out), at this version
    majority: int | None
    majority_correct: bool | None  # against the key at this version (None: not known)
    keyinfo: float | None
    median_seconds: float | None
    version: int | None = None     # the item's content version the answers were given on (None: no answer yet)
    key: int | None = None         # the correct option at that version
    timed_out: int = 0             # questions on this item (at this version) whose own time limit ran out
    #: current, stale or deleted (None: nobody answered the item yet, and it is not deleted) with what changed
    state: ItemState | None = None


@dataclass
class ParticipantResult:
    attempt: Attempt
    answered: int           # every accepted answer (the bonus pays for its correct ones)
    correct: int
    accuracy: float | None  # over current answers: counted_correct / counted (a time-out counts as not correct)
    bonus: Decimal
    keyinfo: float | None
    median_seconds: float | None
    timed_out: int = 0
    counted: int = 0          # current answers + current time-outs: the accuracy's denominator
    counted_correct: int = 0  # current answers right
    stale: int = 0            # answers and time-outs on items whose content changed since: counted apart
    deleted: int = 0          # answers and time-outs on deleted items: counted apart


@dataclass(frozen=True)
class StateCount:
    """The answers and time-outs of one state (current, stale or deleted), on how many items."""

    answers: int = 0
    timed_out: int = 0
    correct: int = 0
    items: int = 0

    @property
    def counted(self) -> int:
        return self.answers + self.timed_out

    @property
    def accuracy(self) -> float | None:
        """Correct / (answers + time-outs), pooled over every counted attempt: for current answers, the figure the
        leaderboard's Humans row computes from this study's answers (each compared with its own version's key)."""
        return self.correct / self.counted if self.counted else None


@dataclass
class StudyResults:
    table3: stats.AccuracySummary        # finished attempts only (the paper's participants answered all questions)
    table3_all: stats.AccuracySummary    # every attempt with at least one answer or time-out (dropouts too)
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
    n_timed_out: int = 0     # questions whose own time limit ran out: counted as not correct
    #: current / stale / deleted -> the answers and time-outs in that state (every attempt but the screened-out)
    states: dict[str, StateCount] = field(default_factory=dict)

    @property
    def pooled_accuracy(self) -> float | None:
        """Correct / (answers + time-outs) over the current answers of every attempt, dropouts too: how the
        leaderboard's Humans row counts (it pools the answers of every study on a model column's items)."""
        return self.states[CURRENT].accuracy if CURRENT in self.states else None


#: Attempts with no participant result: never started (or found the study full), or screened out.
NOT_COUNTED = [AttemptStatus.JOINED, AttemptStatus.FULL, AttemptStatus.SCREENED_OUT]


def study_results(study: Study) -> StudyResults:
    """Paper Table 3, per-item accuracy and majority, Fleiss' kappa, human KeyInfo, time, bonus.

    Table 3 (average, top, lowest of per-participant accuracy = correct / (answered + timed out): a question whose
    own time limit ran out counts as not correct, as an unanswered question of the paper's sessions would) is
    computed over finished attempts: a dropout with one lucky answer would otherwise be the "top" participant. The
    same summary over every attempt with answers or time-outs is given beside it. Both count current answers only
    (the item not deleted, its content still the one the participant saw: `item_states`); stale and deleted ones
    are counted apart (``states``), and the bonus pays for every correct answer. Per-item figures are per (item,
    content version): each answer is compared with the key (and its KeyInfo with the clue graph) of the version it
    was given on, and each row says whether that version is current, stale (what changed) or deleted; kappa takes
    the (item, version) pairs that have all their raters (the first ones by attempt when an edit undone after "ask
    again" left more). Time and the exports use every accepted answer,
    unfinished attempts included.
    """
    responses = list(
        Response.objects.filter(attempt__study=study).exclude(attempt__status=AttemptStatus.SCREENED_OUT)
        .select_related("attempt")
        .only("id", "item_id", "item_version", "chosen_option", "is_correct", "highlights", "shown_at", "answered_at",
              "is_late", "attempt__id", "attempt__status", "attempt__external_participant_id", "language")
        .order_by("attempt_id", "answered_at")
    )
    timed_out = list(
        ParticipantLease.objects.filter(attempt__study=study, status=ParticipantLeaseStatus.TIMED_OUT)
        .exclude(attempt__status=AttemptStatus.SCREENED_OUT).values_list("attempt_id", "item_id",
                                                                         "shown_content_version"))
    pool = list(StudyItem.objects.filter(study=study).select_related("item").only(
        "id", "position", "quota", "load", "item__id", "item__source", "item__external_id", "item__answer_index",
        "item__options", "item__status", "item__content_version").order_by("position"))
    pairs = {(r.item_id, r.item_version) for r in responses} | {(item_id, v) for _, item_id, v in timed_out}
    # The key and the clue graph each answer is compared with: the item's at the version it was given on.
    contents = item_contents_at(pairs, fields=("answer_index", "evidence", "translations"))
    # Whether each of them is still current, stale (what changed since) or deleted.
    state_of = item_states(pairs, items={si.item_id: si.item for si in pool})
    gold_cache: dict[tuple[int, int, str], list[str] | None] = {}
    keyinfo_of: dict[int, float] = {}
    for r in responses:
        key = (r.item_id, r.item_version, r.language)  # the version and language the participant was shown
        if key not in gold_cache:
            content = contents.get((r.item_id, r.item_version))
            # A translated study scores against translated evidence when the item carries one.
            translated = ((content or {}).get("translations") or {}).get(r.language) or {} if r.language else {}
            gold_cache[key] = None if content is None else \
                gold_key_information(translated.get("evidence") or content.get("evidence") or "")
        score = None if gold_cache[key] is None else keyinfo_score([h["text"] for h in r.highlights], gold_cache[key])
        if score is not None:  # None: the content has no gold key information (no score, not a 0)
            keyinfo_of[r.pk] = score

    def state(item_id: int, version: int | None) -> str:
        found = state_of.get((item_id, version))
        return found.state if found is not None else STALE  # an item no longer known: never counted as current

    by_attempt: dict[int, list[Response]] = defaultdict(list)
    by_version: dict[int, dict[int | None, list[Response]]] = defaultdict(lambda: defaultdict(list))
    for r in responses:
        by_attempt[r.attempt_id].append(r)
        by_version[r.item_id][r.item_version].append(r)
    timed_out_of_attempt: dict[int, Counter[str]] = defaultdict(Counter)
    for attempt_id, item_id, version in timed_out:
        timed_out_of_attempt[attempt_id][state(item_id, version)] += 1
    timed_out_of_version: Counter[tuple[int, int | None]] = Counter((item, v) for _, item, v in timed_out)
    for item_id, version in timed_out_of_version:
        by_version[item_id].setdefault(version, [])

    participants = []
    for attempt in study.attempts.exclude(status__in=NOT_COUNTED).order_by("joined_at"):
        rs = by_attempt.get(attempt.pk, [])
        missed = timed_out_of_attempt[attempt.pk]
        kinds = Counter(state(r.item_id, r.item_version) for r in rs) + missed
        counted_correct = sum(r.is_correct for r in rs if state(r.item_id, r.item_version) == CURRENT)
        counted, correct = kinds[CURRENT], sum(r.is_correct for r in rs)
        participants.append(ParticipantResult(
            attempt=attempt, answered=len(rs), correct=correct,
            accuracy=counted_correct / counted if counted else None,
            bonus=study.bonus_for(correct),
            keyinfo=_mean([keyinfo_of[r.pk] for r in rs if r.pk in keyinfo_of]),
            median_seconds=stats.median([r.seconds for r in rs]), timed_out=sum(missed.values()),
            counted=counted, counted_correct=counted_correct, stale=kinds[STALE], deleted=kinds[DELETED],
        ))
    table3 = stats.accuracy_summary([(p.counted_correct, p.counted) for p in participants
                                     if p.attempt.status == AttemptStatus.FINISHED])
    table3_all = stats.accuracy_summary([(p.counted_correct, p.counted) for p in participants])

    items = []
    kappa_rows = []
    max_options = 2
    for si in pool:
        max_options = max(max_options, len(si.item.options))
        versions = by_version.get(si.item_id) or {None: []}
        for version in sorted(versions, key=lambda v: (v is None, v or 0)):
            rs = versions[version]
            missed = timed_out_of_version[(si.item_id, version)]
            chosen = [r.chosen_option for r in rs]
            maj = stats.majority(chosen)
            key = (contents.get((si.item_id, version)) or {}).get("answer_index")
            if len(chosen) >= study.raters >= 2:  # more than its raters only after an edit undone: the first ones
                kappa_rows.append(chosen[:study.raters])
                # An option chosen at an earlier content may be past the item's options now (an edit removed one).
                max_options = max(max_options, *(c + 1 for c in chosen[:study.raters]))
            found = state_of.get((si.item_id, version))
            if found is None and si.item.status == ItemStatus.REJECTED:  # a deleted item nobody answered
                found = ItemState(state=DELETED, version=si.item.content_version,
                                  current_version=si.item.content_version)
            items.append(ItemResult(
                study_item=si, chosen=chosen, version=version, key=key, timed_out=missed,
                accuracy=sum(r.is_correct for r in rs) / (len(rs) + missed) if rs or missed else None,
                majority=maj, majority_correct=None if maj is None or key is None else maj == key,
                keyinfo=_mean([keyinfo_of[r.pk] for r in rs if r.pk in keyinfo_of]),
                median_seconds=stats.median([r.seconds for r in rs]), state=found,
            ))
    kappa = fleiss_kappa(counts_table(kappa_rows, range(max_options))) if kappa_rows else None
    seconds = [r.seconds for r in responses]
    with_majority = [i for i in items if i.majority_correct is not None and i.state and i.state.state == CURRENT]
    return StudyResults(
        table3=table3, table3_all=table3_all, participants=participants, items=items, kappa=kappa, kappa_items=len(kappa_rows),
        keyinfo=_mean(list(keyinfo_of.values())), median_seconds=stats.median(seconds), seconds=seconds,
        time_svg=stats.histogram_svg(seconds, label="seconds per question"),
        n_responses=len(responses), n_late=sum(r.is_late for r in responses),
        n_refused=RefusedAnswer.objects.filter(attempt__study=study).count(),
        n_screened_out=study.attempts.filter(status=AttemptStatus.SCREENED_OUT).count(),
        majority_accuracy=_mean([1.0 if i.majority_correct else 0.0 for i in with_majority]),
        first_option_share=_mean([1.0 if r.chosen_option == 0 else 0.0 for r in responses
                                  if state(r.item_id, r.item_version) == CURRENT]),  # like the accuracies
        n_timed_out=len(timed_out), states=_state_counts(responses, timed_out, state),
    )


def _state_counts(responses, timed_out, state) -> dict[str, StateCount]:
    """Answers and time-outs per state (current, stale, deleted), with the items they are on."""
    answers, times, correct, items = Counter(), Counter(), Counter(), defaultdict(set)
    for r in responses:
        kind = state(r.item_id, r.item_version)
        answers[kind] += 1
        correct[kind] += r.is_correct
        items[kind].add(r.item_id)
    for _, item_id, version in timed_out:
        kind = state(item_id, version)
        times[kind] += 1
        items[kind].add(item_id)
    return {kind: StateCount(answers=answers[kind], timed_out=times[kind], correct=correct[kind],
                             items=len(items[kind])) for kind in STATES}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


"""Asking a study's items again at their current content, after an item was edited mid-study.

An answer is about the content its participant saw (``Response.item_version``). When an annotator changes an item's
content while a study runs, the answers given before count for the earlier content only (the results show them
apart as stale, the accuracy figures and the leaderboard's Humans row leave them out), yet they hold places of the
item's quota: the item would end with fewer than the study's raters on the content it has now (the monitor warns).

`study_reask_changed_items` gives those places back, as the evaluation's refresh asks a run's stale items again:
each answered lease on an earlier content is marked ``quota_given_back`` (the answer and its lease stay, exported
and on record, counted apart as before) and leaves its item's load, and the item counts as having lost a rater
(``released_at``), so that the next starts take it first. Every item then ends with its raters on its current
content. It runs under the study's lock, as every change of a load does (lock order: study, then its items); it
is idempotent (a given-back answer is never given back twice, and the releases of a screen-out skip it). Rejected
(deleted) items are left as they are: nobody is asked about them again.

An edit undone after the places were given back makes those answers current again: they take their places back
(`given_back_reclaim`, oldest first, as far as the item has places open; run by "ask again" and by the periodic
sweep, so an item reverted is not handed out again in the meantime for long). Places that new participants have
filled meanwhile stay theirs: the item then ends with more current answers than its raters, never fewer (Fleiss' κ
takes its first raters' answers).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from studies.models import ParticipantLease, Study, StudyItem
from studies.selectors.item_states import changed_answers, current_again_answers
from studies.services.loads import loads_change


@dataclass(frozen=True)
class Reasked:
    """What `study_reask_changed_items` did: the items whose places it gave back, the answers it gave back, and the
    given-back answers current again that took places back."""

    items: int
    answers: int
    taken_back: int = 0


@transaction.atomic
def study_reask_changed_items(*, study_id: int, now: datetime | None = None) -> Reasked:
    """Give back the places that answers on an earlier content hold in their items' quotas (see the module); the
    given-back answers current again (an edit undone) take theirs back first."""
    now = now or timezone.now()
    Study.objects.select_for_update().filter(pk=study_id).first()  # held by every change of a load
    rows = list(changed_answers(study_id).values_list("pk", "study_item_id"))
    per_item = Counter(study_item_id for _, study_item_id in rows)
    if rows:
        list(StudyItem.objects.select_for_update().filter(pk__in=per_item).order_by("pk").values_list("pk"))
        ParticipantLease.objects.filter(pk__in=[pk for pk, _ in rows]).update(quota_given_back=True)
        loads_change(per_item, sign=-1, released_at=now)
    # Then the given-back answers current again take the places open, those just freed included.
    return Reasked(items=len(per_item), answers=len(rows), taken_back=_reclaim_locked(study_id))


def given_back_reclaim() -> int:
    """Every study's given-back answers that are current again take their places back (the periodic sweep); how
    many did. One indexed look when there are none, which is the rule."""
    reclaimed = 0
    # Only where a place is open: an answer whose item's places were all filled meanwhile stays given back, and is
    # not looked at (nor its study locked) again and again.
    waiting = current_again_answers().filter(study_item__load__lt=F("study_item__quota"))
    for study_id in waiting.values_list("attempt__study_id", flat=True).distinct().order_by():
        with transaction.atomic():
            Study.objects.select_for_update().filter(pk=study_id).first()
            reclaimed += _reclaim_locked(study_id)
    return reclaimed


def _reclaim_locked(study_id: int) -> int:
    """Inside the study's lock: given-back answers current again take their places back, each item's oldest first,
    as many as it has places open (a place filled meanwhile stays filled)."""
    rows = list(current_again_answers(study_id).order_by("study_item_id", "response__answered_at", "pk")
                .values_list("pk", "study_item_id"))
    if not rows:
        return 0
    open_places = dict(StudyItem.objects.select_for_update().filter(pk__in={si for _, si in rows}).order_by("pk")
                       .annotate(open=F("quota") - F("load")).values_list("pk", "open"))
    taken: list[int] = []
    per_item: Counter = Counter()
    for lease_id, study_item_id in rows:
        if per_item[study_item_id] < open_places[study_item_id]:
            per_item[study_item_id] += 1
            taken.append(lease_id)
    ParticipantLease.objects.filter(pk__in=taken).update(quota_given_back=False)
    loads_change(per_item, sign=+1)
    return len(taken)

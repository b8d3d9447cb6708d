"""The researcher's progress reads: the list of studies, a study's attempts and the live monitor (answered k/n,
time left, per-item load and answers on the current content, totals by status, the items short of raters on their
current content)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from annotation.models import ItemStatus
from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus, Study, StudyItem
from studies.selectors.item_states import changed_answers


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
    """Live view: every attempt with answered k/n and time left; per-item load and answers on the item's current
    content (``n_current``; ``n_earlier`` on a content it no longer has, ``n_given_back`` of which no longer hold a
    place in its quota, ``n_counted`` the answers that do); totals by status; ``short_items``: the items that have,
    or will end with, fewer than the study's raters answers on their current content; ``reaskable``: the answers on
    an earlier content that still hold places (what "ask again" gives back, rejected items left out)."""
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
    by_status: dict[str, int] = defaultdict(int)  # by the status' label, as the table beside it says them
    for a in attempts:
        by_status[str(a.get_status_display())] += 1
    answered = Q(leases__status=ParticipantLeaseStatus.ANSWERED)
    on_current = answered & Q(leases__response__item_version=F("item__content_version"))
    pool = list(
        StudyItem.objects.filter(study=study).select_related("item").only(
            "id", "position", "quota", "load", "item__id", "item__external_id", "item__source", "item__content_version",
            "item__status",
        ).annotate(n_answered=Count("leases", filter=answered), n_current=Count("leases", filter=on_current),
                   n_given_back=Count("leases", filter=answered & Q(leases__quota_given_back=True)))
        .order_by("position")
    )
    for p in pool:
        p.n_earlier = p.n_answered - p.n_current  # answers given on a content the item no longer has
        p.n_counted = p.n_answered - p.n_given_back  # the answers holding places of its quota
    answered_total = sum(p.n_counted for p in pool)  # the answers holding places: at most the answers wanted
    for p in pool:  # a rejected item is asked about no more, unless the pool is drawn with the rejected items
        p.asked = study.pool_include_rejected or p.item.status != ItemStatus.REJECTED
    stranded = _stranded(pool, per_participant=study.per_participant)
    return {
        "rows": rows, "by_status": dict(by_status), "pool": pool, "now": now,
        "answers": answered_total, "answers_wanted": len(pool) * study.raters,
        "complete_items": sum(1 for p in pool if p.n_counted >= p.quota),
        "short_items": _short_items(pool, raters=study.raters, stranded=stranded), "raters": study.raters,
        "reaskable": changed_answers(study.pk).count(),
        "stranded": stranded, "stranded_places": sum(p.quota - p.load for p in stranded),
        "per_participant": study.per_participant,
    }


def _stranded(pool: list[StudyItem], *, per_participant: int) -> list[StudyItem]:
    """The items (not rejected) whose open places no start can take now: a start needs ``per_participant`` distinct
    items with a place, and fewer have one (places given back by "ask again", or left by dropouts, whose number is
    not a multiple of a participant's share). Empty while enough items have places."""
    open_items = [p for p in pool if p.quota > p.load and p.asked]
    return open_items if len(open_items) < per_participant else []


def _short_items(pool: list[StudyItem], *, raters: int, stranded: list[StudyItem] = ()) -> list[StudyItem]:
    """The pool items (annotated with ``n_answered`` and ``n_current``) that have, or will end with, fewer than
    ``raters`` answers on their current content: answers given before an item's content changed used up its quota
    (the hand-out counts every answer whose place was not given back) but do not count for the content it has now,
    so the places still open (quota - counted answers, leased ones included) cannot make up the difference. The
    monitor calls such an item complete once its quota is used, the results count its answers on the earlier
    content apart, and kappa takes an item only at a content version with all its raters. "Ask again"
    (studies.services.reasking) gives those places back. The open places of a ``stranded`` item are not counted
    (no start can take them now); the leased ones are. A rejected item is never short: nobody is asked about it."""
    unfillable = {p.pk for p in stranded}

    def coming(p: StudyItem) -> int:
        leased = max(p.load - p.n_counted, 0)
        return leased + (0 if p.pk in unfillable else max(p.quota - p.load, 0))

    return [p for p in pool if p.asked and p.n_current < raters
            and p.n_current + coming(p) < raters]


"""The researcher's progress reads: the list of studies, a study's attempts and the live monitor (answered k/n,
time left, per-item load, totals by status)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus, Study, StudyItem


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


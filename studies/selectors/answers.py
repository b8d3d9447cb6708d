"""The participants' answers as other apps read them (the leaderboard's human figures and the one-scale fit):
accepted answers only, a screened-out attempt's left out."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Q

from studies.models import AttemptStatus, Response


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


"""The participants' answers as other apps read them (the leaderboard's human figures and the one-scale fit):
accepted answers only, a screened-out attempt's left out."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Q

from studies.models import AttemptStatus, ParticipantLease, ParticipantLeaseStatus, Response


@dataclass(frozen=True)
class ItemAnswers:
    responses: int
    correct: int
    #: Questions on the item (at its current version) whose own time limit ran out before an answer: the studies'
    #: results count them as not correct (participant accuracy = correct / (answered + timed out)), so a human
    #: accuracy consistent with them is correct / (responses + timed_out).
    timed_out: int = 0

    @property
    def counted(self) -> int:
        """The denominator of a human accuracy consistent with the studies' results: answers and time-outs."""
        return self.responses + self.timed_out


def response_outcomes(*, item_ids) -> dict[int, ItemAnswers]:
    """Accepted answers per item over every study, counting only answers scored on the item's current version
    (the version model results are compared on), with the questions shown at that version whose time ran out:
    item id -> ItemAnswers; one query. ``item_ids`` may be a list or a subquery of ids. Items with an answer or a
    time-out are in it (readers divide by `counted`, as the studies' results do)."""
    current = F("item__content_version")
    rows = (ParticipantLease.objects.filter(item_id__in=item_ids)
            .filter(Q(status=ParticipantLeaseStatus.ANSWERED, response__item_version=current)
                    | Q(status=ParticipantLeaseStatus.TIMED_OUT, shown_content_version=current))
            .exclude(attempt__status=AttemptStatus.SCREENED_OUT).order_by()
            .values("item_id").annotate(
                responses=Count("pk", filter=Q(status=ParticipantLeaseStatus.ANSWERED)),
                correct=Count("pk", filter=Q(status=ParticipantLeaseStatus.ANSWERED, response__is_correct=True)),
                timed_out=Count("pk", filter=Q(status=ParticipantLeaseStatus.TIMED_OUT)))
            .filter(Q(responses__gt=0) | Q(timed_out__gt=0)))
    return {r["item_id"]: ItemAnswers(responses=r["responses"], correct=r["correct"], timed_out=r["timed_out"])
            for r in rows}


def response_rows(*, item_ids) -> list[tuple[int, str, int, int, bool]]:
    """Every accepted answer on these items, at whatever item version it was scored on: (attempt id, study slug,
    item id, item version, right), ordered by attempt; one query (the item-response fit of evaluation reads it:
    each attempt is a respondent, each (item, version) an item)."""
    return list(Response.objects.filter(item_id__in=item_ids).exclude(attempt__status=AttemptStatus.SCREENED_OUT)
                .order_by("attempt_id", "pk")
                .values_list("attempt_id", "attempt__study__slug", "item_id", "item_version", "is_correct"))


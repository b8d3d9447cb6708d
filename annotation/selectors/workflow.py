"""Reads of the curation workflow: stage configurations, the work queue, leases, drafts, adjudications."""
from __future__ import annotations

from django.db.models import Count, Prefetch
from django.utils import timezone

from annotation.models import (
    Adjudication,
    AdjudicationStatus,
    AnnotatorLease,
    AnnotatorLeaseStatus,
    Draft,
    Item,
    ItemStatus,
    ReviewAction,
    ReviewDecision,
    Stage,
    StageConfig,
    VerificationDecision,
)


def stage_configs() -> dict[str, StageConfig]:
    """Every stage's configuration (defaults for stages without a row)."""
    stored = {c.stage: c for c in StageConfig.objects.all()}
    return {stage: stored.get(stage) or StageConfig(stage=stage) for stage in Stage.values}


def queue_overview(*, user) -> dict:
    """The work queue: per stage the items waiting in it, the user's live leases, k and where its items come from;
    how many imported items wait for a researcher to queue them; whether there is anything to do at all.

    A fixed number of queries.
    """
    now = timezone.now()
    configs = stage_configs()
    counted = [*Stage.values, ItemStatus.IMPORTED]
    waiting = dict(Item.objects.filter(status__in=counted).values_list("status").annotate(n=Count("id"))
                   .values_list("status", "n"))
    mine = list(AnnotatorLease.objects.filter(annotator=user, status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now)
                .select_related("item").order_by("stage", "leased_at"))
    sent_back = sent_back_items(items=[lease.item for lease in mine])
    for lease in mine:
        lease.sent_back = sent_back.get(lease.item_id)
    done = dict(AnnotatorLease.objects.filter(annotator=user, status=AnnotatorLeaseStatus.SUBMITTED)
                .values_list("stage").annotate(n=Count("id")).values_list("stage", "n"))
    stages, previous = [], None
    for stage in Stage:
        stages.append({"stage": stage, "label": stage.label, "k": configs[stage].annotators_required,
                       "waiting": waiting.get(stage, 0), "leases": [a for a in mine if a.stage == stage],
                       "done": done.get(stage, 0), "comes_after": previous})
        previous = stage
    return {"stages": stages, "imported": waiting.get(ItemStatus.IMPORTED, 0),
            "empty": not any(s["waiting"] or s["leases"] for s in stages)}


def _unresolved(review: ReviewDecision | None, status: str) -> bool:
    """A review sent the item back and the item, now in `status`, has not come back to review since: it is in the
    stage it was sent back to or a later editing stage (all of them are redone)."""
    if review is None or review.action != ReviewAction.SEND_BACK or not review.send_back_to:
        return False
    return status in [stage for stage in Stage(review.send_back_to).and_later() if stage != Stage.REVIEW]


def open_send_back(*, item: Item) -> ReviewDecision | None:
    """The review that sent the item back, while it is not resolved (the item's latest review, a send-back, and
    the item not in review again since): its comment says what to fix, its reviewer who asked."""
    latest = item.review_decisions.select_related("reviewer").order_by("-created_at", "-pk").first()
    return latest if _unresolved(latest, item.status) else None


def sent_back_items(*, items) -> dict[int, ReviewDecision]:
    """:func:`open_send_back` of several items in one query: item id -> its unresolved send-back."""
    status = {item.pk: item.status for item in items}
    latest: dict[int, ReviewDecision] = {}
    for review in (ReviewDecision.objects.filter(item_id__in=list(status)).select_related("reviewer")
                   .order_by("item_id", "-created_at", "-pk")):
        latest.setdefault(review.item_id, review)
    return {pk: review for pk, review in latest.items() if _unresolved(review, status[pk])}


def lease_for(*, user, item: Item, stage: str) -> AnnotatorLease | None:
    """The user's live (leased or submitted) lease on the item in the stage."""
    return (AnnotatorLease.objects.filter(item=item, stage=stage, annotator=user,
                                          status__in=AnnotatorLeaseStatus.live())
            .order_by("-leased_at").first())


def draft_for(*, user, item: Item, stage: str) -> Draft | None:
    """The user's draft of the item in the stage (none once its work was saved or discarded)."""
    return Draft.objects.filter(item=item, user=user, stage=stage, data__isnull=False).first()


def open_adjudications() -> list[Adjudication]:
    decisions = VerificationDecision.objects.filter(
        lease__status=AnnotatorLeaseStatus.SUBMITTED).select_related("annotator")
    return list(Adjudication.objects.filter(status=AdjudicationStatus.OPEN).select_related("item")
                .prefetch_related(Prefetch("item__verification_decisions", queryset=decisions, to_attr="current")))


def verification_by(*, user, item: Item) -> VerificationDecision | None:
    """The user's current (not superseded) verification decision on the item."""
    return (item.verification_decisions.filter(annotator=user)
            .exclude(lease__status=AnnotatorLeaseStatus.SUPERSEDED).first())


def review_by(*, user, item: Item) -> ReviewDecision | None:
    """The user's current (not superseded) review of the item."""
    return (item.review_decisions.filter(reviewer=user).exclude(lease__status=AnnotatorLeaseStatus.SUPERSEDED)
            .order_by("-created_at").first())


def adjudication_detail(*, adjudication_id: int) -> dict | None:
    """An adjudication with its item and the current verification decisions it settles (None if there is none)."""
    adjudication = Adjudication.objects.select_related("item").filter(pk=adjudication_id).first()
    if adjudication is None:
        return None
    decisions = list(adjudication.item.verification_decisions.exclude(lease__status=AnnotatorLeaseStatus.SUPERSEDED)
                     .select_related("annotator"))
    return {"adjudication": adjudication, "item": adjudication.item, "decisions": decisions,
            "open": adjudication.status == AdjudicationStatus.OPEN}


def curation_counts() -> dict:
    """For the researchers' home page: items per split and status (statuses in workflow order), open
    disagreements and the leases held right now. Three queries."""
    cells: dict[str, dict[str, int]] = {}
    for split, status, n in (Item.objects.values_list("split", "status").annotate(n=Count("id"))
                             .values_list("split", "status", "n").order_by("split")):
        cells.setdefault(split, {})[status] = n
    rows = [{"split": split, "counts": [counts.get(status, 0) for status in ItemStatus.values],
             "total": sum(counts.values())} for split, counts in cells.items()]
    return {
        "statuses": ItemStatus.choices,
        "splits": rows,
        "totals": [sum(row["counts"][i] for row in rows) for i in range(len(ItemStatus.values))],
        "items": sum(row["total"] for row in rows),
        "open_adjudications": Adjudication.objects.filter(status=AdjudicationStatus.OPEN).count(),
        "leases_now": AnnotatorLease.objects.filter(status=AnnotatorLeaseStatus.LEASED,
                                                    expires_at__gt=timezone.now()).count(),
    }

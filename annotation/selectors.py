"""Reads from the item store."""
from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Count, Q, QuerySet

from .models import Item, ItemRevision


def item_list(
    *,
    split: str | None = None,
    source: str | None = None,
    status: str | None = None,
    question_type: str | None = None,
    search: str | None = None,
) -> QuerySet[Item]:
    items = Item.objects.all()
    if split:
        items = items.filter(split=split)
    if source:
        items = items.filter(source=source)
    if status:
        items = items.filter(status=status)
    if question_type:
        items = items.filter(question_type=question_type)
    if search:
        if connection.vendor == "postgresql":
            vector = SearchVector("context", "question", config="english")
            query = SearchQuery(search, config="english", search_type="websearch")
            items = items.annotate(_search=vector).filter(
                Q(_search=query) | Q(question__icontains=search) | Q(external_id=search)
            )
        else:
            items = items.filter(Q(context__icontains=search) | Q(question__icontains=search) | Q(external_id=search))
    return items


def item_facets() -> dict:
    """Distinct values for the browser's filters."""
    return {
        "splits": list(Item.objects.order_by("split").values_list("split", flat=True).distinct()),
        "sources": list(Item.objects.order_by("source").values_list("source", flat=True).distinct()),
        "status_counts": dict(Item.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")),
    }


def item_revisions(*, item: Item) -> QuerySet[ItemRevision]:
    return item.revisions.select_related("author").order_by("-number")


# --------------------------------------------------------------------------
# Curation workflow reads.

from django.db.models import Prefetch  # noqa: E402
from django.utils import timezone  # noqa: E402

from .agreement import agreement_summary  # noqa: E402
from .diffing import content_diff  # noqa: E402
from .models import (  # noqa: E402
    CRITERIA, Adjudication, AdjudicationStatus, Assignment, AssignmentStatus, Criterion, Draft, ItemStatus, Stage,
    StageConfig, VerificationDecision,
)


def stage_configs() -> dict[str, StageConfig]:
    """Every stage's configuration (defaults for stages without a row)."""
    stored = {c.stage: c for c in StageConfig.objects.all()}
    return {stage: stored.get(stage) or StageConfig(stage=stage) for stage in Stage.values}


def queue_overview(*, user) -> list[dict]:
    """Per stage: items waiting in the stage, the user's live leases, k. A fixed number of queries."""
    now = timezone.now()
    configs = stage_configs()
    waiting = dict(Item.objects.filter(status__in=Stage.values).values_list("status").annotate(n=Count("id"))
                   .values_list("status", "n"))
    mine = list(Assignment.objects.filter(annotator=user, status=AssignmentStatus.LEASED, expires_at__gt=now)
                .select_related("item").order_by("stage", "leased_at"))
    done = dict(Assignment.objects.filter(annotator=user, status=AssignmentStatus.SUBMITTED)
                .values_list("stage").annotate(n=Count("id")).values_list("stage", "n"))
    return [
        {"stage": stage, "label": label, "k": configs[stage].annotators_required, "waiting": waiting.get(stage, 0),
         "leases": [a for a in mine if a.stage == stage], "done": done.get(stage, 0)}
        for stage, label in Stage.choices
    ]


def assignment_for(*, user, item: Item, stage: str) -> Assignment | None:
    """The user's live (leased or submitted) assignment on the item in the stage."""
    return (Assignment.objects.filter(item=item, stage=stage, annotator=user,
                                      status__in=[AssignmentStatus.LEASED, AssignmentStatus.SUBMITTED])
            .order_by("-leased_at").first())


def draft_for(*, user, item: Item, stage: str) -> Draft | None:
    return Draft.objects.filter(item=item, user=user, stage=stage).first()


def revision_snapshot(*, item: Item, number: int) -> dict | None:
    revision = ItemRevision.objects.filter(item=item, number=number).only("snapshot").first()
    return revision.snapshot if revision else None


def item_history(*, item: Item) -> list[dict]:
    """Revisions newest first, each with the diff against the revision before it."""
    revisions = list(item.revisions.select_related("author").order_by("number"))
    entries = []
    previous: dict = {}
    for revision in revisions:
        entries.append({"revision": revision, "diffs": content_diff(previous, revision.snapshot) if previous else []})
        previous = revision.snapshot
    return list(reversed(entries))


def open_adjudications() -> list[Adjudication]:
    decisions = VerificationDecision.objects.filter(
        assignment__status=AssignmentStatus.SUBMITTED).select_related("annotator")
    return list(Adjudication.objects.filter(status=AdjudicationStatus.OPEN).select_related("item")
                .prefetch_related(Prefetch("item__verification_decisions", queryset=decisions, to_attr="current")))


def progress_board() -> dict:
    """Items per status and stage, per-annotator throughput, and the leases held right now."""
    now = timezone.now()
    status_counts = dict(Item.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    by_split = list(Item.objects.values("split", "status").annotate(n=Count("id")).order_by("split", "status"))
    throughput_rows = (Assignment.objects.filter(status=AssignmentStatus.SUBMITTED)
                       .values("annotator__username", "stage").annotate(n=Count("id")))
    week = (Assignment.objects.filter(status=AssignmentStatus.SUBMITTED, submitted_at__gte=now - timezone.timedelta(days=7))
            .values("annotator__username").annotate(n=Count("id")))
    throughput: dict[str, dict] = {}
    for row in throughput_rows:
        throughput.setdefault(row["annotator__username"], {"stages": {}, "total": 0, "week": 0})
        throughput[row["annotator__username"]]["stages"][row["stage"]] = row["n"]
        throughput[row["annotator__username"]]["total"] += row["n"]
    for row in week:
        throughput.setdefault(row["annotator__username"], {"stages": {}, "total": 0, "week": 0})["week"] = row["n"]
    leases = list(Assignment.objects.filter(status=AssignmentStatus.LEASED, expires_at__gt=now)
                  .select_related("item", "annotator").order_by("expires_at"))
    return {
        "statuses": [{"status": s, "label": label, "n": status_counts.get(s, 0)} for s, label in ItemStatus.choices],
        "by_split": by_split,
        "throughput": sorted(throughput.items()),
        "leases": leases,
        "open_adjudications": Adjudication.objects.filter(status=AdjudicationStatus.OPEN).count(),
        "configs": stage_configs(),
        "imported": status_counts.get(ItemStatus.IMPORTED, 0),
    }


def verification_agreement() -> dict:
    """Agreement of the verification annotators: the keep/delete decision and each Table-7 criterion."""
    ratings: dict[str, dict[int, dict[str, object]]] = {"decision": {}, **{c: {} for c in CRITERIA}}
    rows = (VerificationDecision.objects.exclude(assignment__status=AssignmentStatus.SUPERSEDED)
            .values_list("item_id", "annotator__username", "decision", *CRITERIA))
    for item_id, username, decision, *flags in rows:
        ratings["decision"].setdefault(item_id, {})[username] = decision
        for name, flag in zip(CRITERIA, flags):
            ratings[name].setdefault(item_id, {})[username] = bool(flag)
    labels = {"decision": "Keep / delete", **{c: Criterion(c).label for c in CRITERIA}}
    questions = []
    for name, per_item in ratings.items():
        categories = ["keep", "delete"] if name == "decision" else [False, True]
        summary = agreement_summary(per_item, categories=categories)
        questions.append({"question": name, "label": labels[name], **summary})
    return {"stage": Stage.VERIFICATION, "k": stage_configs()[Stage.VERIFICATION].annotators_required,
            "questions": questions}

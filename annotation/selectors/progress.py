"""Reads for researchers: the curation progress board and the verification agreement."""
from __future__ import annotations

from django.db.models import Count
from django.utils import timezone

from annotation.agreement import agreement_summary
from annotation.models import (
    CRITERIA,
    Adjudication,
    AdjudicationStatus,
    AnnotatorLease,
    AnnotatorLeaseStatus,
    Criterion,
    Item,
    ItemStatus,
    Stage,
    VerificationDecision,
)
from annotation.selectors.workflow import stage_configs


def progress_board() -> dict:
    """Items per status and stage, per-annotator throughput, and the leases held right now."""
    now = timezone.now()
    status_counts = dict(Item.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    by_split = list(Item.objects.values("split", "status").annotate(n=Count("id")).order_by("split", "status"))
    throughput_rows = (AnnotatorLease.objects.filter(status=AnnotatorLeaseStatus.SUBMITTED)
                       .values("annotator__username", "stage").annotate(n=Count("id")))
    week = (AnnotatorLease.objects.filter(status=AnnotatorLeaseStatus.SUBMITTED, submitted_at__gte=now - timezone.timedelta(days=7))
            .values("annotator__username").annotate(n=Count("id")))
    throughput: dict[str, dict] = {}
    for row in throughput_rows:
        throughput.setdefault(row["annotator__username"], {"stages": {}, "total": 0, "week": 0})
        throughput[row["annotator__username"]]["stages"][row["stage"]] = row["n"]
        throughput[row["annotator__username"]]["total"] += row["n"]
    for row in week:
        throughput.setdefault(row["annotator__username"], {"stages": {}, "total": 0, "week": 0})["week"] = row["n"]
    leases = list(AnnotatorLease.objects.filter(status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now)
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
    rows = (VerificationDecision.objects.exclude(lease__status=AnnotatorLeaseStatus.SUPERSEDED)
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


def agreement_rows(report: dict) -> list[dict]:
    """The agreement report as flat rows (one per question, then one per rater pair) for the CSV export."""
    rows = []
    for q in report["questions"]:
        rows.append({"question": q["question"], "pair": "all", "items": q["items"],
                     "percent_agreement": q["percent_agreement"], "cohen_kappa": "",
                     "fleiss_kappa": q["fleiss_kappa"]})
        for pair in q["pairs"]:
            rows.append({"question": q["question"], "pair": " & ".join(pair["raters"]), "items": pair["items"],
                         "percent_agreement": pair["percent_agreement"], "cohen_kappa": pair["cohen_kappa"],
                         "fleiss_kappa": ""})
    return rows

"""Trust figures of a review queue from its stored labels and reviews (the statistics are the
pure `annotation.trust`, the sampling design the pure `annotation.review_order`).

Two estimates, each with its n:
* uniform: the reviews of labels in the uniform sample (audit key u <= u*, however they were
  handed out), every label counting once;
* weighted: every queue review, weighted by 1 / the label's inclusion probability.
Only reviews made in the review queue count (not those given in the verification or
clue-graph screens, which follow the workflow's order, not the sampling design); only
scored labels have a judge label and a belief to compare.
"""
from __future__ import annotations

from collections import Counter

from annotation import review_order, trust
from annotation.models import BeliefLabel, BeliefQueue, BeliefReview, LabelSource, LabelStatus, ReviewVia
from annotation.selectors.belief import PENDING, provenance

EXPORT_COLUMNS = ("review_id", "label_id", "target", "aspect", "item_id", "item_version", "judge_label", "belief",
                  "belief_source", "human_label", "agrees", "reviewer", "blind", "first_stream", "audit_key",
                  "in_uniform_sample", "inclusion_probability", "weight", "uniform_weight", "created_at")


def _labels(queue: BeliefQueue) -> list[BeliefLabel]:
    return list(BeliefLabel.objects.filter(queue=queue).exclude(status=LabelStatus.ERROR).only(
        "id", "target", "aspect", "item_id", "item_version", "label", "belief", "belief_source", "status",
        "audit_key", "first_stream", "final_source"))


def review_rows(*, queue: BeliefQueue, labels: list[BeliefLabel] | None = None) -> list[dict]:
    """One row per queue review of a scored label, with its sampling design."""
    labels = _labels(queue) if labels is None else labels
    drawn = {label.pk: review_order.Drawn(label.belief, label.audit_key, label.first_stream or None) for label in labels}
    u_star, k_star = review_order.sampling_frontier(list(drawn.values()))
    by_id = {label.pk: label for label in labels}
    reviews = list(BeliefReview.objects.filter(label__queue=queue, via=ReviewVia.QUEUE)
                   .select_related("reviewer").order_by("label_id", "created_at", "pk"))
    per_label = Counter(r.label_id for r in reviews)
    rows = []
    for review in reviews:
        label = by_id.get(review.label_id)
        if label is None or label.status != LabelStatus.SCORED:
            continue
        pi = review_order.inclusion_probability(drawn[label.pk], u_star, k_star)
        uniform = review_order.in_uniform_sample(drawn[label.pk], u_star)
        rows.append({
            "review_id": review.pk, "label_id": label.pk, "target": label.target, "aspect": label.aspect,
            "item_id": label.item_id, "item_version": label.item_version, "judge_label": label.label,
            "belief": label.belief, "belief_source": label.belief_source, "human_label": review.human_label,
            "agrees": review.human_label == label.label, "reviewer": review.reviewer.get_username(),
            "blind": review.blind, "first_stream": label.first_stream, "audit_key": label.audit_key,
            "in_uniform_sample": uniform, "inclusion_probability": pi,
            "weight": (1 / pi) / per_label[label.pk] if pi > 0 else 0.0,
            "uniform_weight": 1 / per_label[label.pk] if uniform else 0.0,
            "created_at": review.created_at.isoformat(),
        })
    return rows


def _figures(rows: list[dict], weight_key: str, threshold: float | None, population: list[float]) -> dict:
    chosen = [r for r in rows if r[weight_key] > 0]
    weights = [r[weight_key] for r in chosen]
    equal = len(set(weights)) <= 1
    return trust.trust_figures(
        [r["judge_label"] for r in chosen], [r["human_label"] for r in chosen], [r["belief"] for r in chosen],
        None if equal else weights, threshold=threshold, population=population)


def _by_aspect(rows: list[dict]) -> list[dict]:
    uniform = [r for r in rows if r["uniform_weight"] > 0]
    result = []
    for aspect in sorted({r["aspect"] for r in uniform}):
        chosen = [r for r in uniform if r["aspect"] == aspect]
        weights = [r["uniform_weight"] for r in chosen]
        w = None if len(set(weights)) <= 1 else weights
        result.append({"aspect": aspect, "n": len(chosen),
                       "accuracy": trust.accuracy([r["agrees"] for r in chosen], w).as_dict(),
                       "kappa": trust.kappa([r["judge_label"] for r in chosen], [r["human_label"] for r in chosen],
                                            w).as_dict()})
    return result


def belief_trust(*, queue: BeliefQueue) -> dict:
    """Every trust figure of the queue, both estimates, and what they rest on."""
    labels = _labels(queue)
    rows = review_rows(queue=queue, labels=labels)
    scored = [label.belief for label in labels if label.status == LabelStatus.SCORED]
    sources = Counter(provenance(label, queue.accept_threshold) for label in labels)
    u_star, k_star = review_order.sampling_frontier(
        [review_order.Drawn(label.belief, label.audit_key, label.first_stream or None) for label in labels])
    return {
        "queue": queue,
        "n_labels": len(labels),
        "n_scored": len(scored),
        "n_reviews": len(rows),
        "uniform": _figures(rows, "uniform_weight", queue.accept_threshold, scored),
        "weighted": _figures(rows, "weight", queue.accept_threshold, scored),
        "by_aspect": _by_aspect(rows),
        "u_star": u_star,
        "k_star": k_star,
        "provenance": {key: sources.get(key, 0) for key in [*LabelSource.values, PENDING]},
        "rows": rows,
    }

"""Trust figures of a review queue from its stored labels and reviews (the statistics are the
pure `annotation.trust`, the sampling design the pure `annotation.review_order`).

Plain counts first (how many reviews agree with the judge, how many of them are in the uniform
sample), then two estimates, each with its n (labels, not reviews: with k reviewers each review
weighs 1/k of its label):
* uniform: the reviews of labels in the uniform sample (audit key u <= u*, however they were
  handed out), every label counting once;
* weighted: every queue review, weighted by 1 / the label's inclusion probability, over the
  hand-outs made since the label was added (labels a judge adds after reviewing began are not
  taken as reviewed: `review_order.frontiers`).
An estimate is given from `trust.MIN_LABELS` labels (effective labels when weighted) on;
below that each side says how many more uniform reviews it needs. The weighted estimate is
refused while some scored label had no chance of review (nothing drawn at random yet, e.g. a
random share of 0 in triage order): the reviews chosen by belief would then stand for labels
they say nothing about.
Only reviews made in the review queue count (not those given in the verification or
clue-graph screens, which follow the workflow's order, not the sampling design); only
scored labels have a judge label and a belief to compare.
"""
from __future__ import annotations

import math
from collections import Counter

from django.utils.translation import gettext, gettext_noop

from annotation import ppi, review_order, trust
from annotation.models import (
    BeliefLabel,
    BeliefLease,
    BeliefQueue,
    BeliefReview,
    Item,
    LabelSource,
    LabelStatus,
    LabelTask,
    ReviewVia,
)
from annotation.selectors.belief import PENDING, provenance
from annotation.selectors.versions import judged_now_first

EXPORT_COLUMNS = ("review_id", "label_id", "target", "aspect", "item_id", "item_version", "judge_label", "belief",
                  "belief_source", "human_label", "agrees", "reviewer", "blind", "first_stream", "audit_key",
                  "tie_key", "in_uniform_sample", "inclusion_probability", "weight", "uniform_weight", "created_at")


LABEL_FIELDS = ("id", "queue_id", "target", "aspect", "item_id", "item_version", "label", "belief", "belief_source",
                "status", "audit_key", "tie_key", "first_stream", "final_source", "created_at", "task", "choices")


def _labels(queue: BeliefQueue) -> list[BeliefLabel]:
    return list(BeliefLabel.objects.filter(queue=queue).exclude(status=LabelStatus.ERROR).only(*LABEL_FIELDS))


def _drawn(label: BeliefLabel) -> review_order.Drawn:
    return review_order.Drawn(label.belief, label.audit_key, label.first_stream or None, added=label.created_at,
                              tie_key=label.tie_key)


def handouts(queue: BeliefQueue) -> list[review_order.Handout]:
    """Every hand-out of the queue (a lease, whatever became of it): when, by which stream, of which label."""
    return [review_order.Handout(at, stream, belief, key, tie) for at, stream, belief, key, tie in
            BeliefLease.objects.filter(label__queue=queue).order_by("leased_at", "pk")
            .values_list("leased_at", "stream", "label__belief", "label__audit_key", "label__tie_key")]


def design(*, queue: BeliefQueue, labels: list[BeliefLabel] | None = None,
           handed: list[review_order.Handout] | None = None) -> dict[int, tuple[float, float, bool]]:
    """Per label id: (its own frontier u*, its inclusion probability, whether it is in the uniform sample), each
    over the hand-outs made since the label was added (a second run graded into the queue later is not taken as
    reviewed: `review_order.frontiers`). ``labels``, ``handed``: the queue's, when already loaded."""
    labels = _labels(queue) if labels is None else labels
    drawn = [_drawn(label) for label in labels]
    handed = handouts(queue) if handed is None else handed
    result = {}
    for label, d, (u_star, k_star) in zip(labels, drawn, review_order.frontiers(drawn, handed)):
        result[label.pk] = (u_star, review_order.inclusion_probability(d, u_star, k_star),
                            review_order.in_uniform_sample(d, u_star))
    return result


def review_rows(*, queue: BeliefQueue, labels: list[BeliefLabel] | None = None,
                sampling: dict[int, tuple[float, float, bool]] | None = None) -> list[dict]:
    """One row per queue review of a scored label, with its sampling design."""
    labels = _labels(queue) if labels is None else labels
    sampling = design(queue=queue, labels=labels) if sampling is None else sampling
    by_id = {label.pk: label for label in labels}
    reviews = list(BeliefReview.objects.filter(label__queue=queue, via=ReviewVia.QUEUE)
                   .select_related("reviewer").order_by("label_id", "created_at", "pk"))
    per_label = Counter(r.label_id for r in reviews)
    rows = []
    for review in reviews:
        label = by_id.get(review.label_id)
        if label is None or label.status != LabelStatus.SCORED:
            continue
        _, pi, uniform = sampling[label.pk]
        rows.append({
            "review_id": review.pk, "label_id": label.pk, "target": label.target, "aspect": label.aspect,
            "item_id": label.item_id, "item_version": label.item_version, "judge_label": label.label,
            "belief": label.belief, "belief_source": label.belief_source, "human_label": review.human_label,
            "agrees": review.human_label == label.label, "reviewer": review.reviewer.get_username(),
            "blind": review.blind, "first_stream": label.first_stream, "audit_key": label.audit_key,
            "tie_key": label.tie_key,
            "in_uniform_sample": uniform, "inclusion_probability": pi,
            "weight": (1 / pi) / per_label[label.pk] if pi > 0 else 0.0,
            "uniform_weight": 1 / per_label[label.pk] if uniform else 0.0,
            "created_at": review.created_at.isoformat(),
        })
    return rows


def _figures(rows: list[dict], weight_key: str, threshold: float | None, population: list[float],
             refused: str = "") -> dict:
    chosen = [r for r in rows if r[weight_key] > 0]
    weights = [r[weight_key] for r in chosen]
    equal = len(set(weights)) <= 1
    return trust.trust_figures(
        [r["judge_label"] for r in chosen], [r["human_label"] for r in chosen], [r["belief"] for r in chosen],
        None if equal else weights, threshold=threshold, population=population,
        groups=[r["label_id"] for r in chosen], refused=refused if chosen else "",
        questions=[r["aspect"] for r in chosen])


def _aspect_estimates(chosen: list[dict], weight_key: str, refused: str) -> dict:
    weights = [r[weight_key] for r in chosen]
    w = None if len(set(weights)) <= 1 else weights
    groups = [r["label_id"] for r in chosen]
    n = trust.label_count(len(chosen), groups)
    if refused and chosen:
        missing = trust.Estimate(None, None, None, n, trust.effective_n(w, len(chosen), groups), refused).as_dict()
        return {"n": n, "accuracy": missing, "kappa": missing}
    return {"n": n,
            "accuracy": trust.accuracy([r["agrees"] for r in chosen], w, groups=groups,
                                       min_n=trust.MIN_LABELS).as_dict(),
            "kappa": trust.kappa([r["judge_label"] for r in chosen], [r["human_label"] for r in chosen], w,
                                 groups=groups, min_n=trust.MIN_LABELS).as_dict()}


def _by_aspect(rows: list[dict], refused: str = "") -> list[dict]:
    """Per question (aspect) of the queue: accuracy and kappa with their n and intervals, from the uniform sample
    and from every review weighted (a queue of several questions gives kappa only here)."""
    result = []
    for aspect in sorted({r["aspect"] for r in rows}):
        of_aspect = [r for r in rows if r["aspect"] == aspect]
        uniform = _aspect_estimates([r for r in of_aspect if r["uniform_weight"] > 0], "uniform_weight", "")
        weighted = _aspect_estimates([r for r in of_aspect if r["weight"] > 0], "weight", refused)
        result.append({"aspect": aspect, "n": uniform["n"], "n_reviews": len(of_aspect),
                       "accuracy": uniform["accuracy"], "kappa": uniform["kappa"],
                       "uniform": uniform, "weighted": weighted})
    return result


def counts(rows: list[dict]) -> dict:
    """The plain counts the estimates rest on: reviews, those agreeing with the judge, labels; all and in the
    uniform sample."""
    uniform = [r for r in rows if r["in_uniform_sample"]]
    return {
        "reviews": len(rows), "agree": sum(r["agrees"] for r in rows), "labels": len({r["label_id"] for r in rows}),
        "uniform_reviews": len(uniform), "uniform_agree": sum(r["agrees"] for r in uniform),
        "uniform_labels": len({r["label_id"] for r in uniform}),
    }


def _uniform_missing(figures: dict, queue: BeliefQueue) -> str:
    """What the uniform estimate still needs, in reviews a researcher can plan ('' when it is given)."""
    if figures["defined"]:
        return ""
    needed = trust.MIN_LABELS - figures["n"]
    have = gettext("The uniform sample has %(n)s reviewed label(s); an estimate needs %(min)s: %(needed)s more uniform "
             "review(s).") % {"n": figures["n"], "min": trust.MIN_LABELS, "needed": needed}
    if queue.order == review_order.AUDIT:
        return have + " " + gettext("In audit order every hand-out is a uniform draw.")
    if queue.random_share <= 0:
        return have + " " + gettext("The random share is 0, so none will come in triage order: set a random share above 0, "
                              "or the audit order.")
    return have + " " + gettext("At a random share of %(share)s, that is about %(more)s more hand-out(s).") % {
        "share": f"{queue.random_share:.0%}", "more": math.ceil(needed / queue.random_share)}


def _weighted_missing(figures: dict, rows: list[dict], refused: str) -> str:
    """What the weighted estimate still needs ('' when it is given)."""
    if figures["defined"]:
        return ""
    if figures["n"] == 0:
        return gettext("No reviewed label yet; an estimate needs %(min)s.") % {"min": trust.MIN_LABELS}
    if refused:
        return gettext("No weighted estimate: %(why)s.") % {"why": refused}
    # Each label drawn with probability u* < 1 weighs 1/u*; n_eff is at least their number, so this many more
    # uniform reviews bring it to the minimum at the latest.
    drawn = len({r["label_id"] for r in rows if 0 < r["inclusion_probability"] < 1})
    needed = max(1, trust.MIN_LABELS - drawn)
    return gettext("The %(n)s reviewed label(s) count as %(n_eff)s once weighted (the labels drawn at random weigh one "
             "over the chance of their draw); an estimate needs %(min)s: about %(needed)s more uniform review(s).") % {
        "n": figures["n"], "n_eff": f"{figures['n_eff']:.1f}", "min": trust.MIN_LABELS, "needed": needed}


def belief_trust(*, queue: BeliefQueue) -> dict:
    """Every trust figure of the queue, both estimates, and what they rest on; the headline share's precision
    (`belief_precision`)."""
    from annotation.selectors import belief_precision  # it reads this module's design

    labels = _labels(queue)
    sampling = design(queue=queue, labels=labels)
    rows = review_rows(queue=queue, labels=labels, sampling=sampling)
    scored = [label.belief for label in labels if label.status == LabelStatus.SCORED]
    sources = Counter(provenance(label, queue.accept_threshold) for label in labels)
    drawn = [_drawn(label) for label in labels]
    u_star, k_star = review_order.sampling_frontier(drawn)
    zero = [label for label in labels if label.status == LabelStatus.SCORED and sampling[label.pk][1] <= 0]
    unreachable = len(zero)
    # Labels recorded before tie keys, tied by u with the order stream's frontier and beyond it: their u is above
    # the frontier's, out of the random draws' reach so far (review_order).
    tied = sum(1 for label in zero if label.tie_key is None and sampling[label.pk][0] > 0)
    if not unreachable:
        refused = ""
    elif tied == unreachable and u_star > 0:
        refused = gettext("%(n)s scored label(s), recorded before ties of belief were broken apart from the audit "
                          "key, share the belief of the last label reviewed in triage order and come after it: the "
                          "random draws have not reached them yet, so the reviews cannot stand for them") % {"n": tied}
    elif u_star <= 0:
        refused = gettext("no label has been drawn at random yet, so %(n)s scored label(s) had no chance of review: "
                    "weighting the reviews chosen by belief cannot stand for them (no unbiased estimate without a "
                    "uniform sample)") % {"n": unreachable}
    else:
        refused = gettext("no label has been drawn at random since %(n)s scored label(s) were added, so they had no "
                    "chance of review yet: the reviews cannot stand for them until the random share has drawn after "
                    "them") % {"n": unreachable}
    uniform = _figures(rows, "uniform_weight", queue.accept_threshold, scored)
    weighted = _figures(rows, "weight", queue.accept_threshold, scored, refused)
    uniform["missing"] = _uniform_missing(uniform, queue)
    weighted["missing"] = _weighted_missing(weighted, rows, refused)
    return {
        "queue": queue,
        "n_labels": len(labels),
        "n_scored": len(scored),
        "n_reviews": len(rows),
        "counts": counts(rows),
        "min_labels": trust.MIN_LABELS,
        "uniform": uniform,
        "weighted": weighted,
        "by_aspect": _by_aspect(rows, refused),
        "powered": powered_shares(queue=queue, sampling=sampling),
        "precision": belief_precision.precision(queue=queue, labels=labels, sampling=sampling),
        "u_star": u_star,
        "k_star": k_star,
        "provenance": {key: sources.get(key, 0) for key in [*LabelSource.values, PENDING]},
        "rows": rows,
    }


#: What each task's judge-powered estimate is the share of: (aspect, positive label, what the share is).
POWERED_QUANTITIES = {
    LabelTask.FREE_TEXT: ("verdict", "correct", gettext_noop("share of answers correct")),
    LabelTask.SCREENING: ("keep", "keep", gettext_noop("share of items kept")),
    LabelTask.CLUE_GRAPH: ("graph", "draft", gettext_noop("share of drafts accepted as they are")),
}


def powered_share(*, queue: BeliefQueue, task: str, targets: list[str] | None = None, known_zeros: int = 0,
                  asked: dict[str, int] | None = None,
                  sampling: dict[int, tuple[float, float, bool]] | None = None) -> dict | None:
    """The share of targets people would give the task's positive label (`POWERED_QUANTITIES`), three ways, each
    with its n: the judge alone (its labels, no interval: nothing says how far they are off), people alone (the
    queue's reviews weighted by one over each label's inclusion probability) and judge-powered (PPI++ with the
    same weights, `annotation.ppi`). ``targets``: only these (e.g. a run's results); ``known_zeros``: further
    targets known to be negative without review (a free-text run's results without an answer); ``asked``: the
    content version each target was asked at (a model's result: the content its answer answered), whose label alone
    counts (a label at another version judged content the target never saw); without it, each target's latest. None
    when the queue has no such label."""
    aspect, positive, what = POWERED_QUANTITIES[task]
    labels = [label for label in _labels(queue) if label.task == task and label.aspect == aspect]
    if targets is not None:
        wanted = set(targets)
        labels = [label for label in labels if label.target in wanted]
    if asked is not None:
        labels = [label for label in labels if asked.get(label.target) == label.item_version]
    # One label per target: of its item's content now if judged, else the latest judged.
    now = dict(Item.objects.filter(pk__in={label.item_id for label in labels}).values_list("pk", "content_version"))

    def rank(label: BeliefLabel) -> tuple[bool, int]:
        return judged_now_first(label.item_version, now.get(label.item_id), label.pk)

    latest: dict[str, BeliefLabel] = {}
    for label in labels:
        if label.target not in latest or rank(label) > rank(latest[label.target]):
            latest[label.target] = label
    labels = list(latest.values())
    if not labels and not known_zeros:
        return None
    sampling = design(queue=queue) if sampling is None else sampling
    reviews: dict[int, list[str]] = {}
    for label_id, human in (BeliefReview.objects.filter(label__in=[label.pk for label in labels], via=ReviewVia.QUEUE)
                            .values_list("label_id", "human_label")):
        reviews.setdefault(label_id, []).append(human)
    predictions, observed, inclusion = [], [], []
    for label in labels:
        scored = label.status == LabelStatus.SCORED
        predictions.append(ppi.prediction(label.label, label.belief, positive, label.choices) if scored else None)
        given = reviews.get(label.pk)
        observed.append(sum(h == positive for h in given) / len(given) if given else None)
        inclusion.append(sampling[label.pk][1])
    predictions += [0.0] * known_zeros
    observed += [0.0] * known_zeros
    inclusion += [1.0] * known_zeros
    scored = [label for label in labels if label.status == LabelStatus.SCORED]
    judge = (sum(label.label == positive for label in scored) / (len(scored) + known_zeros)
             if scored or known_zeros else None)
    return {
        "task": task, "aspect": aspect, "positive": positive, "what": gettext(what), "n": len(labels) + known_zeros,
        "known_zeros": known_zeros,
        "judge": {"value": judge, "n": len(scored) + known_zeros, "unscored": len(labels) - len(scored)},
        "people": ppi.powered_mean(predictions, observed, inclusion, lam=0.0).as_dict(),
        "powered": ppi.powered_mean(predictions, observed, inclusion).as_dict(),
    }


def powered_shares(*, queue: BeliefQueue, sampling: dict[int, tuple[float, float, bool]] | None = None) -> list[dict]:
    """`powered_share` of every task the queue has labels of."""
    tasks = set(BeliefLabel.objects.filter(queue=queue).values_list("task", flat=True).distinct())
    sampling = design(queue=queue) if sampling is None else sampling
    found = [powered_share(queue=queue, task=task, sampling=sampling) for task in POWERED_QUANTITIES if task in tasks]
    return [share for share in found if share is not None]

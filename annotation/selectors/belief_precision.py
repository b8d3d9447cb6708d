"""Review until precise enough (issue 21, point 2): how precise a queue's headline share is now, how many more
uniform reviews would reach the researcher's target, and whether the queue has reached it (and so closes).

The headline share is what the queue's judge labels measure (`belief_trust.POWERED_QUANTITIES`: the share of
answers correct, of items kept, of drafts accepted as they are), as people answer it. It is estimated from the
uniform sample only: the labels whose audit key is at most the largest the random stream drew
(`review_order.in_uniform_sample`). In audit-key order those labels are a uniform random order of the queue's
labels, fixed when they were recorded, so their answers X_1, X_2, ... (each label's share of reviews giving
the positive label) are the draws an anytime-valid confidence sequence needs; the sequence runs over the longest
run of them, in that order, that has been reviewed (a label of the sample still waiting for its review ends the
run until it is reviewed). The sequence is the hedged betting one of `annotation.confidence_sequence`; beside it,
the fixed-n Wilson interval of the same answers, valid only for an n fixed in advance.

Both hold for the labels' population as the judge draws them (independent draws). Labels graded into the queue
after reviewing began join the uniform sample only once the random stream draws past them
(`review_order.frontiers`), so they do not bend the run.
"""
from __future__ import annotations

import math

from django.utils.translation import gettext, gettext_noop

from annotation import confidence_sequence, review_order, trust
from annotation.models import BeliefLabel, BeliefLease, BeliefQueue, BeliefReview, LabelStatus, ReviewVia
from annotation.selectors.belief_trust import LABEL_FIELDS, POWERED_QUANTITIES, _labels, design

METHOD = "hedged"
METHOD_NAME = gettext_noop("hedged betting confidence sequence (Waudby-Smith & Ramdas, JRSS-B 2024)")


def _headline_task(labels: list[BeliefLabel]) -> str | None:
    present = {(label.task, label.aspect) for label in labels}
    return next((task for task, (aspect, _, _) in POWERED_QUANTITIES.items() if (task, aspect) in present), None)


def _reviews(**filters) -> dict[int, list[str]]:
    """The people's labels of each label, from the review queue only."""
    given: dict[int, list[str]] = {}
    for label_id, human in BeliefReview.objects.filter(via=ReviewVia.QUEUE, **filters).values_list(
            "label_id", "human_label"):
        given.setdefault(label_id, []).append(human)
    return given


def headline_answers(*, queue: BeliefQueue, labels: list[BeliefLabel] | None = None, sampling: dict | None = None,
                     given: dict[int, list[str]] | None = None) -> tuple[str | None, list[float], int]:
    """The headline task, the answers of its uniform-sample labels in audit-key order (the reviewed run), and how
    many labels of the sample wait for a review after the run. ``given``: each label's reviews, when loaded."""
    labels = _labels(queue) if labels is None else labels
    task = _headline_task(labels)
    if task is None:
        return None, [], 0
    sampling = design(queue=queue, labels=labels) if sampling is None else sampling
    aspect, positive, _ = POWERED_QUANTITIES[task]
    sample = sorted((label for label in labels if label.task == task and label.aspect == aspect
                     and sampling[label.pk][2]), key=lambda label: (label.audit_key, label.pk))
    if given is None:
        given = _reviews(label__queue=queue, label__task=task, label__aspect=aspect)
    answers: list[float] = []
    for position, label in enumerate(sample):
        reviews = given.get(label.pk)
        if not reviews:
            return task, answers, len(sample) - position
        answers.append(sum(h == positive for h in reviews) / len(reviews))
    return task, answers, 0


def _headline_count(labels: list[BeliefLabel], task: str) -> int:
    """How many labels of the queue answer its headline share (the labels a uniform review can draw)."""
    aspect = POWERED_QUANTITIES[task][0]
    return sum(1 for label in labels if label.task == task and label.aspect == aspect)


def _handouts_for(queue: BeliefQueue, labels: list[BeliefLabel], task: str, more: int) -> int | None:
    """About how many hand-outs bring `more` uniform reviews of the headline labels (None: none will come)."""
    aspect = POWERED_QUANTITIES[task][0]
    of_aspect = sum(1 for label in labels if label.task == task and label.aspect == aspect)
    per_label = len(labels) / max(of_aspect, 1) * queue.reviewers_per_label
    if queue.order == review_order.AUDIT:
        return math.ceil(more * per_label)
    if queue.random_share <= 0:
        return None
    return math.ceil(more * per_label / queue.random_share)


def precision(*, queue: BeliefQueue, labels: list[BeliefLabel] | None = None, sampling: dict | None = None,
              given: dict[int, list[str]] | None = None, look_ahead: bool = True) -> dict:
    """The headline share of the queue from its uniform sample: value, fixed-n and anytime-valid intervals with
    their half-widths, the target, whether it is reached, and how many more uniform reviews (and about how many
    hand-outs) reach it (``look_ahead`` False: not worked out, e.g. for a hand-out, which needs only whether)."""
    labels = _labels(queue) if labels is None else labels
    task, answers, waiting = headline_answers(queue=queue, labels=labels, sampling=sampling, given=given)
    target = queue.target_half_width
    result = {"task": task, "what": "", "positive": None, "n": len(answers), "waiting": waiting, "value": None,
              "fixed": None, "sequence": None, "method": gettext(METHOD_NAME), "target": target, "reached": False,
              "more_uniform": None, "more_handouts": None, "note": "", "reason": ""}
    if task is None:
        result["note"] = gettext("This queue has no label of a share it estimates.")
        return result
    _, positive, what = POWERED_QUANTITIES[task]
    result.update(what=gettext(what), positive=positive)
    sequence = confidence_sequence.confidence_sequence(answers, method=METHOD)
    result["sequence"] = {"low": sequence.low, "high": sequence.high, "half_width": sequence.half_width}
    # The estimate itself and its fixed-n interval from trust.MIN_LABELS uniform reviews on, like every trust figure
    # (below that one more review moves it by 0.1 or more); the sequence is valid from the first review.
    fixed = trust.accuracy(answers, min_n=trust.MIN_LABELS)
    result["reason"] = fixed.reason
    if fixed.value is not None:
        result["value"] = fixed.value
        result["fixed"] = {"low": fixed.low, "high": fixed.high, "half_width": (fixed.high - fixed.low) / 2}
    if target is None:
        return result
    result["reached"] = sequence.half_width <= target
    if not look_ahead and not result["reached"]:
        return result
    more = 0 if result["reached"] else confidence_sequence.more_needed(answers, target, method=METHOD)
    result["more_uniform"] = more
    if more is not None and more > 0:
        result["more_handouts"] = _handouts_for(queue, labels, task, more)
    if result["reached"]:
        result["note"] = gettext("Precision target reached: the %(what)s is known to ±%(half).3f (target ±%(target)s) "
                                 "from %(n)s uniform reviews, so this queue hands out no more labels.") % {
            "what": result["what"], "half": sequence.half_width, "target": target, "n": len(answers)}
    elif len(answers) >= _headline_count(labels, task):  # every headline label is drawn and reviewed: nothing left
        result["more_uniform"] = result["more_handouts"] = None
        result["note"] = gettext("Every label of the uniform sample has been reviewed: no further review can narrow "
                                 "the interval below ±%(half).3f (target ±%(target)s).") % {
            "half": sequence.half_width, "target": target}
    elif more is None:
        result["note"] = gettext("More than %(limit)s further uniform reviews would be needed to reach ±%(target)s.") % {
            "limit": confidence_sequence.MAX_MORE, "target": target}
    elif result["more_handouts"] is None:
        result["note"] = gettext("About %(more)s more uniform reviews reach ±%(target)s, but at a random share of 0 in "
                                 "triage order none will come: set a random share above 0, or the audit order.") % {
            "more": more, "target": target}
    else:
        result["note"] = gettext("About %(more)s more uniform reviews (about %(handouts)s hand-outs) reach "
                                 "±%(target)s.") % {"more": more, "handouts": result["more_handouts"], "target": target}
    return result


def precision_reached(*, queue: BeliefQueue) -> dict | None:
    """The queue's `precision` when it has a target and has reached it (it then hands out no more), else None."""
    if queue.target_half_width is None:
        return None
    figures = precision(queue=queue, look_ahead=False)
    return figures if figures["reached"] else None


def precisions(*, queues: list[BeliefQueue]) -> dict[int, dict]:
    """`precision` of each queue, by queue id, in two queries whatever the number of queues (the queue list)."""
    ids = [queue.pk for queue in queues]
    labels: dict[int, list[BeliefLabel]] = {pk: [] for pk in ids}
    for label in BeliefLabel.objects.filter(queue__in=ids).exclude(status=LabelStatus.ERROR).only(*LABEL_FIELDS):
        labels[label.queue_id].append(label)
    handed: dict[int, list[review_order.Handout]] = {pk: [] for pk in ids}
    given: dict[int, list[str]] = {}
    # Every review of the queue has its lease (belief_review_queue_lease): hand-outs and reviews in one query.
    for queue_id, at, stream, belief, key, tie, label_id, human, via in (
            BeliefLease.objects.filter(label__queue__in=ids).order_by("leased_at", "pk")
            .values_list("label__queue_id", "leased_at", "stream", "label__belief", "label__audit_key",
                         "label__tie_key", "label_id", "review__human_label", "review__via")):
        handed[queue_id].append(review_order.Handout(at, stream, belief, key, tie))
        if human is not None and via == ReviewVia.QUEUE:
            given.setdefault(label_id, []).append(human)
    return {queue.pk: precision(queue=queue, labels=labels[queue.pk], given=given,
                                sampling=design(queue=queue, labels=labels[queue.pk], handed=handed[queue.pk]))
            for queue in queues}

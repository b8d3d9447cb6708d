"""Belief labels, reads: labels and reviews (also for the judge side), the review queues, a
reviewer's lease, and the judge's suggestions shown in the verification and clue-graph screens.

The final label of a target is `final_label` when set, else the judge's `label`;
`provenance` names where it came from.

What of a label a person may see is decided in one place, `shown_label`: every annotator page,
partial and API shows a label through it, never the model row. While a label is in blind
review (`judge_hidden`) nothing the judge said about it (verdict, belief, rationale, the
payload's similarities, votes, stated confidence, ..., suggestions and drafts) reaches anyone
who could review it; researchers read the full record on their own pages (trust page, labels
and reviews API, admin).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, Exists, F, Min, OuterRef, Q, QuerySet, Value, When
from django.utils.translation import gettext, pgettext_lazy

from annotation.models import (
    Adjudication,
    BeliefLabel,
    BeliefLease,
    BeliefLeaseStatus,
    BeliefQueue,
    BeliefReview,
    Criterion,
    ItemRevision,
    ItemStatus,
    LabelSource,
    LabelStatus,
    LabelTask,
    ReviewOrder,
    ReviewVia,
    Stage,
)
from annotation.models.belief import DRAFT_ACCEPTED, DRAFT_DISCARDED, DRAFT_EDITED, KEEP_ASPECT
from annotation.screening import SCREENING_CRITERIA

#: What a reviewer may answer when the judge gave no choices.
DEFAULT_CHOICES = {
    LabelTask.FREE_TEXT: ["correct", "incorrect"],
    LabelTask.CLUE_GRAPH: [DRAFT_ACCEPTED, DRAFT_EDITED, DRAFT_DISCARDED],
}
SCREENING_CHOICES = {KEEP_ASPECT: ["keep", "delete"], **{aspect: ["yes", "no"] for aspect in SCREENING_CRITERIA}}
PENDING = "pending"
#: The answers above as a reviewer reads them (the review page translates each; the stored label stays the code).
CHOICE_WORDS = [
    pgettext_lazy("judge label", "correct"), pgettext_lazy("judge label", "incorrect"),
    pgettext_lazy("judge label", "draft"), pgettext_lazy("judge label", "edited"),
    pgettext_lazy("judge label", "discarded"), pgettext_lazy("judge label", "keep"),
    pgettext_lazy("judge label", "delete"), pgettext_lazy("judge label", "yes"), pgettext_lazy("judge label", "no")]
#: Where a label's final answer came from, as the trust page names each (LabelSource's values and PENDING).
SOURCE_WORDS = [
    pgettext_lazy("label source", "judge-accepted"), pgettext_lazy("label source", "judge-overridden"),
    pgettext_lazy("label source", "human-only"), pgettext_lazy("label source", "auto-accepted"),
    pgettext_lazy("label source", "pending")]

#: Payload fields that are what a label is about rather than what the judge said of it: the free-text
#: answer being graded (the model's, not the judge's) and the clue-graph draft its reviewer is asked to
#: judge. Everything else in a payload (similarities, matched_option, votes, samples, stated_confidence,
#: verdict_without_belief, anchors, anchored_share, ...) is the judge's and hidden with its verdict.
SUBJECT_FIELDS: dict[str, tuple[str, ...]] = {
    LabelTask.FREE_TEXT: ("answer",),
    LabelTask.CLUE_GRAPH: ("evidence", "multi_hop_reasoning"),
}


@dataclass(frozen=True)
class JudgeSide:
    """What the judge said of a label: shown only when `judge_hidden` is false for the viewer."""

    label: str
    belief: float | None
    belief_source: str
    status: str
    rationale: str
    payload: dict[str, Any]
    queue: str
    item_version: int


@dataclass(frozen=True)
class ShownLabel:
    """A judge label as one person may see it on an annotator page or API (`shown_label`).

    `subject` is what the label is about (see SUBJECT_FIELDS); `judge` is None while the
    label is in blind review for this person.
    """

    pk: int
    item_id: int
    item_version: int
    task: str
    target: str
    aspect: str
    queue: str
    blind: bool
    choices: list[str]
    subject: dict[str, Any] = field(default_factory=dict)
    judge: JudgeSide | None = None

    @property
    def id(self) -> int:
        return self.pk

    @property
    def hidden(self) -> bool:
        return self.judge is None

    @property
    def task_display(self) -> str:
        return LabelTask(self.task).label if self.task in LabelTask.values else self.task


def judge_hidden(label: BeliefLabel, *, user) -> bool:
    """Whether the judge's part of `label` is hidden from `user`: the label is in blind review (its queue
    is blind and it has fewer reviews than the queue asks for) and `user` has not reviewed it yet.

    Roles do not matter: a researcher may review too, so on annotator pages a researcher is as blind
    as an annotator (researcher pages read the full record).
    """
    queue = label.queue
    if not queue.blind:
        return False
    user_id = getattr(user, "pk", None)
    counts = BeliefReview.objects.filter(label_id=label.pk).aggregate(
        n=Count("pk"), mine=Count("pk", filter=Q(reviewer_id=user_id)))
    if counts["n"] >= queue.reviewers_per_label:
        return False
    return not counts["mine"]


#: The note of the revision that moves an item on from verification names its annotators and their verdict
#: ("verification: kept by ann1, ann2"; `services.verification`).
VERIFICATION_OUTCOME_NOTE = "verification: "


def verification_public(item: str = "item") -> Q:
    """Items (through the relation `item`) whose verification verdicts annotators can read: past verification
    (the status says keep or delete), with a disagreement of the stage (the adjudication pages list each
    annotator's decision) or with the revision that ended the stage (the history and the revisions API name
    the annotators and their verdict; it stays there when the item is sent back to verification)."""
    prefix = f"{item}__" if item else ""
    ref = OuterRef(f"{item}_id" if item else "pk")
    return (~Q(**{f"{prefix}status__in": [ItemStatus.IMPORTED, ItemStatus.VERIFICATION]})
            | Exists(Adjudication.objects.filter(item=ref, stage=Stage.VERIFICATION))
            | Exists(ItemRevision.objects.filter(item=ref, stage=Stage.VERIFICATION,
                                                 note__startswith=VERIFICATION_OUTCOME_NOTE)))


def past_blind_review() -> Q:
    """Labels of a blind queue that can no longer be reviewed blind: screening labels of an item whose verification
    verdicts (the reviews of these very labels made on the verification screen) annotators can read."""
    return Q(queue__blind=True, task=LabelTask.SCREENING) & verification_public()


def lease_closed(lease: BeliefLease, *, user, now) -> tuple[str, str] | None:
    """Why `user` can no longer answer the label of their lease, as (code, message), or None when they can.

    Closed: answered; the label reviewed by them on a workflow screen; an expired or given-back lease whose label
    someone else holds, or that has its k reviews; a live lease whose label has its k reviews from others meanwhile
    (its judge is no longer hidden: an answer now would not be blind); a label about an item version no longer
    current (the page would show content the judge never saw); an error label (not counted, e.g. one marked by
    evaluation migration 0014); a label past blind review (`past_blind_review`)."""
    label = lease.label
    if lease.status == BeliefLeaseStatus.SUBMITTED:
        return "already_reviewed", gettext("You have already reviewed this label.")
    if BeliefReview.objects.filter(label_id=label.pk, reviewer=user).exists():
        return "already_reviewed", gettext("You have already reviewed this label, on the verification or clue-graph "
                                           "screen.")
    done = BeliefReview.objects.filter(label_id=label.pk).count() >= label.queue.reviewers_per_label
    if lease.status == BeliefLeaseStatus.RELEASED or lease.expires_at <= now:
        if BeliefLease.objects.filter(label_id=label.pk, status=BeliefLeaseStatus.LEASED, expires_at__gt=now).exclude(
                pk=lease.pk).exists():
            return "lease_expired", gettext("your lease expired and the label was handed to someone else")
        if done:
            return "lease_expired", gettext("Your lease expired and the label has its reviews.")
    elif done:
        return "label_reviewed", gettext("This label has received its reviews from others meanwhile: it needs no "
                                         "more.")
    if label.status == LabelStatus.ERROR:
        return "label_not_counted", gettext("This label is not counted (its judging failed, or it judged a version "
                                            "its answer was not given at): it is not reviewed.")
    if BeliefLabel.objects.filter(pk=label.pk).exclude(item_version=F("item__content_version")).exists():
        return "label_stale", gettext("The item was changed after the judge labelled it: this label is about a "
                                      "version that is no longer shown, and is not reviewed.")
    if BeliefLabel.objects.filter(pk=label.pk).filter(past_blind_review()).exists():
        return "verification_decided", gettext("The verification of this item is decided and its annotators' "
                                               "verdicts can be read: this label can no longer be reviewed blind.")
    return None


def shown_label(label: BeliefLabel, *, user) -> ShownLabel:
    """The one answer to "what of this label may this person see?", for every annotator page, partial and API."""
    payload = dict(label.payload or {})
    subject_keys = SUBJECT_FIELDS.get(label.task, ())
    subject = {key: payload[key] for key in subject_keys if key in payload}
    judge = None
    if not judge_hidden(label, user=user):
        judge = JudgeSide(label=label.label, belief=label.belief, belief_source=label.belief_source,
                          status=label.status, rationale=label.rationale,
                          payload={k: v for k, v in payload.items() if k not in subject_keys},
                          queue=label.queue.name, item_version=label.item_version)
    return ShownLabel(pk=label.pk, item_id=label.item_id, item_version=label.item_version, task=label.task,
                      target=label.target, aspect=label.aspect, queue=label.queue.name, blind=label.queue.blind,
                      choices=reviewer_choices(label), subject=subject, judge=judge)


def reviewer_choices(label: BeliefLabel) -> list[str]:
    """The labels a reviewer may give: the judge's choices, else the task's usual ones."""
    if label.task == LabelTask.CLUE_GRAPH:
        return DEFAULT_CHOICES[LabelTask.CLUE_GRAPH]
    if label.choices:
        return list(label.choices)
    if label.task == LabelTask.SCREENING:
        return SCREENING_CHOICES.get(label.aspect, ["yes", "no"])
    return DEFAULT_CHOICES.get(label.task, ["correct", "incorrect"])


def belief_labels(*, queue: BeliefQueue | None = None, task: str | None = None,
                  target__in=None, **filters) -> QuerySet[BeliefLabel]:
    """Labels, filtered like a queryset (the judge side reads its labels here)."""
    labels = BeliefLabel.objects.all()
    if queue is not None:
        labels = labels.filter(queue=queue)
    if task is not None:
        labels = labels.filter(task=task)
    if target__in is not None:
        labels = labels.filter(target__in=list(target__in))
    return labels.filter(**filters)


def final_label(label: BeliefLabel) -> str:
    return label.final_label or label.label


def provenance(label: BeliefLabel, threshold: float | None) -> str:
    """Where the label's final value comes from; `pending` while it still waits for review."""
    if label.final_source:
        return label.final_source
    if (label.status == LabelStatus.SCORED and threshold is not None and label.belief is not None
            and label.belief >= threshold):
        return LabelSource.AUTO_ACCEPTED
    return PENDING


def belief_reviews(*, queue: BeliefQueue | None = None, label_id: int | None = None) -> QuerySet[BeliefReview]:
    reviews = BeliefReview.objects.select_related("label", "reviewer").order_by("pk")
    if queue is not None:
        reviews = reviews.filter(label__queue=queue)
    if label_id is not None:
        reviews = reviews.filter(label_id=label_id)
    return reviews


def triage_bases(*, queues: list[BeliefQueue]) -> dict[int, dict]:
    """What triage order can order each queue's labels still awaiting review by (below the accept threshold, as
    the order stream sees them), in one query: ``pending``, ``no_belief`` (labels without a belief),
    ``distinct_beliefs``, ``nothing_to_order_by``, and ``note``, a sentence when triage has nothing to order by
    (every label the same belief, or none) or hands out labels without a belief first."""
    below = Q(belief__isnull=True) | Q(queue__accept_threshold__isnull=True) | Q(belief__lt=F("queue__accept_threshold"))
    rows = (BeliefLabel.objects.filter(below, queue__in=[q.pk for q in queues], final_source="")
            .exclude(status=LabelStatus.ERROR).order_by().values("queue_id")
            .annotate(total=Count("pk"), no_belief=Count("pk", filter=Q(belief__isnull=True)),
                      distinct=Count("belief", distinct=True), lowest=Min("belief")))
    found = {row["queue_id"]: row for row in rows}
    bases = {}
    for queue in queues:
        row = found.get(queue.pk, {"total": 0, "no_belief": 0, "distinct": 0, "lowest": None})
        total, no_belief, distinct = row["total"], row["no_belief"], row["distinct"]
        nothing = bool(total) and (not distinct or (distinct == 1 and not no_belief))
        note = ""
        if queue.order == ReviewOrder.TRIAGE and total:
            if not distinct:
                note = gettext("The judge gave none of the %(n)s label(s) awaiting review a belief: triage has "
                               "nothing to order by, so they come in random order.") % {"n": total}
            elif nothing:
                note = gettext("All %(n)s label(s) awaiting review have the judge's belief %(belief)s: triage has "
                               "nothing to order by, so they come in random order.") % {
                    "n": total, "belief": f"{row['lowest']:.2f}"}
            elif no_belief:
                note = gettext("%(none)s of the %(n)s label(s) awaiting review have no belief from the judge: triage "
                               "hands them out first, in random order, then the rest by lowest belief.") % {
                    "none": no_belief, "n": total}
        bases[queue.pk] = {"pending": total, "no_belief": no_belief, "distinct_beliefs": distinct, "note": note,
                           "nothing_to_order_by": nothing}
    return bases


def triage_basis(*, queue: BeliefQueue) -> dict:
    """:func:`triage_bases` of one queue."""
    return triage_bases(queues=[queue])[queue.pk]


def belief_queues(*, user) -> list[BeliefQueue]:
    """The queues with how many labels each has, how many wait for a final label, the reviews of the queue (made
    from its hand-outs: ``n_reviewed`` labels, ``n_mine`` of them by the user), the labels decided on a workflow
    screen instead (``n_elsewhere``: a verification decision or a clue-graph draft decision is no review of the
    queue), and what triage can order them by (``triage``, see :func:`triage_basis`)."""
    needing = BeliefLabel.objects.filter(queue=OuterRef("pk")).exclude(status=LabelStatus.ERROR).filter(final_source="")
    in_queue = Q(labels__reviews__via=ReviewVia.QUEUE)
    queues = (BeliefQueue.objects.annotate(
        n_labels=Count("labels", distinct=True),
        n_waiting=Count("labels", filter=Q(labels__final_source="", labels__status__in=[LabelStatus.SCORED,
                                                                                         LabelStatus.UNSCORED]),
                        distinct=True),
        n_reviewed=Count("labels", filter=in_queue, distinct=True),
        n_elsewhere=Count("labels", filter=Q(labels__reviews__via__in=[ReviewVia.VERIFICATION, ReviewVia.CLUE_GRAPH]),
                          distinct=True),
        n_mine=Count("labels__reviews", filter=in_queue & Q(labels__reviews__reviewer=user), distinct=True),
        has_pending=Exists(needing),
    ).order_by("name"))
    live = {lease.label.queue_id: lease for lease in BeliefLease.objects.filter(
        reviewer=user, status=BeliefLeaseStatus.LEASED).select_related("label")}
    result = list(queues)
    bases = triage_bases(queues=result)
    for queue in result:
        queue.my_lease = live.get(queue.pk)
        queue.triage = {**bases[queue.pk], "note": _annotators_note(queue, bases[queue.pk])}
    return result


def _annotators_note(queue: BeliefQueue, basis: dict) -> str:
    """The triage note as the annotators' page says it: nothing while the queue is blind (its labels awaiting review
    are in blind review, `judge_hidden`), and nothing of the judge's beliefs (the one belief every label has, which
    have none): this page records no sighting of them (`services.belief_sightings`), so it tells no label's belief,
    only that they come in random order. The trust page says it all."""
    if queue.blind or queue.order != ReviewOrder.TRIAGE or not basis["nothing_to_order_by"]:
        return ""
    return gettext("Triage has nothing to order the %(n)s label(s) awaiting review by, so they come in random "
                   "order.") % {"n": basis["pending"]}


def belief_lease_for(*, lease_id: int) -> BeliefLease | None:
    """A lease with its label, queue and item, and the label's reviews so far."""
    return (BeliefLease.objects.select_related("label__queue", "label__item", "reviewer")
            .filter(pk=lease_id).first())


def _current_first(item) -> tuple:
    """Labels judged on the item's content now first (a revert makes an older content version current again)."""
    return Case(When(item_version=item.content_version, then=Value(0)), default=Value(1)), "-created_at", "-pk"


def _latest_per_aspect(labels) -> list[BeliefLabel]:
    chosen: dict[str, BeliefLabel] = {}
    for label in labels:
        chosen.setdefault(label.aspect, label)
    return list(chosen.values())


def screening_suggestions(*, item) -> list[BeliefLabel]:
    """The judge's screening labels of the item at one content version (the item's now if judged, else the latest
    judged), the latest per aspect, keep/delete first, then 1.1-1.5."""
    labels = list(BeliefLabel.objects.filter(item=item, task=LabelTask.SCREENING).exclude(status=LabelStatus.ERROR)
                  .select_related("queue").order_by(*_current_first(item)))
    chosen = _latest_per_aspect([label for label in labels if label.item_version == labels[0].item_version])
    order = [KEEP_ASPECT, *SCREENING_CRITERIA]
    return sorted(chosen, key=lambda label: order.index(label.aspect) if label.aspect in order else len(order))


def screening_view(*, item, user) -> dict | None:
    """What the verification screen shows of the judge's suggestions to `user` (None when it has none
    this user may see: suggestions in blind review are left out, `shown_label`)."""
    shown = [shown_label(label, user=user) for label in screening_suggestions(item=item)]
    suggestions = [s for s in shown if s.judge is not None]
    if not suggestions:
        return None
    by_criterion = {SCREENING_CRITERIA[s.aspect]: s.judge for s in suggestions if s.aspect in SCREENING_CRITERIA}
    keep = next((s.judge for s in suggestions if s.aspect == KEEP_ASPECT), None)
    suggested = sorted(c for c, s in by_criterion.items() if s.status == LabelStatus.SCORED and s.label == "yes")
    decision = keep.label if keep is not None and keep.status == LabelStatus.SCORED else None
    keep_hidden = any(s.aspect == KEEP_ASPECT and s.judge is None for s in shown)
    if decision is None and not keep_hidden:
        decision = "delete" if suggested else "keep"
    # A keep suggestion with criteria (or delete without) cannot be submitted as it is; a keep/delete in blind
    # review is no suggestion at all (none is made up from the criteria the user may see).
    consistent = decision is not None and (decision == "keep") == (not suggested)
    rows = [{"criterion": value, "text": text, "suggestion": by_criterion.get(value)} for value, text in Criterion.choices]
    return {"keep": keep, "by_criterion": by_criterion, "rows": rows, "labels": suggestions, "decision": decision,
            "criteria": suggested, "consistent": consistent,
            "judged_version": suggestions[0].item_version}


def clue_graph_draft(*, item, user) -> ShownLabel | None:
    """The judge's latest clue-graph draft of the item that this user has not decided on yet and may see
    (a draft in blind review is no suggestion: `shown_label`)."""
    drafts = (BeliefLabel.objects.filter(item=item, task=LabelTask.CLUE_GRAPH, status=LabelStatus.SCORED)
              .exclude(Exists(BeliefReview.objects.filter(label=OuterRef("pk"), reviewer=user)))
              .select_related("queue").order_by(*_current_first(item)))
    for label in drafts[:20]:
        shown = shown_label(label, user=user)
        if shown.judge is not None:
            return shown
    return None

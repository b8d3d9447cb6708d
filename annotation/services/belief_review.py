"""Belief labels, review: hand-outs as leases, reviews, and the reviews made in the
verification and clue-graph screens.

A label is never leased to two reviewers at once (a partial unique index, and candidates
locked with SELECT ... FOR UPDATE SKIP LOCKED); each label gets `reviewers_per_label`
reviews from different people, one after the other. One reviewer's hand-outs in one queue
run one at a time (`_one_handout_at_a_time`), so simultaneous "next label" requests of a
reviewer (a double click, two tabs) all get the one lease the first of them took.
"""
from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext

from annotation import review_order
from annotation.models import (
    BeliefLabel,
    BeliefLease,
    BeliefLeaseStatus,
    BeliefQueue,
    BeliefReview,
    LabelSource,
    LabelStatus,
    LabelTask,
    ReviewVia,
    Stage,
)
from annotation.models.belief import DRAFT_ACCEPTED, DRAFT_DISCARDED, DRAFT_EDITED, KEEP_ASPECT
from annotation.screening import SCREENING_CRITERIA
from annotation.selectors.belief import (
    judge_hidden,
    lease_closed,
    past_blind_review,
    reviewer_choices,
    screening_suggestions,
)
from annotation.selectors.belief_precision import precision_reached
from annotation.services.belief import label_finalize
from annotation.services.belief_sightings import judge_seen
from annotation.services.editing import editable_item, item_edit
from foundation.errors import Conflict, Forbidden, Invalid, NotFound
from foundation.roles import is_researcher

MAX_TRIES = 50


class PrecisionReached(Conflict):
    """The queue has reached its precision target (`belief_precision`): it hands out no more labels until the
    target is lowered or cleared. Not a fault: the API answers 409 with the figures; pages say so kindly."""

    code = "precision_reached"


def _queue(queue_id: int) -> BeliefQueue:
    queue = BeliefQueue.objects.filter(pk=queue_id).first()
    if queue is None:
        raise NotFound(gettext("No review queue %(id)s.") % {"id": queue_id})
    return queue


def _next_handout_number(queue_id: int) -> int:
    """The queue's next hand-out number (a short transaction of its own: the row lock is brief)."""
    with transaction.atomic():
        BeliefQueue.objects.filter(pk=queue_id).update(handouts=F("handouts") + 1)
        return BeliefQueue.objects.values_list("handouts", flat=True).get(pk=queue_id)


def _candidates(queue: BeliefQueue, user, now):
    """Labels of the queue that this reviewer may take now (no GROUP BY, so rows can be locked)."""
    live = BeliefLease.objects.filter(label=OuterRef("pk"), status=BeliefLeaseStatus.LEASED, expires_at__gt=now)
    mine = BeliefLease.objects.filter(label=OuterRef("pk"), reviewer=user).filter(
        Q(status=BeliefLeaseStatus.SUBMITTED) | Q(status=BeliefLeaseStatus.LEASED, expires_at__gt=now))
    # A label this reviewer skipped (gave back) before its time ran out is not handed back to them while that time
    # lasts: skipping moves on (the label stays where it is for everyone else). An expired lease is no skip.
    skipped = BeliefLease.objects.filter(label=OuterRef("pk"), reviewer=user, status=BeliefLeaseStatus.RELEASED,
                                         expires_at__gt=now)
    reviews = BeliefReview.objects.filter(label=OuterRef("pk"))
    done = reviews.order_by().values("label").annotate(n=Count("pk")).values("n")
    # Only labels about the item's current content: the page shows the item as it is now.
    candidates = (BeliefLabel.objects.filter(queue=queue, item_version=F("item__content_version"))
                  .exclude(status=LabelStatus.ERROR)
                  .exclude(Exists(live)).exclude(Exists(mine)).exclude(Exists(reviews.filter(reviewer=user)))
                  .exclude(Exists(skipped))
                  .annotate(done=Coalesce(Subquery(done), 0)).filter(done__lt=queue.reviewers_per_label))
    return candidates.exclude(past_blind_review()) if queue.blind else candidates


def _ordered(candidates, stream: str, threshold: float | None):
    if stream == review_order.ORDER:
        if threshold is not None:
            candidates = candidates.filter(Q(belief__isnull=True) | Q(belief__lt=threshold))
        # Ties of belief by the tie key, drawn apart from the audit key (review_order); a label recorded before tie
        # keys existed ties by its audit key, as it did then.
        return candidates.order_by(F("belief").asc(nulls_first=True), Coalesce("tie_key", "audit_key"), "pk")
    return candidates.order_by("audit_key", "pk")


def _lock_next(queue: BeliefQueue, user, now, stream: str, skipped: list[int]) -> tuple[BeliefLabel | None, str]:
    """Lock the stream's first label that nobody else has locked; the order stream falls back to
    the random one when nothing is left below the threshold."""
    candidates = _candidates(queue, user, now).exclude(pk__in=skipped)
    for current in ([stream, review_order.RANDOM] if stream == review_order.ORDER else [stream]):
        label = (_ordered(candidates, current, queue.accept_threshold)
                 .select_for_update(skip_locked=True, of=("self",)).first())
        if label is not None:
            return label, current
    return None, stream


def _may_still_take(label: BeliefLabel, queue: BeliefQueue, user, now) -> bool:
    """Re-checked after the lock: leases and reviews committed since the candidate query began."""
    if BeliefLease.objects.filter(label=label, status=BeliefLeaseStatus.LEASED, expires_at__gt=now).exists():
        return False
    if BeliefReview.objects.filter(label=label, reviewer=user).exists():
        return False
    if queue.blind and BeliefLabel.objects.filter(pk=label.pk).filter(past_blind_review()).exists():
        return False
    return BeliefReview.objects.filter(label=label).count() < queue.reviewers_per_label


#: The first key of the advisory locks of belief hand-outs (pg_advisory_lock(int, int)): "BL".
HANDOUT_LOCK_CLASS = 0x424C
_LOCAL_LOCKS: dict[tuple[int, int], threading.Lock] = {}
_LOCAL_LOCKS_GUARD = threading.Lock()


@contextmanager
def _one_handout_at_a_time(queue_id: int, user_id: int) -> Iterator[None]:
    """Run one reviewer's hand-out in one queue alone: the check for the lease they hold, the hand-out
    number and the new lease are several short transactions (the queue's row is locked only to count
    the hand-out), so without this two simultaneous requests both find no lease and both take one.

    On PostgreSQL a session advisory lock on (queue, reviewer), held across those transactions and
    given back at the end (or with the connection, should it die); elsewhere (the embedded SQLite
    demo, one process) a lock of the process.
    """
    if connection.vendor == "postgresql":
        key = zlib.crc32(f"belief-handout:{queue_id}:{user_id}".encode()) - 2**31  # a signed 32-bit key
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [HANDOUT_LOCK_CLASS, key])
        try:
            yield
        finally:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [HANDOUT_LOCK_CLASS, key])
            except DatabaseError:
                if not connection.in_atomic_block:
                    connection.close()  # a session that cannot unlock ends here, and its lock with it
        return
    with _LOCAL_LOCKS_GUARD:
        lock = _LOCAL_LOCKS.setdefault((queue_id, user_id), threading.Lock())
    with lock:
        yield


def belief_lease_next(*, queue_id: int, user, now=None) -> BeliefLease | None:
    """Hand the reviewer the next label of a queue as a lease, or None when nothing is left; `PrecisionReached`
    when the queue has reached its precision target (a lease the reviewer holds is still given back).

    A reviewer who holds a live lease in the queue gets it back (renewed), also when they ask
    several times at once (the hand-outs of one reviewer in one queue run one at a time).
    Otherwise the hand-out number decides the stream (`review_order.handout_stream`) and the
    stream's first label that no one else has locked is leased; the label remembers the stream
    that first drew it (the sampling design of the trust figures).
    """
    queue = _queue(queue_id)
    with _one_handout_at_a_time(queue.pk, user.pk):
        return _lease_next(queue, user, now or timezone.now())


def _lease_next(queue: BeliefQueue, user, now) -> BeliefLease | None:
    with transaction.atomic():
        mine = (BeliefLease.objects.select_for_update(of=("self",))
                .filter(label__queue=queue, reviewer=user, status=BeliefLeaseStatus.LEASED, expires_at__gt=now)
                .order_by("leased_at").first())
        if mine is not None and lease_closed(mine, user=user, now=now) is not None:
            # Answered elsewhere meanwhile (the verification screen), or no longer answerable blind: given back,
            # and the reviewer gets another label instead of this one again and again.
            BeliefLease.objects.filter(pk=mine.pk).update(status=BeliefLeaseStatus.RELEASED)
            mine = None
        if mine is not None:
            mine.expires_at = now + timedelta(minutes=queue.lease_minutes)
            mine.save(update_fields=["expires_at"])
            return mine
    closed = precision_reached(queue=queue)
    if closed is not None:
        sequence = closed["sequence"]
        details = {"target_half_width": closed["target"], "half_width": sequence["half_width"],
                   "n_uniform": closed["n"]}
        if is_researcher(user):  # the share itself is the researchers' (the annotators' page does not show it)
            details |= {"interval": [sequence["low"], sequence["high"]], "estimate": closed["value"]}
        raise PrecisionReached(
            gettext("%(queue)s has reached its precision target: its %(what)s is known to ±%(half).3f (target "
                    "±%(target)s), so it hands out no more labels.") % {
                "queue": queue.name, "what": closed["what"], "half": sequence["half_width"],
                "target": closed["target"]}, details=details)
    number = _next_handout_number(queue.pk)
    stream = review_order.handout_stream(queue.order, number, queue.random_share)
    skipped: list[int] = []
    with transaction.atomic():
        for _ in range(MAX_TRIES):
            label, used = _lock_next(queue, user, now, stream, skipped)
            if label is None:
                return None
            if not _may_still_take(label, queue, user, now):
                skipped.append(label.pk)
                continue
            # An expired lease still marked leased would block the one-holder index: give it back first.
            BeliefLease.objects.filter(label=label, status=BeliefLeaseStatus.LEASED, expires_at__lte=now).update(
                status=BeliefLeaseStatus.RELEASED)
            try:
                with transaction.atomic():
                    lease = BeliefLease.objects.create(
                        label=label, reviewer=user, stream=used, handout_number=number, leased_at=now,
                        expires_at=now + timedelta(minutes=queue.lease_minutes))
            except IntegrityError:
                skipped.append(label.pk)
                continue
            if not label.first_stream:
                BeliefLabel.objects.filter(pk=label.pk, first_stream="").update(first_stream=used)
            return lease
    return None


@transaction.atomic
def belief_lease_release(*, lease_id: int, user) -> None:
    """Give a label back to the queue (the reviewer skips it)."""
    BeliefLease.objects.filter(pk=lease_id, reviewer=user, status=BeliefLeaseStatus.LEASED).update(
        status=BeliefLeaseStatus.RELEASED)


def _check_choice(label: BeliefLabel, human_label: str) -> None:
    allowed = reviewer_choices(label)
    if human_label not in allowed:
        raise Invalid(gettext("%(label)r is not one of %(allowed)s.") % {"label": human_label, "allowed": ", ".join(map(str, allowed))},
                      field="human_label")


def _agrees(label: BeliefLabel, human_label: str) -> bool | None:
    return human_label == label.label if label.status == LabelStatus.SCORED else None


def belief_review_submit(*, lease_id: int, user, human_label: str, comment: str = "", now=None) -> BeliefReview:
    """Record the reviewer's label for the label of their lease; set the final label when it has its k reviews.

    A lease that expired is still accepted while nobody else holds the label. Refused (409, the lease given back)
    once the holder can no longer answer it (`lease_closed`): reviewed by them on a workflow screen meanwhile, the
    label's k reviews given by others meanwhile (its judge is shown then: an answer would not be blind), or the
    label past blind review (its item's verification verdicts can be read). The review is blind when the judge
    was hidden from the reviewer as they answered and never shown to them before (`_blind`).
    """
    now = now or timezone.now()
    with transaction.atomic():
        review, refusal = _submit(lease_id, user, human_label, comment, now)
    if refusal is not None:
        raise refusal  # after the transaction: the lease stays given back
    return review


def _submit(lease_id: int, user, human_label: str, comment: str, now) -> tuple[BeliefReview | None, Conflict | None]:
    found = BeliefLease.objects.filter(pk=lease_id).values_list("reviewer_id", "label_id").first()
    if found is None:
        raise NotFound(gettext("No lease %(id)s.") % {"id": lease_id})
    if found[0] != user.pk:
        raise Forbidden(gettext("this label was handed to someone else"))
    # The label first, then the lease: the order the workflow screens lock them in (`_review_in_screen`).
    label = BeliefLabel.objects.select_for_update().select_related("queue", "item").get(pk=found[1])
    lease = BeliefLease.objects.select_for_update(of=("self",)).get(pk=lease_id)
    lease.label = label
    closed = lease_closed(lease, user=user, now=now)
    if closed is not None:
        if lease.status == BeliefLeaseStatus.LEASED:
            BeliefLease.objects.filter(pk=lease.pk).update(status=BeliefLeaseStatus.RELEASED)
        code, message = closed
        return None, Conflict(message, code=code)
    _check_choice(label, human_label)
    review = BeliefReview.objects.create(
        label=label, lease=lease, reviewer=user, human_label=human_label, agrees=_agrees(label, human_label),
        blind=_blind(label, user), via=ReviewVia.QUEUE, comment=comment,
        seconds=max((now - lease.leased_at).total_seconds(), 0.0))
    lease.status, lease.submitted_at = BeliefLeaseStatus.SUBMITTED, now
    lease.save(update_fields=["status", "submitted_at"])
    label_finalize(label, reviewers_required=label.queue.reviewers_per_label)
    return review, None


def _blind(label: BeliefLabel, user) -> bool:
    """A review is blind when the judge is hidden from its reviewer as they answer and was never shown to them
    (`belief_sightings`: a queue turned blind mid-way hides again what they saw)."""
    return judge_hidden(label, user=user) and not judge_seen(label, user=user)


def _review_in_screen(label: BeliefLabel, user, human_label: str, via: str, comment: str = "") -> None:
    """A review given in a workflow screen (the person's own decision), once per person and label; blind
    when the screen did not show the label (it was in blind review, `judge_hidden`) and no page had (`_blind`)."""
    label = BeliefLabel.objects.select_for_update().select_related("queue").get(pk=label.pk)
    if BeliefReview.objects.filter(label=label, reviewer=user).exists():
        return
    # The person's own lease on the label in the review queue is answered by this review: given back, so that
    # the queue neither hands it to them again nor keeps it from the next reviewer.
    BeliefLease.objects.filter(label=label, reviewer=user, status=BeliefLeaseStatus.LEASED).update(
        status=BeliefLeaseStatus.RELEASED)
    blind = _blind(label, user)
    BeliefReview.objects.create(label=label, reviewer=user, human_label=human_label,
                                agrees=_agrees(label, human_label), blind=blind, via=via, comment=comment)
    label_finalize(label, reviewers_required=label.queue.reviewers_per_label)


def belief_screening_reviewed(*, item, user, decision: str, criteria: Iterable[str]) -> str:
    """The judge's screening suggestions for the item, reviewed by a verification decision.

    Called inside `verification_submit`. Returns where the decision came from: judge
    accepted (every scored suggestion kept), judge overridden, or human only (no suggestion).
    """
    criteria = set(criteria)
    agreed: list[bool] = []
    for label in screening_suggestions(item=item):
        if label.aspect == KEEP_ASPECT:
            human = decision
        elif label.aspect in SCREENING_CRITERIA:
            human = "yes" if SCREENING_CRITERIA[label.aspect] in criteria else "no"
        else:
            continue
        if label.status == LabelStatus.SCORED:
            agreed.append(human == label.label)
        _review_in_screen(label, user, human, ReviewVia.VERIFICATION)
    if not agreed:
        return LabelSource.HUMAN_ONLY
    return LabelSource.JUDGE_ACCEPTED if all(agreed) else LabelSource.JUDGE_OVERRIDDEN


DRAFT_ACTIONS = {"accept": DRAFT_ACCEPTED, "edit": DRAFT_EDITED, "discard": DRAFT_DISCARDED}


@transaction.atomic
def belief_draft_resolve(*, label_id: int, user, action: str, base_version: int):
    """Accept, edit or discard the judge's clue-graph draft of an item in the clue-graph stage.

    Accept and edit write the draft as the item's clue graph (a new revision; edit then goes
    on in the editor); discard leaves the item as it is. Each is recorded as the person's
    review of the draft. Returns the item.

    All three are work on the item in its clue-graph stage, so each asks what an edit there asks
    (`editable_item`): the item in the clue-graph stage, at the version the screen showed it at, and one of the
    stage's slots held by the person (or free: it takes it); refused otherwise (WorkflowError, StaleVersion,
    NoSlot) with nothing written, no review either.
    """
    if action not in DRAFT_ACTIONS:
        raise Invalid(gettext("The action is one of %(actions)s.") % {"actions": ", ".join(sorted(DRAFT_ACTIONS))},
                      field="action")
    label = (BeliefLabel.objects.select_for_update().select_related("queue", "item")
             .filter(pk=label_id, task=LabelTask.CLUE_GRAPH).first())
    if label is None:
        raise NotFound(gettext("No clue-graph draft %(id)s.") % {"id": label_id})
    if BeliefReview.objects.filter(label=label, reviewer=user).exists():
        raise Conflict(gettext("You have already decided on this draft."), code="already_reviewed")
    if judge_hidden(label, user=user):
        # The screen does not offer a draft in blind review; taking it by its id would show it.
        raise NotFound(gettext("No clue-graph draft %(id)s.") % {"id": label_id})
    item = editable_item(item_id=label.item_id, base_version=base_version, stage=Stage.CLUE_GRAPH, user=user)
    if action != "discard":
        draft = label.payload or {}
        item = item_edit(item_id=item.pk, base_version=base_version, user=user, stage=Stage.CLUE_GRAPH,
                         changes={"evidence": str(draft.get("evidence", "")),
                                  "reasoning": str(draft.get("multi_hop_reasoning", ""))},
                         note=f"clue-graph draft of the judge ({label.producer or label.queue.name}) {action}ed")
    _review_in_screen(label, user, DRAFT_ACTIONS[action], ReviewVia.CLUE_GRAPH)
    return item

"""Question verification (Table 7): keep/delete decisions by k annotators, and adjudication of disagreements."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from annotation.errors import StaleVersion, WorkflowError
from annotation.models import (
    CRITERIA,
    Adjudication,
    AdjudicationStatus,
    AnnotatorLeaseStatus,
    Decision,
    ItemStatus,
    Stage,
    VerificationDecision,
)
from annotation.services.belief_review import belief_screening_reviewed
from annotation.services.leases import locked_item, mark_submitted, move_item, stage_config, take_slot
from foundation.errors import Invalid, NotFound
from foundation.roles import is_researcher
from foundation.words import gettext


@transaction.atomic
def verification_submit(
    *, item_id: int, user, decision: str, criteria: Iterable[str], comment: str = "", item_version: int, now=None,
) -> VerificationDecision:
    """Record one annotator's keep/delete decision with the Table-7 criteria.

    When the stage has its k decisions: all keep -> rewrite, all delete -> rejected
    (the criteria in the revision note), otherwise an adjudication is opened.
    Refused with StaleVersion when the item changed since the annotator saw `item_version`.
    """
    now = now or timezone.now()
    criteria = set(criteria)
    if criteria - set(CRITERIA):
        raise Invalid(gettext("Unknown criteria: %(criteria)s.", criteria=", ".join(sorted(criteria - set(CRITERIA)))),
                      field="criteria")
    if decision == Decision.DELETE and not criteria:
        raise Invalid(gettext("A delete decision needs at least one criterion (Table 7, 1.1-1.5)."), field="criteria")
    if decision == Decision.KEEP and criteria:
        raise Invalid(gettext("An item that meets a deletion criterion cannot be kept: untick it or delete."),
                      field="criteria")
    if decision not in Decision.values:
        raise Invalid(gettext("Unknown decision: %(decision)s.", decision=decision), field="decision")
    config = stage_config(Stage.VERIFICATION)
    item = locked_item(item_id)
    if item.version != item_version:
        raise StaleVersion(item, item_version)
    lease = take_slot(item=item, stage=Stage.VERIFICATION, user=user, now=now, config=config)
    if lease.status == AnnotatorLeaseStatus.SUBMITTED:
        raise WorkflowError(gettext("You have already verified this item."))
    # The judge's screening suggestions (if any) are reviewed by this decision: where it came from.
    source = belief_screening_reviewed(item=item, user=user, decision=decision, criteria=criteria)
    verdict = VerificationDecision.objects.create(
        lease=lease, item=item, annotator=user, decision=decision, comment=comment, source=source,
        item_version=item_version, **{name: name in criteria for name in CRITERIA})
    mark_submitted(lease, now)

    decisions = list(VerificationDecision.objects.filter(
        item=item, lease__stage=Stage.VERIFICATION, lease__status=AnnotatorLeaseStatus.SUBMITTED))
    if len(decisions) >= config.annotators_required:
        verdicts = {d.decision for d in decisions}
        who = ", ".join(sorted(d.annotator.get_username() for d in decisions))
        if verdicts == {Decision.KEEP}:
            move_item(item=item, stage=Stage.VERIFICATION, status=Stage.VERIFICATION.next_status, user=user,
                      note=f"verification: kept by {who}")
        elif verdicts == {Decision.DELETE}:
            reasons = sorted({c for d in decisions for c in d.criteria})
            move_item(item=item, stage=Stage.VERIFICATION, status=ItemStatus.REJECTED, user=user,
                      note=f"verification: deleted by {who} ({', '.join(reasons)})")
        else:
            Adjudication.objects.get_or_create(
                item=item, stage=Stage.VERIFICATION, status=AdjudicationStatus.OPEN,
                defaults={"reason": "; ".join(f"{d.annotator.get_username()}: {d.decision}" for d in decisions)})
    item.refresh_from_db(fields=["status", "version"])  # the verdict's item as it is now (it may have moved on)
    return verdict


@transaction.atomic
def adjudication_resolve(*, adjudication_id: int, user, decision: str, comment: str = "") -> Adjudication:
    """Settle a disagreement: keep (item goes on to rewrite) or delete (rejected)."""
    adjudication = Adjudication.objects.select_for_update().filter(pk=adjudication_id).first()
    if adjudication is None:
        raise NotFound(gettext("No adjudication %(id)s.", id=adjudication_id), code="adjudication_not_found")
    if adjudication.status != AdjudicationStatus.OPEN:
        raise WorkflowError(gettext("This disagreement has already been resolved."))
    if decision not in Decision.values:
        raise Invalid(gettext("Unknown decision: %(decision)s.", decision=decision), field="decision")
    took_part = VerificationDecision.objects.filter(item=adjudication.item_id, annotator=user,
                                                    lease__status=AnnotatorLeaseStatus.SUBMITTED).exists()
    if took_part and not is_researcher(user):
        raise WorkflowError(gettext("An adjudicator must not be one of the annotators who disagreed."))
    item = locked_item(adjudication.item_id)
    status = Stage(adjudication.stage).next_status if decision == Decision.KEEP else ItemStatus.REJECTED
    move_item(item=item, stage=adjudication.stage, status=status, user=user,
          note=f"adjudication: {decision}" + (f" ({comment})" if comment else ""))
    adjudication.status, adjudication.decision, adjudication.comment = AdjudicationStatus.RESOLVED, decision, comment
    adjudication.resolved_by, adjudication.resolved_at = user, timezone.now()
    adjudication.save()
    return adjudication

"""Review: a second annotator approves (publishes) an item or sends it back to an earlier stage."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.errors import StaleVersion
from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, ItemStatus, ReviewAction, ReviewDecision, Stage
from annotation.services.items import item_update
from annotation.services.leases import locked_item, mark_submitted, move_item, stage_config, take_slot
from foundation.errors import Invalid
from foundation.words import gettext


@transaction.atomic
def review_submit(*, item_id: int, user, action: str, item_version: int, send_back_to: str = "", comment: str = "",
                  now=None) -> ReviewDecision:
    """Approve (publish) or send the item back to an earlier stage with a comment."""
    now = now or timezone.now()
    if action == ReviewAction.SEND_BACK:
        if send_back_to not in Stage.send_back_targets():
            raise Invalid(gettext("Choose the stage to send the item back to."), field="send_back_to")
        if not comment.strip():
            raise Invalid(gettext("Say what needs fixing when sending an item back."), field="comment")
    elif action == ReviewAction.APPROVE:
        send_back_to = ""
    else:
        raise Invalid(gettext("Unknown review action: %(action)s.", action=action), field="action")
    item = locked_item(item_id)
    if item.version != item_version:
        raise StaleVersion(item, item_version)
    lease = take_slot(item=item, stage=Stage.REVIEW, user=user, now=now, config=stage_config(Stage.REVIEW))
    review = ReviewDecision.objects.create(lease=lease, item=item, reviewer=user, action=action,
                                           send_back_to=send_back_to, comment=comment, item_version=item_version)
    mark_submitted(lease, now)
    if action == ReviewAction.APPROVE:
        move_item(item=item, stage=Stage.REVIEW, status=ItemStatus.PUBLISHED, user=user, note="review: approved")
    else:
        # The stages from the target on are done afresh: their earlier slots no longer count.
        AnnotatorLease.objects.filter(item=item, stage__in=Stage(send_back_to).and_later(),
                                      status__in=AnnotatorLeaseStatus.live()).update(
            status=AnnotatorLeaseStatus.SUPERSEDED)
        item_update(item_id=item.pk, base_version=item.version, changes={}, user=user, stage=Stage.REVIEW,
                    status=send_back_to, note=f"review: sent back to {send_back_to}: {comment}")
    return review

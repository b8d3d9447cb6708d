"""Bonuses withdrawn before they are sent: a participant's payment leaves every batch that Prolific holds nothing of
yet (proposed, or approved and never tried), so that the batch pays only participants whose bonus is final and due.

Models only (the attempt services call it inside a screen-out, whose locks it keeps: attempt -> study -> batch).
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Sum

from studies.prolific.models import BonusBatch, BonusBatchState, BonusPayment

#: A batch nothing of which has reached Prolific: its payments may still change.
UNSENT = {"state__in": [BonusBatchState.PROPOSED, BonusBatchState.APPROVED], "send_attempts": 0,
          "prolific_bulk_id": ""}


def bonus_payments_withdraw(*, attempt_ids: Iterable[int]) -> int:
    """Take these attempts' payments out of the batches not sent yet (inside the caller's transaction); a batch
    left without payments goes too. Returns how many payments were withdrawn; those in a batch already sent (or
    being sent) stay, as they are at Prolific."""
    attempt_ids = list(attempt_ids)
    if not attempt_ids:
        return 0
    batches = list(BonusBatch.objects.select_for_update().filter(
        pk__in=BonusPayment.objects.filter(attempt_id__in=attempt_ids).values("batch_id"), **UNSENT).order_by("pk"))
    withdrawn = 0
    for batch in batches:
        withdrawn += BonusPayment.objects.filter(batch=batch, attempt_id__in=attempt_ids).delete()[0]
        total = batch.payments.aggregate(total=Sum("amount"))["total"]
        if total is None:
            batch.delete()
        else:
            BonusBatch.objects.filter(pk=batch.pk).update(total=total)
    return withdrawn

"""Bonus batches: proposed from the study's bonus rule, approved by a researcher, paid once through Prolific.

Prolific pays bonuses in two calls: set up a bulk payment (pays nothing), then pay it, and the pay call is not
idempotent (each call pays again). A batch therefore records each step before the next: "sending" is committed
before any call, and every send — the first included — first asks Prolific for the payments set up with the
batch's own key (`BonusBatch.key`). A payment found paid makes the batch "sent" without paying; one found set up is
paid; only when none exists is one set up. A crash or a lost answer anywhere leaves the batch "sending", and the
next send reconciles it the same way, so that a batch is never paid twice. One sender at a time holds a batch
(`send_claimed_until`, longer than any call may take; a crashed sender's hold runs out).
"""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from studies.models import AttemptStatus, Study
from studies.prolific.client import BonusRow
from studies.prolific.errors import BonusBatchRefused, BonusOutcomeUnknown, ProlificRefused, ProlificUnavailable
from studies.prolific.models import BonusBatch, BonusBatchState, BonusPayment
from studies.prolific.services.connections import connection_of, prolific_client
from studies.prolific.withdrawals import bonus_payments_withdraw
from studies.selectors.results import study_results

#: The attempts whose bonus is due: ended (finished, or ended by time or by the participant with the answers they
#: gave), so that it can no longer change. A running attempt waits (its bonus still grows), a screened-out one gets
#: none (its answers count nowhere), one that never started has no answers.
BONUS_DUE = (AttemptStatus.FINISHED, AttemptStatus.EXPIRED, AttemptStatus.RETURNED)


@transaction.atomic
def bonus_batch_propose(*, study_id: int, user=None) -> BonusBatch | None:
    """A batch of every participant's bonus by the study's rule (`Study.bonus_for`, as in the results and the
    export) not yet in a batch, for attempts that have ended (`BONUS_DUE`); None when there is nothing to pay.
    Needs a Prolific connection.

    An attempt is in one batch only (`BonusPayment.attempt`), so it is proposed once its bonus is final. A batch not
    sent yet that holds an attempt whose bonus is not due (proposed while running, before this rule, or screened out
    since) loses it first: it is proposed again, in full, once it has ended."""
    connection_of(study_id)
    study = Study.objects.select_for_update().get(pk=study_id)  # two proposals at once: one after the other
    bonus_payments_withdraw(attempt_ids=BonusPayment.objects.filter(batch__study=study).exclude(
        attempt__status__in=BONUS_DUE).values_list("attempt_id", flat=True))
    in_batches = set(BonusPayment.objects.filter(batch__study=study).values_list("attempt_id", flat=True))
    rows = [p for p in study_results(study).participants
            if p.attempt.status in BONUS_DUE and p.bonus > 0 and p.attempt.external_participant_id
            and p.attempt.pk not in in_batches]
    if not rows:
        return None
    batch = BonusBatch.objects.create(study=study, currency=study.bonus_currency,
                                      total=sum((p.bonus for p in rows), Decimal(0)),
                                      proposed_by=user if getattr(user, "pk", None) else None)
    BonusPayment.objects.bulk_create(
        BonusPayment(batch=batch, attempt=p.attempt, participant_id=p.attempt.external_participant_id,
                     correct=p.correct, amount=p.bonus) for p in rows)
    return batch


@transaction.atomic
def bonus_batch_approve(*, batch_id: int, user=None) -> BonusBatch:
    batch = BonusBatch.objects.select_for_update().get(pk=batch_id)
    if batch.state != BonusBatchState.PROPOSED:
        raise BonusBatchRefused(gettext("Only a proposed batch can be approved; this one is %(state)s.")
                                % {"state": batch.state})
    batch = _without_bonuses_not_due(batch)
    batch.state, batch.approved_at = BonusBatchState.APPROVED, timezone.now()
    batch.approved_by = user if getattr(user, "pk", None) else None
    batch.save(update_fields=["state", "approved_at", "approved_by"])
    return batch


def bonus_batch_send(*, batch_id: int) -> BonusBatch:
    """Pay an approved batch (or finish one left "sending" or "failed"), reconciling with Prolific first."""
    batch = _claim(batch_id)
    try:
        connection = connection_of(batch.study_id)
        rows = [BonusRow(p.participant_id, p.amount) for p in batch.payments.all()]
        with prolific_client(connection) as client:
            try:
                known = client.bonus_payments_by_reference(connection.prolific_study_id, batch.key)
            except ProlificRefused as error:
                if batch.prolific_bulk_id or batch.send_attempts > 1:  # sent before: cannot know, so never resend
                    raise BonusOutcomeUnknown(
                        gettext("Prolific cannot list this batch's payments (%(error)s); check the study's bonuses "
                                "on Prolific before anything is sent again.") % {"error": error.message})
                known = []
            if any(str(p.get("status", "")).upper() == "PAID" for p in known):
                paid = next(p for p in known if str(p.get("status", "")).upper() == "PAID")
                return _record(batch.pk, state=BonusBatchState.SENT, bulk_id=str(paid.get("id", "")), reconciled=True)
            if known:
                bulk_id = str(known[0].get("id", ""))
            else:
                bulk_id = str(client.bonus_setup(connection.prolific_study_id, rows, reference=batch.key)["id"])
            _record(batch.pk, state=BonusBatchState.SENDING, bulk_id=bulk_id)
            try:
                client.bonus_pay(bulk_id)
            except ProlificUnavailable as error:
                if getattr(error, "maybe_sent", True):
                    raise BonusOutcomeUnknown(
                        gettext("The pay call's answer was lost (%(error)s); the batch stays 'sending' and is "
                                "reconciled with Prolific before anything is sent again.") % {"error": error.message})
                raise
        return _record(batch.pk, state=BonusBatchState.SENT, bulk_id=bulk_id)
    except ProlificRefused as error:  # refused before paying (set-up or pay refused): nothing was paid
        _record(batch.pk, state=BonusBatchState.FAILED, error=error.message)
        raise
    except Exception as error:  # unknown outcome: stays "sending"
        _record(batch.pk, error=str(error))
        raise
    finally:
        BonusBatch.objects.filter(pk=batch.pk).update(send_claimed_until=None)


SENDABLE = (BonusBatchState.APPROVED, BonusBatchState.SENDING, BonusBatchState.FAILED)


def bonus_batch_check_sendable(*, batch_id: int) -> BonusBatch:
    """The batch, if it may be sent now (approved, or left sending or failed); refused with the reason otherwise."""
    batch = BonusBatch.objects.get(pk=batch_id)
    if batch.state not in SENDABLE:
        raise BonusBatchRefused(gettext("Only an approved batch can be sent; this one is %(state)s.")
                                % {"state": batch.state})
    return batch


def bonus_batches_to_resume() -> list[int]:
    """Batches left "sending" that no sender holds (its sender crashed or gave up on a lost answer): the periodic
    resume sends them again, which reconciles with Prolific first and so never pays twice."""
    now = timezone.now()
    return list(BonusBatch.objects.filter(state=BonusBatchState.SENDING).filter(
        Q(send_claimed_until__isnull=True) | Q(send_claimed_until__lte=now)).values_list("pk", flat=True))


@transaction.atomic
def _claim(batch_id: int) -> BonusBatch:
    now = timezone.now()
    batch = BonusBatch.objects.select_for_update().get(pk=batch_id)
    if batch.state not in SENDABLE:
        raise BonusBatchRefused(gettext("Only an approved batch can be sent; this one is %(state)s.")
                                % {"state": batch.state})
    if batch.send_claimed_until and batch.send_claimed_until > now:
        raise BonusBatchRefused(gettext("Another sender is sending this batch right now."))
    batch = _without_bonuses_not_due(batch)
    claimed = BonusBatch.objects.filter(pk=batch_id).filter(
        Q(send_claimed_until__isnull=True) | Q(send_claimed_until__lte=now)).update(
        state=BonusBatchState.SENDING, send_attempts=batch.send_attempts + 1, last_error="",
        send_claimed_until=now + timedelta(seconds=settings.PROLIFIC_BONUS_CLAIM_S))
    if not claimed:
        raise BonusBatchRefused(gettext("Another sender is sending this batch right now."))
    batch.refresh_from_db()
    return batch


def _without_bonuses_not_due(batch: BonusBatch) -> BonusBatch:
    """The batch (locked by the caller) without the payments of attempts whose bonus is not due (still running, or
    screened out), when nothing of it has reached Prolific; refused when none is left (the refusal rolls the
    caller's transaction back: the batch stays as it was, and the next proposal withdraws them)."""
    if batch.send_attempts or batch.prolific_bulk_id:
        return batch
    if bonus_payments_withdraw(attempt_ids=batch.payments.exclude(attempt__status__in=BONUS_DUE)
                               .values_list("attempt_id", flat=True)):
        if not BonusBatch.objects.filter(pk=batch.pk).exists():
            raise BonusBatchRefused(gettext("No participant of this batch is due a bonus now (still running or "
                                            "screened out): propose the bonuses again."))
        batch.refresh_from_db()
    return batch


@transaction.atomic
def _record(batch_id: int, *, state: str | None = None, bulk_id: str = "", reconciled: bool = False,
            error: str = "") -> BonusBatch:
    batch = BonusBatch.objects.select_for_update().get(pk=batch_id)
    if state:
        batch.state = state
    if bulk_id:
        batch.prolific_bulk_id = bulk_id
    if state == BonusBatchState.SENT:
        batch.sent_at, batch.reconciled = timezone.now(), reconciled
    batch.last_error = error[:300]
    batch.save(update_fields=["state", "prolific_bulk_id", "sent_at", "reconciled", "last_error"])
    return batch

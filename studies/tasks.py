"""Celery tasks for studies: the periodic sweep that closes attempts whose deadline has passed, and Prolific bonus
batches sent by the worker (retried while the outcome is unknown, resumed after a crash, never paid twice)."""
import logging

from celery import shared_task
from django.conf import settings

from studies.prolific.errors import (
    BonusBatchRefused,
    BonusOutcomeUnknown,
    ProlificNotConnected,
    ProlificRefused,
    ProlificUnavailable,
)
from studies.prolific.models import BonusBatch
from studies.prolific.services import (
    bonus_batch_send,
    bonus_batches_to_resume,
    screen_out_report,
    screen_outs_unreported,
)
from studies.services import attempts_sweep

log = logging.getLogger(__name__)


@shared_task(name="studies.tasks.sweep_expired_attempts")
def sweep_expired_attempts() -> list[int]:
    """Expire every running attempt past its deadline (plus grace), even when no browser is left. Idempotent."""
    return attempts_sweep()



@shared_task(name="studies.tasks.send_bonus_batch", bind=True, acks_late=True, max_retries=None)
def send_bonus_batch(self, batch_id: int) -> str:
    """Send one approved bonus batch through Prolific (or finish one left "sending"). A lost answer or an
    unavailable API is retried with backoff (each retry reconciles with Prolific before paying); a refusal ends
    the batch "failed" with Prolific's reason; a batch another sender holds, or already sent, is left alone.
    Returns the batch's state."""
    try:
        return bonus_batch_send(batch_id=batch_id).state
    except BonusBatchRefused as refusal:  # sent already, or another sender holds it: nothing to do here
        log.info("bonus batch %s not sent by this task: %s", batch_id, refusal)
    except ProlificRefused as refusal:  # recorded on the batch ("failed", with the reason): a person decides
        log.warning("bonus batch %s refused by Prolific: %s", batch_id, refusal)
    except (BonusOutcomeUnknown, ProlificUnavailable) as error:
        if self.request.retries < settings.PROLIFIC_BONUS_SEND_RETRIES:
            raise self.retry(exc=error, countdown=min(300, 5 * 2 ** self.request.retries)) from error
        log.warning("bonus batch %s: outcome still unknown after %s tries; the periodic resume goes on",
                    batch_id, self.request.retries + 1)
    return BonusBatch.objects.filter(pk=batch_id).values_list("state", flat=True).first() or ""


@shared_task(name="studies.tasks.report_screen_out", bind=True, acks_late=True, max_retries=None)
def report_screen_out(self, attempt_id: int) -> str:
    """Tell Prolific that a participant screened out in the app is screened out (once: the attempt records it).
    Runs in the worker, so the participant's page never waits on or fails with Prolific; an unavailable API is
    retried with backoff. Returns what the attempt records as reported."""
    try:
        return screen_out_report(attempt_id=attempt_id).prolific_report
    except ProlificUnavailable as error:
        if self.request.retries < settings.PROLIFIC_BONUS_SEND_RETRIES:
            raise self.retry(exc=error, countdown=min(300, 2 * 2 ** self.request.retries)) from error
        log.warning("screen-out of attempt %s not reported: Prolific unavailable after %s tries", attempt_id,
                    self.request.retries + 1)
    except (ProlificRefused, ProlificNotConnected) as refusal:  # shown on the Prolific page as not reported
        log.warning("screen-out of attempt %s refused by Prolific: %s", attempt_id, refusal)
    return ""


@shared_task(name="studies.tasks.report_pending_screen_outs")
def report_pending_screen_outs() -> list[int]:
    """Queue the report of every screen-out in a connected study that is still unreported a minute after it
    (its report was never queued, or gave up while Prolific was unavailable); a report runs once whatever the
    number of runs."""
    attempt_ids = screen_outs_unreported()
    for attempt_id in attempt_ids:
        report_screen_out.delay(attempt_id)
    return attempt_ids


@shared_task(name="studies.tasks.resume_bonus_batches")
def resume_bonus_batches() -> list[int]:
    """Send again every batch left "sending" that no sender holds (a sender that crashed, or gave up): each send
    reconciles with Prolific first, so a batch Prolific already paid is recorded as sent, never paid again."""
    batch_ids = bonus_batches_to_resume()
    for batch_id in batch_ids:
        send_bonus_batch.delay(batch_id)
    return batch_ids

"""Prolific's side of a study: the connection, the submissions as webhooks report them, the audit log of every
webhook delivery, and bonus batches with their payments. Registered with the `studies` app (imported at the end
of `studies.models`); other models are named by string to avoid the import circle.
"""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ProlificConnection(models.Model):
    """A study's Prolific study and the environment variable that holds the API token (never the token)."""

    study = models.OneToOneField("studies.Study", on_delete=models.CASCADE, related_name="prolific")
    prolific_study_id = models.CharField(max_length=64, unique=True)
    token_env = models.CharField(max_length=100, help_text="Name of the environment variable holding the API token.")
    prolific_status = models.CharField(max_length=40, blank=True, help_text="As Prolific last reported it.")
    places = models.PositiveIntegerField(null=True, blank=True, help_text="Prolific's total_available_places.")
    checked_at = models.DateTimeField(null=True, blank=True, help_text="Last successful test connection.")
    check_message = models.CharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.study_id} -> prolific {self.prolific_study_id}"


class SubmissionStatus(models.TextChoices):
    """Prolific's submission statuses (the spelling Prolific uses)."""

    RESERVED = "RESERVED"
    ACTIVE = "ACTIVE"
    AWAITING_REVIEW = "AWAITING REVIEW"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    RETURNED = "RETURNED"
    TIMED_OUT = "TIMED-OUT"
    SCREENED_OUT = "SCREENED-OUT"
    PARTIALLY_APPROVED = "PARTIALLY APPROVED"

    @classmethod
    def terminal(cls) -> set[str]:
        """No later event moves a submission out of these (a delayed ACTIVE after a RETURNED is stale)."""
        return {cls.APPROVED, cls.REJECTED, cls.RETURNED, cls.TIMED_OUT, cls.SCREENED_OUT, cls.PARTIALLY_APPROVED}

    @classmethod
    def ending_the_attempt(cls) -> set[str]:
        """Statuses that end the attempt in the app at once and give its leases back."""
        return {cls.RETURNED, cls.TIMED_OUT, cls.SCREENED_OUT}


class ProlificSubmission(models.Model):
    """A Prolific submission as its webhooks and the app's reviews left it; `attempt` = the app's attempt for it."""

    submission_id = models.CharField(max_length=64, unique=True)
    participant_id = models.CharField(max_length=100)
    connection = models.ForeignKey(ProlificConnection, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="submissions")
    attempt = models.ForeignKey("studies.Attempt", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="prolific_submissions")
    status = models.CharField(max_length=24, choices=SubmissionStatus.choices)
    status_at = models.DateTimeField(help_text="When Prolific sent the event that set the status (X-Timestamp).")
    review_message = models.TextField(blank=True)
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["status_at"]

    def __str__(self) -> str:
        return f"submission {self.submission_id} {self.status}"


class DeliveryOutcome(models.TextChoices):
    APPLIED = "applied", "Applied"
    DUPLICATE = "duplicate", "Duplicate (event already applied)"
    STALE = "stale", "Stale (out of order: the submission had a later or final status)"
    REFUSED = "refused", "Refused (unreadable body; older rows: also a bad signature or a replay)"


class ProlificWebhookDelivery(models.Model):
    """The audit log: one row per verified delivery, whatever became of it. An event is applied at most once: its
    id is unique among the rows that consumed it (applied or stale), and so is its signed content (a captured
    delivery sent again inside the timestamp window, under another event id, is a duplicate)."""

    received_at = models.DateTimeField(default=timezone.now)
    event_id = models.CharField(max_length=128, blank=True)
    event_type = models.CharField(max_length=60, blank=True)
    resource_id = models.CharField(max_length=64, blank=True, help_text="The submission (or study) id.")
    status = models.CharField(max_length=40, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True, help_text="X-Prolific-Request-Timestamp.")
    outcome = models.CharField(max_length=10, choices=DeliveryOutcome.choices)
    detail = models.CharField(max_length=300, blank=True)
    attempt = models.ForeignKey("studies.Attempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    signed_digest = models.CharField(
        max_length=64, blank=True,
        help_text="SHA-256 of the signed timestamp and the body: what the signature covers (empty on older rows).")

    class Meta:
        ordering = ["received_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["event_id"], condition=Q(outcome__in=["applied", "stale"]),
                                    name="prolific_event_consumed_once"),
            models.UniqueConstraint(fields=["signed_digest"],
                                    condition=Q(outcome__in=["applied", "stale"]) & ~Q(signed_digest=""),
                                    name="prolific_signed_content_consumed_once"),
        ]
        indexes = [models.Index(fields=["resource_id"], name="prolific_delivery_resource")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id} {self.status}: {self.outcome}"


class BonusBatchState(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "Approved"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


def new_bonus_key() -> str:
    return f"detectbench-bonus-{uuid.uuid4()}"


class BonusBatch(models.Model):
    """Bonuses proposed from the study's rule, approved by a researcher, then sent to Prolific once.

    `key` is the app's idempotency key: sent with the set-up call, it finds the batch's payment at Prolific again,
    so that a batch left "sending" (a crash, a lost answer) is reconciled before anything is sent again.
    """

    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT, related_name="bonus_batches")
    key = models.CharField(max_length=80, unique=True, default=new_bonus_key, editable=False)
    state = models.CharField(max_length=10, choices=BonusBatchState.choices, default=BonusBatchState.PROPOSED)
    currency = models.CharField(max_length=8)
    total = models.DecimalField(max_digits=10, decimal_places=2)
    prolific_bulk_id = models.CharField(max_length=64, blank=True, help_text="Prolific's id of the set-up payment.")
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    approved_at = models.DateTimeField(null=True, blank=True)
    send_claimed_until = models.DateTimeField(null=True, blank=True, help_text="A sender holds the batch until then.")
    send_attempts = models.PositiveSmallIntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    reconciled = models.BooleanField(default=False, help_text="Found paid at Prolific rather than seen paid.")
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "bonus batches"

    def __str__(self) -> str:
        return f"bonus batch {self.pk} ({self.state}, {self.total} {self.currency})"


class BonusPayment(models.Model):
    """One participant's bonus in a batch: a participant's attempt is in at most one batch, so never paid twice."""

    batch = models.ForeignKey(BonusBatch, on_delete=models.PROTECT, related_name="payments")
    attempt = models.OneToOneField("studies.Attempt", on_delete=models.PROTECT, related_name="bonus_payment")
    participant_id = models.CharField(max_length=100)
    correct = models.PositiveSmallIntegerField()
    amount = models.DecimalField(max_digits=9, decimal_places=2)

    class Meta:
        ordering = ["batch_id", "participant_id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_payment_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.participant_id}: {self.amount}"

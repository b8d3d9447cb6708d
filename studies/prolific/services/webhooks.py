"""Prolific's webhooks: each delivery verified, logged, and applied at most once.

A delivery is refused (and logged, nothing else written) when its signature is wrong or missing (401), when its
signed timestamp is more than PROLIFIC_WEBHOOK_MAX_AGE_S away from now (a replay, 403) or when its body is not a
JSON object (400). Prolific delivers at least once and in no guaranteed order: an event id (`X-Event-ID`) already
consumed is a duplicate; an event older (`X-Timestamp`) than the submission's last applied one, or one for a
submission already in a final status, is stale. Both are answered 200 so that Prolific stops retrying.

A submission RETURNED or TIMED-OUT ends the app's attempt for it at once (`attempt_return` / `attempt_expire`, the
same services that end a dropout's attempt in the app) and so gives its unanswered items back to the pool; one
SCREENED-OUT on Prolific ends it screened out (`attempt_screen_out`, not reported back).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from studies.models import Attempt, AttemptStatus
from studies.prolific.errors import WebhookRefused
from studies.prolific.models import (
    DeliveryOutcome,
    ProlificConnection,
    ProlificSubmission,
    ProlificWebhookDelivery,
    SubmissionStatus,
)
from studies.prolific.signatures import signature_valid
from studies.services import attempt_expire, attempt_return, attempt_screen_out

SIGNATURE_HEADER = "X-Prolific-Request-Signature"
TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"
EVENT_ID_HEADER = "X-Event-ID"
EVENT_TIME_HEADER = "X-Timestamp"


def webhook_secret() -> str:
    return os.environ.get(settings.PROLIFIC_WEBHOOK_SECRET_ENV, "")


def webhook_receive(*, body: bytes, headers: Mapping[str, str], now: datetime | None = None
                    ) -> ProlificWebhookDelivery:
    """Verify, log and apply one delivery; returns its log row (outcome applied, duplicate or stale), or raises
    WebhookRefused after logging the refusal."""
    now = now or timezone.now()
    header = {key.lower(): value for key, value in headers.items()}
    timestamp = header.get(TIMESTAMP_HEADER.lower(), "").strip()
    log = {"received_at": now, "event_id": header.get(EVENT_ID_HEADER.lower(), "").strip()[:128]}
    payload = _payload(body)
    if payload is not None:
        log.update(event_type=str(payload.get("event_type", ""))[:60], resource_id=str(payload.get("resource_id", ""))[:64],
                   status=str(payload.get("status", ""))[:40])
    if not signature_valid(webhook_secret(), timestamp, body, header.get(SIGNATURE_HEADER.lower(), "")):
        _refuse(log, "The signature is missing or wrong.", 401)
    sent_at = _unix(timestamp)
    log["sent_at"] = sent_at
    if sent_at is None or abs((now - sent_at).total_seconds()) > settings.PROLIFIC_WEBHOOK_MAX_AGE_S:
        _refuse(log, f"The signed timestamp is more than {settings.PROLIFIC_WEBHOOK_MAX_AGE_S} s from now (a replay).",
                403)
    if payload is None:
        _refuse(log, "The body is not a JSON object.", 400)
    if not log["event_id"]:  # Prolific sends X-Event-ID; without it, the same body counts as the same event
        log["event_id"] = "sha256:" + hashlib.sha256(body).hexdigest()
    event_at = _unix(header.get(EVENT_TIME_HEADER.lower(), "")) or sent_at
    for tries_left in (1, 0):
        try:
            return _apply(log, payload, event_at)
        except IntegrityError:
            if ProlificWebhookDelivery.objects.filter(
                    event_id=log["event_id"], outcome__in=[DeliveryOutcome.APPLIED, DeliveryOutcome.STALE]).exists():
                return ProlificWebhookDelivery.objects.create(**log, outcome=DeliveryOutcome.DUPLICATE,
                                                              detail="This event was already applied.")
            if not tries_left:  # another event created the same submission at the same moment: once more
                raise


@transaction.atomic
def _apply(log: dict, payload: dict, event_at: datetime) -> ProlificWebhookDelivery:
    # The row goes in first: a second delivery of the same event waits on the unique index until this
    # transaction ends, then fails (a duplicate), so that two deliveries at once never both apply it.
    delivery = ProlificWebhookDelivery.objects.create(**log, outcome=DeliveryOutcome.APPLIED)
    event_type = delivery.event_type
    if event_type == "submission.status.change":
        outcome, detail, attempt_id = _submission_status(payload, event_at)
    elif event_type == "study.status.change":
        updated = ProlificConnection.objects.filter(prolific_study_id=delivery.resource_id).update(
            prolific_status=delivery.status)
        outcome, detail, attempt_id = DeliveryOutcome.APPLIED, f"{updated} connected study updated.", None
    else:
        outcome, detail, attempt_id = DeliveryOutcome.APPLIED, "Event type not used by the app; recorded only.", None
    delivery.outcome, delivery.detail, delivery.attempt_id = outcome, detail[:300], attempt_id
    delivery.save(update_fields=["outcome", "detail", "attempt"])
    return delivery


def _submission_status(payload: dict, event_at: datetime) -> tuple[str, str, int | None]:
    submission_id = str(payload.get("resource_id", ""))[:64]
    participant_id = str(payload.get("participant_id", ""))[:100]
    status = str(payload.get("status", ""))
    if not submission_id or status not in SubmissionStatus.values:
        return DeliveryOutcome.APPLIED, f"Nothing to apply (submission {submission_id!r}, status {status!r}).", None
    submission = ProlificSubmission.objects.select_for_update().filter(submission_id=submission_id).first()
    if submission is not None:
        if submission.status in SubmissionStatus.terminal():
            return DeliveryOutcome.STALE, f"The submission is already {submission.status}.", submission.attempt_id
        if event_at < submission.status_at:
            return (DeliveryOutcome.STALE, f"Older than the {submission.status} event already applied.",
                    submission.attempt_id)
    else:
        submission = ProlificSubmission(submission_id=submission_id, participant_id=participant_id)
    if submission.attempt_id is None:
        submission.attempt, submission.connection = _attempt_of(submission_id, participant_id,
                                                                str(payload.get("study_id", "")))
    submission.status, submission.status_at = status, event_at
    submission.save()
    attempt = submission.attempt
    if attempt is None:
        return DeliveryOutcome.APPLIED, "No attempt in the app for this submission.", None
    if status in SubmissionStatus.ending_the_attempt():
        if status == SubmissionStatus.SCREENED_OUT:  # screened out on Prolific (or the echo of the app's own report)
            ended = attempt_screen_out(attempt_id=attempt.pk, reason="Screened out on Prolific.", report=False)
        else:
            ended = (attempt_return(attempt_id=attempt.pk) if status == SubmissionStatus.RETURNED
                     else attempt_expire(attempt_id=attempt.pk))
        return DeliveryOutcome.APPLIED, f"Attempt {ended.pk} is {ended.status}; its unanswered items are back.", attempt.pk
    return DeliveryOutcome.APPLIED, f"Submission is {status}.", attempt.pk


def _attempt_of(submission_id: str, participant_id: str, study_id: str
                ) -> tuple[Attempt | None, ProlificConnection | None]:
    """The app's attempt for a submission: SESSION_ID is the submission id; the participant must match too."""
    attempts = Attempt.objects.exclude(status=AttemptStatus.FULL).select_related("study")
    attempt = attempts.filter(external_session_id=submission_id, external_participant_id=participant_id).first()
    if attempt is None and participant_id:  # a link without SESSION_ID: the participant in a connected study
        candidates = attempts.filter(external_participant_id=participant_id, study__prolific__isnull=False)
        if study_id:
            candidates = candidates.filter(study__prolific__prolific_study_id=study_id)
        found = list(candidates[:2])
        attempt = found[0] if len(found) == 1 else None
    connection = ProlificConnection.objects.filter(study_id=attempt.study_id).first() if attempt else None
    if connection is None and study_id:
        connection = ProlificConnection.objects.filter(prolific_study_id=study_id).first()
    return attempt, connection


def _refuse(log: dict, detail: str, http_status: int) -> None:
    ProlificWebhookDelivery.objects.create(**{**log, "event_id": log.get("event_id", "")},
                                           outcome=DeliveryOutcome.REFUSED, detail=detail)
    raise WebhookRefused(detail, http_status=http_status)


def _payload(body: bytes) -> dict | None:
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return payload if isinstance(payload, dict) else None


def _unix(value: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None

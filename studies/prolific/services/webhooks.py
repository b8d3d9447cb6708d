"""Prolific's webhooks: each delivery verified, logged, and applied at most once.

The signature is checked first, over the raw body, before anything of the body is read: a delivery whose signature
is wrong or missing (401), or whose signed timestamp is more than PROLIFIC_WEBHOOK_MAX_AGE_S away from now (a
replay, 403), is refused without parsing or storing any of it, since anyone can send one, as many as they like. It
leaves no row: it is counted per reason and hour in the cache (`refused_counts`) and logged at most once a minute
per reason and process, with that count (`_refuse_unverified`). A verified delivery is in the audit log
(`ProlificWebhookDelivery`), whatever becomes of it: one whose body is not a JSON object (or cannot be parsed at all:
any parsing error) is refused (400) and logged. Every text kept from a delivery (its headers' and its body's) goes
through `storable_text`: a NUL or a lone surrogate in it becomes U+FFFD. Prolific delivers at least once and in no
guaranteed order: an event id (`X-Event-ID`) already consumed is a duplicate, and so is a signed content (timestamp
and body) already consumed under another event id: the signature covers neither id nor `X-Timestamp`, so a captured
delivery sent again inside the window with new ones would otherwise be applied again (Prolific's own retry of a
consumed delivery is the same event, a duplicate either way); an event older (`X-Timestamp`) than
the submission's last applied one, or one for a submission already in a final status, is stale. Both are answered
200 so that Prolific stops retrying.

A submission RETURNED or TIMED-OUT ends the app's attempt for it at once (`attempt_return` / `attempt_expire`, the
same services that end a dropout's attempt in the app) and so gives its unanswered items back to the pool; one
SCREENED-OUT on Prolific ends it screened out (`attempt_screen_out`, not reported back).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import NoReturn

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from foundation.storable import storable_text
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
#: Why an unverified delivery was refused (the keys of `refused_counts`).
SIGNATURE, REPLAY = "signature", "replay"
#: An unverified refusal is logged at most this often per reason and process (with the hour's count).
REFUSAL_LOG_EVERY_S = 60.0
#: How long the hourly counts of unverified refusals are kept in the cache.
REFUSAL_COUNT_KEEP_S = 48 * 3600

logger = logging.getLogger(__name__)
_log_lock = threading.Lock()
_last_logged: dict[str, float] = {}


def webhook_secret() -> str:
    return os.environ.get(settings.PROLIFIC_WEBHOOK_SECRET_ENV, "")


def webhook_receive(*, body: bytes, headers: Mapping[str, str], now: datetime | None = None
                    ) -> ProlificWebhookDelivery:
    """Verify, log and apply one delivery; returns its log row (outcome applied, duplicate or stale), or raises
    WebhookRefused (after logging it when the delivery was verified)."""
    now = now or timezone.now()
    header = {key.lower(): value for key, value in headers.items()}
    timestamp = header.get(TIMESTAMP_HEADER.lower(), "").strip()
    # The raw body as received, nothing of it read yet: an unverified delivery costs no parsing and leaves no row.
    if not signature_valid(webhook_secret(), timestamp, body, header.get(SIGNATURE_HEADER.lower(), "")):
        _refuse_unverified(SIGNATURE, "The signature is missing or wrong.", 401, now)
    sent_at = _unix(timestamp)
    if sent_at is None or abs((now - sent_at).total_seconds()) > settings.PROLIFIC_WEBHOOK_MAX_AGE_S:
        _refuse_unverified(REPLAY, f"The signed timestamp is more than {settings.PROLIFIC_WEBHOOK_MAX_AGE_S} s from "
                                   "now (a replay).", 403, now)
    log = {"received_at": now, "sent_at": sent_at,
           "event_id": storable_text(header.get(EVENT_ID_HEADER.lower(), "").strip())[:128],
           "signed_digest": hashlib.sha256(timestamp.encode("utf-8", "surrogatepass") + b"\n" + body).hexdigest()}
    payload = _payload(body)
    if payload is None:
        _refuse(log, "The body is not a JSON object.", 400)
    log.update(event_type=_text(payload, "event_type", 60), resource_id=_text(payload, "resource_id", 64),
               status=_text(payload, "status", 40))
    if not log["event_id"]:  # Prolific sends X-Event-ID; without it, the same body counts as the same event
        log["event_id"] = "sha256:" + hashlib.sha256(body).hexdigest()
    event_at = _unix(header.get(EVENT_TIME_HEADER.lower(), "")) or sent_at
    for tries_left in (1, 0):
        try:
            return _apply(log, payload, event_at)
        except IntegrityError:
            consumed = ProlificWebhookDelivery.objects.filter(
                outcome__in=[DeliveryOutcome.APPLIED, DeliveryOutcome.STALE])
            if consumed.filter(event_id=log["event_id"]).exists():
                return ProlificWebhookDelivery.objects.create(**log, outcome=DeliveryOutcome.DUPLICATE,
                                                              detail="This event was already applied.")
            if consumed.filter(signed_digest=log["signed_digest"]).exists():
                return ProlificWebhookDelivery.objects.create(
                    **log, outcome=DeliveryOutcome.DUPLICATE,
                    detail="This signed delivery was already applied (under another event id): a replay.")
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
    submission_id = _text(payload, "resource_id", 64)
    participant_id = _text(payload, "participant_id", 100)
    status = _text(payload, "status", 40)
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
                                                                _text(payload, "study_id", 64))
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


def _refuse(log: dict, detail: str, http_status: int) -> NoReturn:
    """A verified delivery that cannot be applied: logged, then refused."""
    ProlificWebhookDelivery.objects.create(**log, outcome=DeliveryOutcome.REFUSED, detail=detail)
    raise WebhookRefused(detail, http_status=http_status)


def _refuse_unverified(reason: str, detail: str, http_status: int, now: datetime) -> NoReturn:
    """A delivery not shown to come from Prolific now: refused with nothing of it stored. Counted per reason and
    hour in the cache (`refused_counts`), and logged at most once every REFUSAL_LOG_EVERY_S per reason and process,
    with the hour's count: a wrong secret or a skewed clock shows as a steady line in the log, a flood as one."""
    count = None
    try:
        key = _count_key(reason, now)
        cache.add(key, 0, REFUSAL_COUNT_KEEP_S)
        count = cache.incr(key)
    except Exception:  # noqa: BLE001 - an unreachable cache costs the count, never the answer
        pass
    moment = time.monotonic()
    with _log_lock:
        due = moment - _last_logged.get(reason, -math.inf) >= REFUSAL_LOG_EVERY_S
        if due:
            _last_logged[reason] = moment
    if due:
        logger.warning("Prolific webhook delivery refused (%s, HTTP %s): %s %s refused for this reason in the hour "
                       "from %s UTC; nothing of them is stored.", reason, http_status,
                       "?" if count is None else count, "delivery" if count == 1 else "deliveries",
                       now.astimezone(UTC).strftime("%Y-%m-%d %H:00"))
    raise WebhookRefused(detail, http_status=http_status)


def _count_key(reason: str, at: datetime) -> str:
    return f"prolific:webhook-refused:{reason}:{at.astimezone(UTC):%Y%m%d%H}"


def refused_counts(*, hours: int = 24, now: datetime | None = None) -> dict[str, int]:
    """Deliveries refused unverified in the last `hours` hours (this one included; kept REFUSAL_COUNT_KEEP_S), per
    reason: SIGNATURE (wrong or missing) and REPLAY (signed timestamp too far from now)."""
    now = now or timezone.now()
    hours_back = [now - timedelta(hours=h) for h in range(max(1, hours))]
    keys = {reason: [_count_key(reason, at) for at in hours_back] for reason in (SIGNATURE, REPLAY)}
    found = cache.get_many([key for reason_keys in keys.values() for key in reason_keys])
    return {reason: sum(int(found.get(key, 0)) for key in reason_keys) for reason, reason_keys in keys.items()}


def _payload(body: bytes) -> dict | None:
    """The body as a JSON object (UTF-8, or the UTF-16/32 that json detects), or None: any failure of parsing
    (undecodable bytes, bad JSON, nesting too deep for the parser, a number too long) is an unreadable body."""
    try:
        payload = json.loads(body)
    except Exception:  # noqa: BLE001 - whatever the parser raises, the body is unreadable (400), never a 500
        return None
    return payload if isinstance(payload, dict) else None


def _text(payload: dict, name: str, limit: int) -> str:
    """A field of the payload as text PostgreSQL keeps (`storable_text`: a NUL or a lone surrogate as U+FFFD), cut
    to `limit` characters: a string, or a number's digits; anything else (null, a list, an object) is no text."""
    value = payload.get(name)
    if isinstance(value, str):
        return storable_text(value[:limit])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return str(value)[:limit]
        except ValueError:  # an integer beyond Python's digit limit
            return ""
    return ""


def _unix(value: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None

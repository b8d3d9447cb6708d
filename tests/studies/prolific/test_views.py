"""Prolific's webhook endpoint (studies/prolific/views.py): deliveries applied once, late ones stale, refusals that
change nothing and are never a 500."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus
from studies.prolific.models import DeliveryOutcome, ProlificSubmission, ProlificWebhookDelivery
from studies.prolific.signatures import signature
from studies.services import attempt_start, study_join

SECRET = "whsec-unit"
URL = "/studies/prolific/webhook/"


def _post(client, payload: dict, *, secret: str = SECRET, sent_at: float | None = None, event_id: str = "ev-1",
          event_time: float | None = None):
    body = json.dumps(payload).encode()
    timestamp = str(int(sent_at if sent_at is not None else time.time()))
    sig = base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()).decode()
    return client.post(URL, data=body, content_type="application/json", headers={
        "X-Prolific-Request-Signature": sig, "X-Prolific-Request-Timestamp": timestamp, "X-Event-ID": event_id,
        "X-Timestamp": str(event_time if event_time is not None else time.time())})


@pytest.fixture
def running(make_study, monkeypatch):
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = study_join(study=study, participant_id="PID1", external_study_id="PS1", session_id="SUB1")
    return attempt_start(attempt_id=attempt.pk)


def test_returned_ends_the_attempt_once_and_duplicates_are_logged(client, running):
    payload = {"resource_id": "SUB1", "event_type": "submission.status.change", "participant_id": "PID1",
               "status": "RETURNED"}
    first, second = _post(client, payload), _post(client, payload)
    assert (first.status_code, first.json()["outcome"]) == (200, "applied")
    assert (second.status_code, second.json()["outcome"]) == (200, "duplicate")
    attempt = Attempt.objects.get(pk=running.pk)
    assert attempt.status == AttemptStatus.RETURNED
    assert set(attempt.leases.values_list("status", flat=True)) == {ParticipantLeaseStatus.RELEASED}
    assert set(attempt.study.pool.values_list("load", flat=True)) == {0}
    # An older event arriving late (another id) is stale, not applied.
    late = _post(client, {**payload, "status": "ACTIVE"}, event_id="ev-0", event_time=time.time() - 60)
    assert late.json()["outcome"] == "stale"
    assert ProlificSubmission.objects.get(submission_id="SUB1").status == "RETURNED"


@pytest.mark.parametrize("how, status", [("wrong secret", 401), ("old timestamp", 403), ("no secret set", 401)])
def test_refused_deliveries_change_nothing(client, running, monkeypatch, how, status):
    if how == "no secret set":
        monkeypatch.delenv("PROLIFIC_WEBHOOK_SECRET")
    payload = {"resource_id": "SUB1", "event_type": "submission.status.change", "participant_id": "PID1",
               "status": "RETURNED"}
    answer = _post(client, payload, secret="other" if how == "wrong secret" else SECRET,
                   sent_at=time.time() - 600 if how == "old timestamp" else None)
    assert answer.status_code == status and answer.json()["code"] == "webhook_refused"
    assert Attempt.objects.get(pk=running.pk).status == AttemptStatus.STARTED
    assert not ProlificSubmission.objects.exists()
    assert not ProlificWebhookDelivery.objects.exists()  # unverified: counted and logged, never stored
    # The event was refused, not consumed: the genuine delivery is still applied.
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    assert _post(client, payload).json()["outcome"] == "applied"


def test_unreadable_body_is_refused_not_a_500(client, running):
    timestamp = str(int(time.time()))
    body = b"\xff not json"
    answer = client.post(URL, data=body, content_type="application/json", headers={
        "X-Prolific-Request-Signature": signature(SECRET, timestamp, body), "X-Prolific-Request-Timestamp": timestamp})
    assert answer.status_code == 400
    # A verified delivery is logged whatever becomes of it.
    assert list(ProlificWebhookDelivery.objects.values_list("outcome", flat=True)) == [DeliveryOutcome.REFUSED]


@pytest.mark.django_db
@pytest.mark.parametrize("form", ["multipart", "urlencoded"])
def test_a_form_body_is_refused_as_unverifiable_never_a_500(client, form):
    """A form body is parsed before the view (its raw bytes, which the signature covers, are gone)."""
    if form == "multipart":
        answer = client.post(URL, data={"status": "RETURNED"})
    else:
        answer = client.post(URL, data="status=RETURNED", content_type="application/x-www-form-urlencoded")
    assert answer.status_code == 401 and answer.json()["code"] == "webhook_refused"
    assert not ProlificSubmission.objects.exists()

"""The webhook endpoint's refusals and the researchers' Prolific API (connection, test, reviews, batches)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus
from studies.prolific.models import DeliveryOutcome, ProlificSubmission, ProlificWebhookDelivery
from studies.prolific.signatures import signature, signature_valid
from studies.services import attempt_start, study_join
from tests.support.prolific_server import ProlificStandIn

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


def test_signature_is_prolifics_base64_hmac_of_timestamp_and_body():
    assert signature("s", "1700000000", b"{}") == base64.b64encode(
        hmac.new(b"s", b"1700000000{}", hashlib.sha256).digest()).decode()
    assert not signature_valid("", "1700000000", b"{}", signature("", "1700000000", b"{}"))  # no secret: nothing


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
    assert list(ProlificWebhookDelivery.objects.values_list("outcome", flat=True)) == [DeliveryOutcome.REFUSED]
    # The event was refused, not consumed: the genuine delivery is still applied.
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    assert _post(client, payload).json()["outcome"] == "applied"


def test_unreadable_body_is_refused_not_a_500(client, running):
    timestamp = str(int(time.time()))
    body = b"\xff not json"
    answer = client.post(URL, data=body, content_type="application/json", headers={
        "X-Prolific-Request-Signature": signature(SECRET, timestamp, body), "X-Prolific-Request-Timestamp": timestamp})
    assert answer.status_code == 400


def test_connection_names_a_variable_never_a_token(researcher_client, make_study):
    study = make_study()
    url = f"/api/studies/{study.slug}/prolific/"
    answer = researcher_client.put(url, {"prolific_study_id": "PS1", "token_env": "abcd-real-token"},
                                   content_type="application/json")
    assert answer.status_code == 400 and answer.json()["field"] == "token_env"
    answer = researcher_client.put(url, {"prolific_study_id": "PS1", "token_env": "SECRET_KEY"},
                                   content_type="application/json")
    assert answer.status_code == 400
    assert researcher_client.get(url).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_test_connection_reviews_and_batches_over_the_api(researcher_client, make_study, settings, monkeypatch):
    monkeypatch.setenv("PROLIFIC_UNIT_TOKEN", "tok")
    with ProlificStandIn(token="tok", webhook_secret=SECRET) as stand_in:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TIMEOUT_S = stand_in.base_url, 1.0
        stand_in.add_study("PS1", places=5)
        study = make_study()
        url = f"/api/studies/{study.slug}/prolific/"
        assert researcher_client.put(url, {"prolific_study_id": "PS1", "token_env": "PROLIFIC_UNIT_TOKEN"},
                                     content_type="application/json").status_code == 200
        tested = researcher_client.post(url + "test/")
        assert tested.status_code == 200 and tested.json()["places"] == 5
        monkeypatch.setenv("PROLIFIC_UNIT_TOKEN", "wrong")
        refused = researcher_client.post(url + "test/")
        assert refused.status_code == 502 and "401" in refused.json()["detail"]
        monkeypatch.setenv("PROLIFIC_UNIT_TOKEN", "tok")
        stand_in.fail_next(1, 503)
        assert researcher_client.post(url + "test/").status_code == 502
        ProlificSubmission.objects.create(submission_id="S-T", participant_id="P-T", status="TIMED-OUT",
                                          status_at="2026-01-01T00:00Z", connection=study.prolific)
        approve = researcher_client.post(url + "submissions/S-T/review/", {"action": "approve"},
                                         content_type="application/json")
        assert approve.status_code == 400 and "awaiting review" in approve.json()["detail"]
        assert researcher_client.post(url + "bonus-batches/").status_code == 204  # nobody answered: nothing to pay
        assert researcher_client.post(url + "bonus-batches/999/send/").status_code == 404
        assert not stand_in.state.payments


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

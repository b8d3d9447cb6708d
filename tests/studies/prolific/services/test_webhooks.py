"""Prolific's webhook service (studies/prolific/services/webhooks.py) against hostile bodies: the signature is checked
over the raw body before anything is parsed or stored, so an unverified delivery (unsigned, badly signed, replayed),
whatever its body, writes no row and is refused (401/403); a signed one is applied or refused (400), never anything
else (the view answers any other exception 500), and writes only text PostgreSQL keeps (each NUL and lone surrogate
as U+FFFD, `foundation.storable.storable_text`). Refusals are counted and logged a bounded number of times.

The service is called directly (what the view hands it: the raw body and the headers), whatever the request text
middleware in front of it refuses first; the HTTP tests check the whole route: never a 5xx, nothing stored unverified.
"""
from __future__ import annotations

import json
import logging
import time

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from foundation.storable import storable_text
from studies.prolific.errors import WebhookRefused
from studies.prolific.models import ProlificConnection, ProlificSubmission, ProlificWebhookDelivery
from studies.prolific.services import webhooks
from studies.prolific.signatures import signature
from studies.services import attempt_start, study_join

SECRET = "whsec-fuzz"
URL = "/studies/prolific/webhook/"
TEXT_FIELDS = ("event_type", "resource_id", "status", "participant_id", "study_id")
REAL_VALUES = ("submission.status.change", "study.status.change", "SUB1", "PID1", "PS1", "RETURNED", "TIMED-OUT",
               "SCREENED-OUT", "ACTIVE", "AWAITING REVIEW", "APPROVED")
UNSTORABLE = ("\x00", "\ud800", "\udfff", "\udc80", "\ud83d", "a\x00b")
#: charset -> how characters it cannot encode are written (the UTFs carry lone surrogates as such).
CHARSETS = {"utf-8": "surrogatepass", "utf-16": "surrogatepass", "utf-16-le": "surrogatepass",
            "utf-16-be": "surrogatepass", "utf-32": "surrogatepass", "utf-32-le": "surrogatepass",
            "utf-32-be": "surrogatepass", "latin-1": "backslashreplace", "cp1252": "backslashreplace",
            "ascii": "backslashreplace", "shift_jis": "backslashreplace", "utf-7": "backslashreplace"}
SIGNINGS = ("valid", "none", "wrong", "garbage", "stale")
UNVERIFIED_STATUS = {"none": 401, "wrong": 401, "garbage": 401, "stale": 403}


def _unstorable(text: str) -> bool:
    return storable_text(text) != text


def _headers(body: bytes, *, signed: str = "valid", event_id: str = "ev-1", content_type: str = "text/plain"
             ) -> dict[str, str]:
    """`signed`: "valid", "stale" (a right signature on a timestamp 10 minutes old), "wrong", "garbage" or "none"."""
    timestamp = str(int(time.time() - (600 if signed == "stale" else 0)))
    headers = {"X-Event-ID": event_id, "X-Timestamp": str(time.time()), "Content-Type": content_type}
    if signed in ("valid", "stale", "wrong"):
        headers |= {"X-Prolific-Request-Signature": signature("not-the-secret" if signed == "wrong" else SECRET,
                                                              timestamp, body),
                    "X-Prolific-Request-Timestamp": timestamp}
    elif signed == "garbage":
        headers |= {"X-Prolific-Request-Signature": "\x00\u00ff=\ud800", "X-Prolific-Request-Timestamp": "1e999"}
    return headers


def _receive(body: bytes, **how) -> tuple[int, ProlificWebhookDelivery | None]:
    """The service's answer as the view gives it: 200 with the row, or the refusal's status. Any other exception is
    raised: the view would answer it 500."""
    try:
        return 200, webhooks.webhook_receive(body=body, headers=_headers(body, **how))
    except WebhookRefused as refusal:
        return refusal.http_status, None


def _post(client, body: bytes, *, content_type: str = "text/plain", **how):
    headers = _headers(body, content_type=content_type, **how)
    del headers["Content-Type"]
    # generic(): the bytes as they are (post() would transcode them to a declared charset after they were signed).
    return client.generic("POST", URL, data=body, content_type=content_type, headers=headers)


def _snapshot() -> tuple:
    return (list(ProlificWebhookDelivery.objects.order_by("id").values_list("id", "outcome")),
            list(ProlificSubmission.objects.order_by("id").values_list("id", "status", "status_at", "attempt_id")),
            list(ProlificConnection.objects.order_by("id").values_list("id", "prolific_status")))


def _kept_text(since_id: int) -> list[str]:
    """Every text the webhook may have written: the new log rows', the submissions' and the connections'."""
    kept = [v for row in ProlificWebhookDelivery.objects.filter(id__gt=since_id).values() for v in row.values()
            if isinstance(v, str)]
    kept += [v for row in ProlificSubmission.objects.values("submission_id", "participant_id", "status")
             for v in row.values()]
    return kept + list(ProlificConnection.objects.values_list("prolific_status", flat=True))


def _last_id() -> int:
    return ProlificWebhookDelivery.objects.order_by("-id").values_list("id", flat=True).first() or 0


@pytest.fixture
def connected(make_study, monkeypatch):
    """A running attempt of a connected study, so that signed bodies can reach every branch of the service."""
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    study = make_study(n_items=6, per_participant=3, raters=1)
    ProlificConnection.objects.create(study=study, prolific_study_id="PS1", token_env="PROLIFIC_API_TOKEN")
    attempt = study_join(study=study, participant_id="PID1", external_study_id="PS1", session_id="SUB1")
    return attempt_start(attempt_id=attempt.pk)


# The bodies that answered 500 before the signature was checked (with the Content-Type they were sent with).
REPORTED = {
    "NUL in a field": (b'{"event_type":"a\\u0000b"}', "text/plain"),
    "lone surrogate": (b'{"status":"\\ud800"}', "text/plain"),
    "deep nesting": (b"[" * 1000 + b"]" * 1000, "text/plain"),
    "UTF-16 with a NUL": ('{"event_type":"a\\u0000b"}'.encode("utf-16"), "application/json; charset=utf-16"),
}


@pytest.mark.parametrize("name", REPORTED)
def test_an_unverified_hostile_body_is_refused_unread_and_leaves_no_row(connected, name):
    body, content_type = REPORTED[name]
    before = _snapshot()
    for signed, status in UNVERIFIED_STATUS.items():
        assert _receive(body, signed=signed, content_type=content_type) == (status, None), signed
    assert _snapshot() == before


@pytest.mark.parametrize("name", REPORTED)
def test_a_signed_hostile_body_is_applied_or_refused_and_keeps_only_storable_text(connected, name):
    body, content_type = REPORTED[name]
    status, delivery = _receive(body, content_type=content_type)
    rows = list(ProlificWebhookDelivery.objects.values_list("event_type", "resource_id", "status", "detail"))
    assert len(rows) == 1 and not any(_unstorable(text) for row in rows for text in row)
    if name == "deep nesting":  # not a JSON object: refused, and logged as a verified delivery
        assert status == 400
    else:
        assert status == 200 and "\ufffd" in delivery.event_type + delivery.status


def test_unverified_deliveries_over_http_are_refused_never_a_5xx_and_stored_nowhere(client, connected):
    """The reported bodies (which the request text middleware may refuse first) and an ordinary Prolific body (which
    reaches the service): 4xx, nothing stored, nothing changed."""
    ordinary = json.dumps({"event_type": "submission.status.change", "resource_id": "SUB1", "participant_id": "PID1",
                           "status": "RETURNED"}).encode()
    before = _snapshot()
    for body, content_type in [*REPORTED.values(), (ordinary, "application/json")]:
        for signed in UNVERIFIED_STATUS:
            answer = _post(client, body, content_type=content_type, signed=signed)
            assert 400 <= answer.status_code < 500, (body[:40], signed, answer.status_code)
    assert _snapshot() == before


@pytest.mark.django_db
def test_unverified_refusals_are_counted_and_logged_boundedly_never_stored(monkeypatch, caplog):
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    with caplog.at_level(logging.WARNING, logger=webhooks.__name__):
        for i in range(40):
            assert _receive(b'{"event_type":"x"}', signed="wrong", event_id=f"flood-{i}")[0] == 401
        counted = webhooks.refused_counts()
        for i in range(5):
            assert _receive(b'{"event_type":"x"}', signed="stale", event_id=f"replay-{i}")[0] == 403
    assert not ProlificWebhookDelivery.objects.exists()
    now = webhooks.refused_counts()
    assert now["signature"] >= 40 and (now["signature"], now["replay"] - counted["replay"]) == (
        counted["signature"], 5)
    lines = [r.getMessage() for r in caplog.records if r.name == webhooks.__name__]
    # At most one line a minute per reason (and process), saying how many were refused so far this hour.
    assert len(lines) <= 2 and all("refused" in line and "nothing of them is stored" in line for line in lines)


# --- The fuzz: every kind of body, with and without a valid signature ------------------------------------------

_nasty_text = st.lists(st.one_of(st.text(alphabet=st.characters(codec=None), max_size=6),
                                 st.sampled_from(UNSTORABLE), st.sampled_from(REAL_VALUES)), max_size=4).map("".join)
_value = st.one_of(_nasty_text, st.sampled_from(REAL_VALUES), st.integers(), st.floats(), st.none(), st.booleans(),
                   st.lists(_nasty_text, max_size=2), st.dictionaries(_nasty_text, _nasty_text, max_size=2))
_payload = st.dictionaries(st.one_of(st.sampled_from(TEXT_FIELDS), _nasty_text), _value, max_size=7)
# Prolific's own fields, each real or hostile: the bodies that reach the attempt, the submission and the connection.
_prolific_payload = st.fixed_dictionaries({name: st.one_of(st.sampled_from(REAL_VALUES), _value) for name in TEXT_FIELDS})


@st.composite
def _json_body(draw) -> bytes:
    value = draw([_value, _payload, _prolific_payload, _prolific_payload][draw(st.integers(0, 3))])
    charset = draw(st.one_of(st.just("utf-8"), st.sampled_from(sorted(CHARSETS))))
    # \u escapes mostly (what Prolific sends); raw characters, lone surrogates included, in the charset otherwise.
    ascii_only = draw(st.sampled_from([True, True, False]))
    return json.dumps(value, ensure_ascii=ascii_only).encode(charset, CHARSETS[charset])


@st.composite
def _nested_body(draw) -> bytes:
    depth = draw(st.integers(1, 100_000))
    opening, closing = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'{"event_type":[', b"]}")]))
    return opening * depth + draw(st.sampled_from([b"1", b'"\\u0000"', b""])) + closing * depth


_body = st.one_of(st.binary(max_size=300), _nested_body(), _json_body(), _json_body())
_content_type = st.one_of(
    st.sampled_from(["application/json", "text/plain", "application/octet-stream", "application/vnd.api+json"]),
    st.builds(lambda kind, charset: f"{kind}; charset={charset}", st.sampled_from(["application/json", "text/plain"]),
              st.sampled_from([*CHARSETS, "x-unknown"])))
_event_id = st.one_of(st.just(""), _nasty_text)
_FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                       HealthCheck.data_too_large])


def _expected_text(body: bytes, name: str, limit: int) -> str | None:
    """What the log row keeps of a string field of a body that parses to an object (None: no such string)."""
    try:
        payload = json.loads(body)
    except Exception:  # noqa: BLE001 - whatever the parser raises, the body is unreadable
        return None
    value = payload.get(name) if isinstance(payload, dict) else None
    return storable_text(value[:limit]) if isinstance(value, str) else None


@settings(_FUZZ, max_examples=700)
@given(body=_body, content_type=_content_type, signed=st.sampled_from(["valid", *SIGNINGS]), event_id=_event_id)
def test_fuzz_the_service_refuses_unverified_unread_and_keeps_only_storable_text(connected, body, content_type,
                                                                                signed, event_id):
    with transaction.atomic():  # each example on its own (rolled back)
        before, since = _snapshot(), _last_id()
        status, delivery = _receive(body, signed=signed, event_id=event_id, content_type=content_type)
        event(f"{signed} -> {status}")
        if signed != "valid":
            assert status == UNVERIFIED_STATUS[signed] and _snapshot() == before
        else:
            assert status in (200, 400)
            assert not any(_unstorable(text) for text in _kept_text(since))
            assert ProlificWebhookDelivery.objects.filter(id__gt=since).count() == 1  # a verified one is logged
            if status == 200:
                for name, limit in (("event_type", 60), ("resource_id", 64), ("status", 40)):
                    expected = _expected_text(body, name, limit)
                    assert expected is None or getattr(delivery, name) == expected
                assert delivery.event_id == storable_text(event_id.strip())[:128] or not event_id.strip()
        transaction.set_rollback(True)


@settings(_FUZZ, max_examples=250)
@given(body=_body, content_type=_content_type, signed=st.sampled_from(SIGNINGS), event_id=_event_id)
def test_fuzz_the_route_is_never_a_5xx_and_stores_nothing_unverified(connected, body, content_type, signed,
                                                                      event_id):
    client = Client(raise_request_exception=False)
    with transaction.atomic():
        before, since = _snapshot(), _last_id()
        answer = _post(client, body, content_type=content_type, signed=signed, event_id=event_id)
        event(f"{signed} -> {answer.status_code}")
        assert answer.status_code < 500, answer.content[:300]
        if signed != "valid":
            assert answer.status_code >= 400 and _snapshot() == before
        else:
            assert not any(_unstorable(text) for text in _kept_text(since))
        transaction.set_rollback(True)


def test_a_captured_delivery_sent_again_under_new_event_ids_is_a_duplicate_and_changes_nothing(connected):
    """The signature covers the signed timestamp and the body, not X-Event-ID or X-Timestamp: a delivery captured
    and sent again inside the window, with a new event id and a later event time, would have put the submission
    back to its old status. Its signed content was consumed already: a duplicate, logged, nothing applied."""
    def signed(body: bytes, event_id: str, event_time: float, timestamp: str) -> dict[str, str]:
        return {"X-Prolific-Request-Signature": signature(SECRET, timestamp, body),
                "X-Prolific-Request-Timestamp": timestamp, "X-Event-ID": event_id, "X-Timestamp": str(event_time)}

    now = time.time()
    stamp = str(int(now))
    active = json.dumps({"event_type": "submission.status.change", "resource_id": "SUB1", "participant_id": "PID1",
                         "study_id": "PS1", "status": "ACTIVE"}).encode()
    captured = signed(active, "ev-a", now - 2, stamp)
    assert webhooks.webhook_receive(body=active, headers=captured).outcome == "applied"
    review = active.replace(b"ACTIVE", b"AWAITING REVIEW")
    assert webhooks.webhook_receive(body=review, headers=signed(review, "ev-b", now - 1, stamp)).outcome == "applied"
    before = _snapshot()
    for n, event_time in enumerate((now, now + 60, now - 5)):
        replay = webhooks.webhook_receive(body=active, headers={**captured, "X-Event-ID": f"ev-replay-{n}",
                                                                "X-Timestamp": str(event_time)})
        assert replay.outcome == "duplicate" and "replay" in replay.detail
    after = _snapshot()
    assert after[1:] == before[1:]  # the submission and the connection as they were
    assert ProlificSubmission.objects.get(submission_id="SUB1").status == "AWAITING REVIEW"
    assert [o for _, o in after[0][len(before[0]):]] == ["duplicate"] * 3
    # Prolific's own later delivery of the same status, signed anew, is a new event: applied.
    later = str(int(now) + 1)
    again = webhooks.webhook_receive(body=active, headers=signed(active, "ev-c", now + 1, later))
    assert again.outcome == "applied"
    assert ProlificSubmission.objects.get(submission_id="SUB1").status == "ACTIVE"

"""Breaks found by trying the participant pages as an attacker would (issue 11), replayed and kept fixed."""
import json
from urllib.parse import quote, urlencode

import pytest
from django.test import Client
from django.urls import reverse

from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus, RefusedAnswer, StudyItem
from studies.services import question_open

HX = {"HTTP_HX_REQUEST": "true"}


def _join(client, study, pid, session="X1"):
    return client.post(reverse("studies_public:join", args=[study.slug]),
                       {"consent": "yes", "PROLIFIC_PID": pid, "STUDY_ID": "S1", "SESSION_ID": session})


def _finish(client, attempt):
    """Start and answer every question in `client`'s browser; the completion page."""
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    while (question := question_open(attempt=attempt)) is not None:
        client.post(reverse("studies_public:answer", args=[attempt.token]),
                    {"position": question.lease.position, "chosen_option": 0, "highlights": "[]"}, **HX)
        attempt.refresh_from_db()
    return client.get(reverse("studies_public:attempt", args=[attempt.token]))


# --------------------------------------------------------------------------- takeover by Prolific id (break 3)

def test_a_fresh_browser_with_someone_elses_prolific_id_does_not_get_their_attempt(make_study):
    study = make_study(completion_code="SECRET-CODE-77")
    victim = Client()
    _join(victim, study, "VICTIM-1", session="SESSION-V")
    attempt = Attempt.objects.get(external_participant_id="VICTIM-1")
    done = _finish(victim, attempt)
    assert b"SECRET-CODE-77" in done.content

    attacker = Client()
    for params in ({"PROLIFIC_PID": "VICTIM-1"}, {"PROLIFIC_PID": "VICTIM-1", "SESSION_ID": "guess"},
                   {"PROLIFIC_PID": "VICTIM-1", "SESSION_ID": ""}):
        landing = attacker.get(reverse("studies_public:landing", args=[study.slug]), params)
        assert landing.status_code == 409, params
        body = landing.content.decode()
        assert attempt.token not in body and "SECRET-CODE-77" not in body and 'id="participant-taken"' in body
        assert 'name="consent"' not in body  # no second attempt under the same id either
    join = _join(attacker, study, "VICTIM-1", session="guess")
    assert join.status_code == 409 and attempt.token.encode() not in join.content
    assert f"dbstudy_{study.slug}" not in join.cookies
    assert not attacker.get(reverse("studies_public:landing", args=[study.slug])).status_code == 302
    # Nothing changed for the victim, and no attempt was added.
    assert Attempt.objects.filter(study=study).count() == 1
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.FINISHED


def test_a_new_browser_resumes_with_the_prolific_id_and_session_id_or_the_cookie(make_study):
    study = make_study()
    first = Client()
    _join(first, study, "P7", session="SESSION-7")
    attempt = Attempt.objects.get(external_participant_id="P7")
    first.post(reverse("studies_public:start", args=[attempt.token]))
    # Reopened from Prolific in another browser: the same participant and session id.
    second = Client()
    landing = second.get(reverse("studies_public:landing", args=[study.slug]),
                         {"PROLIFIC_PID": "P7", "STUDY_ID": "S1", "SESSION_ID": "SESSION-7"})
    assert landing.status_code == 302 and attempt.token in landing.url
    assert _join(Client(), study, "P7", session="SESSION-7").url.endswith(f"/a/{attempt.token}/")
    # The browser the attempt started in resumes by its cookie alone, whatever the link says.
    assert attempt.token in first.get(reverse("studies_public:landing", args=[study.slug]),
                                      {"PROLIFIC_PID": "P7"}).url
    assert Attempt.objects.filter(study=study).count() == 1


def test_an_attempt_joined_without_a_session_id_resumes_by_its_cookie_only(make_study):
    study = make_study()
    _join(Client(), study, "NOSESSION", session="")
    stranger = Client()
    page = stranger.get(reverse("studies_public:landing", args=[study.slug]),
                        {"PROLIFIC_PID": "NOSESSION", "SESSION_ID": ""})
    assert page.status_code == 409
    assert _join(stranger, study, "NOSESSION", session="").status_code == 409


# --------------------------------------------------------------------------- refusals that could not be stored (break 6)

@pytest.mark.parametrize("highlights, chosen, stored_option", [
    ('[{"start": NaN, "end": Infinity, "text": "x"}]', "0", "0"),
    ('[{"start": -Infinity, "end": 1e999, "text": "a\\u0000b"}]', "0", "0"),
    ('[{"start": 0, "end": 1, "text": "\\ud800"}]', "0", "0"),
])
def test_a_refused_replay_with_nan_infinity_or_nul_is_stored_sanitised_never_a_500(
        make_study, highlights, chosen, stored_option):
    study = make_study()
    client = Client()
    _join(client, study, "R1")
    attempt = Attempt.objects.get(external_participant_id="R1")
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    position = question_open(attempt=attempt).lease.position
    url = reverse("studies_public:answer", args=[attempt.token])
    assert client.post(url, {"position": position, "chosen_option": 0, "highlights": "[]"}, **HX).status_code == 200
    replay = client.post(url, {"position": position, "chosen_option": chosen, "highlights": highlights}, **HX)
    assert replay.status_code == 409 and b'data-refused="already_answered"' in replay.content
    refused = RefusedAnswer.objects.get(attempt=attempt)
    assert refused.reason == RefusedAnswer.Reason.ALREADY_ANSWERED
    assert refused.payload["chosen_option"] == stored_option
    text = json.dumps(refused.payload, allow_nan=False)  # valid JSON: no NaN, Infinity, NUL or lone surrogate
    assert "\\u0000" not in text and "\\ud800" not in text
    if "NaN" in highlights:
        assert refused.payload["highlights"] == [{"start": "NaN", "end": "Infinity", "text": "x"}]
    assert attempt.responses.count() == 1


# --------------------------------------------------------------------------- closing a joined, never started attempt

def test_a_joined_never_started_attempt_can_be_returned_and_expired(make_study, researcher_client):
    study = make_study()
    client = Client()
    _join(client, study, "J1")
    attempt = Attempt.objects.get(external_participant_id="J1")
    page = client.post(reverse("studies_public:return", args=[attempt.token]), follow=True)
    assert page.status_code == 200 and b'id="ended"' in page.content
    attempt.refresh_from_db()
    assert (attempt.status, attempt.started_at, attempt.deadline) == (AttemptStatus.RETURNED, None, None)
    assert attempt.ended_at is not None
    # Start after returning hands out nothing.
    client.post(reverse("studies_public:start", args=[attempt.token]))
    assert not attempt.leases.exists() and set(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == {0}

    for via in ("page", "api"):
        _join(Client(), study, f"J-{via}")
        other = Attempt.objects.get(external_participant_id=f"J-{via}")
        if via == "page":
            response = researcher_client.post(reverse("studies:attempt_expire", args=[study.slug, other.pk]))
            assert response.status_code == 302
        else:
            response = researcher_client.post(f"/api/studies/{study.slug}/attempts/{other.pk}/expire/")
            assert response.status_code == 200 and response.json()["status"] == AttemptStatus.EXPIRED
        other.refresh_from_db()
        assert other.status == AttemptStatus.EXPIRED and other.started_at is None


def test_started_attempts_still_need_their_deadline(make_study):
    from django.db import IntegrityError, transaction

    study = make_study()
    _join(Client(), study, "K1")
    attempt = Attempt.objects.get(external_participant_id="K1")
    for status in (AttemptStatus.STARTED, AttemptStatus.FINISHED):
        with pytest.raises(IntegrityError), transaction.atomic():
            Attempt.objects.filter(pk=attempt.pk).update(status=status)
    assert not attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists()


@pytest.mark.parametrize("position", ["99999999999999999999", "-99999999999", "1e5", "NaN"])
def test_an_answer_to_an_impossible_position_is_a_404_never_a_500(make_study, position):
    study = make_study()
    client = Client()
    _join(client, study, "Q1")
    attempt = Attempt.objects.get(external_participant_id="Q1")
    client.post(reverse("studies_public:start", args=[attempt.token]))
    response = client.post(reverse("studies_public:answer", args=[attempt.token]),
                           {"position": position, "chosen_option": "0", "highlights": "[]"}, **HX)
    assert response.status_code == 404
    assert not attempt.responses.exists()


@pytest.mark.parametrize("field, value", [("chosen_option", "1\x00; DROP"), ("position", "\x00"),
                                          ("highlights", "[\x00]"), ("chosen_option", "\ud800")])
def test_an_answer_with_a_nul_or_a_lone_surrogate_in_a_field_is_a_400_and_stores_nothing(make_study, field, value):
    """Issue 19: a NUL (or a lone surrogate) in any form field is refused before the view, saying which field;
    the answer replayed with one is not stored as a refusal either (it never reaches the view)."""
    study = make_study()
    client = Client()
    _join(client, study, "N1")
    attempt = Attempt.objects.get(external_participant_id="N1")
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    position = question_open(attempt=attempt).lease.position
    url = reverse("studies_public:answer", args=[attempt.token])
    data = {"position": position, "chosen_option": "0", "highlights": "[]"}
    data.pop(field)
    body = urlencode(data) + f"&{field}=" + quote(value.encode("utf-8", "surrogatepass"))  # as a browser sends it
    response = client.post(url, body, content_type="application/x-www-form-urlencoded", **HX)
    assert response.status_code == 400
    assert f"{field}" in response.content.decode() and 'data-code="invalid_text"' in response.content.decode()
    assert not attempt.responses.exists() and not RefusedAnswer.objects.filter(attempt=attempt).exists()
    # The same answer without it is taken.
    assert client.post(url, {"position": position, "chosen_option": "0", "highlights": "[]"}, **HX).status_code == 200

"""The researchers' Prolific API (studies/prolific/apis.py): the connection names a variable, never a token; test,
reviews and bonus batches against the stand-in Prolific API."""
from __future__ import annotations

import pytest

from studies.prolific.models import ProlificSubmission
from tests.support.prolific_server import ProlificStandIn

SECRET = "whsec-unit"


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

"""The researcher's Prolific page against the stand-in Prolific API, as a researcher uses it: connect (a token
itself is refused, the variable's name is asked for), test the connection (Prolific's status and places shown
beside the app's counts), approve and reject submissions (a short reason refused, naming it), propose, approve
and send a bonus batch (sent by the worker's task; paid once), all without JavaScript."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from studies.prolific.models import BonusBatch, BonusBatchState, ProlificSubmission, SubmissionStatus
from studies.services import attempt_start, question_open, response_submit, study_join
from studies.tasks import send_bonus_batch
from tests.support.prolific_server import ProlificStandIn

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN, PSTUDY, SECRET = "token-page", "64f0c0ffee0000000000cafe", "whsec-page-0123456789"


def _messages(response) -> str:
    return " ".join(str(m) for m in response.context["messages"]) if response.context else ""


def test_a_researcher_connects_reviews_and_pays_bonuses_from_the_prolific_page(make_study, researcher_client,
                                                                              settings, monkeypatch, live_server):
    monkeypatch.setenv("PROLIFIC_PAGE_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    study = make_study(n_items=4, per_participant=4, raters=3, time_limit_seconds=3600,
                       bonus_per_correct=Decimal("0.20"), slug="prolific-page")
    page = reverse("studies:prolific", args=[study.slug])
    with ProlificStandIn(token=TOKEN, webhook_secret=SECRET,
                         webhook_url=f"{live_server.url}/studies/prolific/webhook/") as stand_in:
        settings.PROLIFIC_API_URL = stand_in.base_url
        stand_in.add_study(PSTUDY, places=3, name="Detective puzzles")
        first = researcher_client.get(page)
        assert first.status_code == 200 and "Not connected" in first.content.decode()
        assert 'id="prolific-link"' in researcher_client.get(reverse("studies:study_monitor", args=[study.slug])
                                                           ).content.decode()

        refused = researcher_client.post(page, {"prolific_study_id": PSTUDY, "token_env": TOKEN})
        assert refused.status_code == 400 and "never the token itself" in refused.content.decode()
        saved = researcher_client.post(page, {"prolific_study_id": PSTUDY, "token_env": "PROLIFIC_PAGE_TOKEN"},
                                       follow=True)
        assert "connection saved" in _messages(saved)
        tested = researcher_client.post(reverse("studies:prolific_test", args=[study.slug]), follow=True)
        assert "Connected: Prolific says" in _messages(tested) and "3 places" in _messages(tested)

        pids = [f"5f{n:022d}" for n in range(3)]
        for pid in pids:
            attempt = attempt_start(attempt_id=study_join(
                study=study, participant_id=pid, external_study_id=PSTUDY,
                session_id=stand_in.add_submission(PSTUDY, pid)).pk)
            while (question := question_open(attempt=attempt)) is not None:
                response_submit(token=attempt.token, position=question.lease.position,
                                chosen_option=question.lease.item.answer_index)
        submissions = list(stand_in.state.submissions)
        assert {status for _, status, _ in stand_in.deliver(
            [stand_in.set_status(sid, "AWAITING REVIEW") for sid in submissions])} == {200}
        assert set(ProlificSubmission.objects.values_list("status", flat=True)) == {SubmissionStatus.AWAITING_REVIEW}
        body = researcher_client.get(page).content.decode()
        assert all(sid in body for sid in submissions) and body.count("Reject on Prolific") == 3

        review = reverse("studies:prolific_review", args=[study.slug, submissions[0]])
        approved = researcher_client.post(review, {"action": "approve"}, follow=True)
        assert "approved on Prolific" in _messages(approved)
        assert stand_in.state.submissions[submissions[0]]["status"] == "APPROVED"
        reject = reverse("studies:prolific_review", args=[study.slug, submissions[1]])
        short = researcher_client.post(reject, {"action": "reject", "message": "too fast", "category": "LOW_EFFORT"},
                                       follow=True)
        assert "Reason for the participant" in _messages(short)
        assert stand_in.state.submissions[submissions[1]]["status"] != "REJECTED"

        proposed = researcher_client.post(reverse("studies:prolific_bonus_propose", args=[study.slug]), follow=True)
        batch = BonusBatch.objects.get(study=study)
        assert f"Bonus batch {batch.pk} proposed" in _messages(proposed) and batch.payments.count() == 3
        early = researcher_client.post(reverse("studies:prolific_bonus_send", args=[study.slug, batch.pk]),
                                       follow=True)
        assert "Only an approved batch can be sent" in _messages(early)
        researcher_client.post(reverse("studies:prolific_bonus_approve", args=[study.slug, batch.pk]))
        queued = researcher_client.post(reverse("studies:prolific_bonus_send", args=[study.slug, batch.pk]),
                                        follow=True)
        assert "being sent by the worker" in _messages(queued)
        assert send_bonus_batch(batch.pk) == BonusBatchState.SENT  # what the worker runs
        assert send_bonus_batch(batch.pk) == BonusBatchState.SENT  # a second delivery pays nothing more
        assert sorted(stand_in.paid_per_participant(PSTUDY).values()) == [1, 1, 1]
        assert "Sent" in researcher_client.get(page).content.decode()

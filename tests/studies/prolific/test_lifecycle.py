"""A 60-participant study against the stand-in Prolific API (tests/support/prolific_server.py), in one test:
returns and time-outs arrive as signed webhooks (some repeated, some out of order) and give their items back at
once; every item ends with exactly its 3 raters; no webhook is applied twice; a bonus batch whose sender loses the
pay call's answer after Prolific paid is reconciled, and every participant is paid exactly once at the stand-in;
a delivery with a wrong signature or an old timestamp is refused and changes nothing."""
from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal

import pytest
from django.db.models import Count

from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    Response,
    StudyItem,
)
from studies.prolific import services as prolific
from studies.prolific.errors import BonusBatchRefused, BonusOutcomeUnknown, SubmissionReviewRefused
from studies.prolific.models import (
    BonusBatchState,
    DeliveryOutcome,
    ProlificSubmission,
    ProlificWebhookDelivery,
    SubmissionStatus,
)
from studies.services import attempt_start, question_open, response_submit, study_join
from tests.support.prolific_server import ProlificStandIn

pytestmark = pytest.mark.django_db(transaction=True)

SECRET, TOKEN, PSTUDY = "whsec-test-0123456789", "token-abc", "64f0c0ffee0000000000beef"


@pytest.fixture
def stand_in(live_server, settings, monkeypatch):
    monkeypatch.setenv("PROLIFIC_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("PROLIFIC_TEST_TOKEN", TOKEN)
    with ProlificStandIn(token=TOKEN, webhook_secret=SECRET,
                         webhook_url=f"{live_server.url}/studies/prolific/webhook/") as server:
        settings.PROLIFIC_API_URL = server.base_url
        settings.PROLIFIC_API_TIMEOUT_S = 1.0
        yield server


def _answer_all(attempt: Attempt, index: int) -> None:
    """Answer every question; right on every other one, by participant, so that bonuses differ."""
    while (question := question_open(attempt=attempt)) is not None:
        right = question.lease.item.answer_index
        wrong = (right + 1) % len(question.lease.item.options)
        option = right if (index + question.lease.position) % 2 == 0 else wrong
        response_submit(token=attempt.token, position=question.lease.position, chosen_option=option)


def _state() -> tuple:
    """Everything a webhook could change."""
    return (sorted(Attempt.objects.values_list("pk", "status")),
            sorted(ParticipantLease.objects.values_list("pk", "status")),
            sorted(StudyItem.objects.values_list("pk", "load")),
            sorted(ProlificSubmission.objects.values_list("submission_id", "status")))


def test_sixty_participants_returns_time_outs_and_bonuses_paid_once(stand_in, make_study):
    started = time.monotonic()
    study = make_study(n_items=60, per_participant=4, raters=3, time_limit_seconds=3600,
                       bonus_per_correct=Decimal("0.25"), slug="prolific-life")
    prolific.connection_set(study_id=study.pk, prolific_study_id=PSTUDY, token_env="PROLIFIC_TEST_TOKEN")
    stand_in.add_study(PSTUDY, places=60, name="Detective puzzles")
    assert prolific.connection_test(study_id=study.pk).places == 60

    pids = [f"5f{n:022d}" for n in range(60)]
    sessions = [stand_in.add_submission(PSTUDY, pid) for pid in pids]
    attempts = [study_join(study=study, participant_id=pid, external_study_id=PSTUDY, session_id=session)
                for pid, session in zip(pids, sessions)]

    # 45 start and hold every slot (45 x 4 = 60 items x 3 raters); 15 of them will return or time out on Prolific.
    returns, time_outs, finishers, late = range(0, 10), range(10, 15), range(15, 45), range(45, 60)
    for i in range(45):
        attempts[i] = attempt_start(attempt_id=attempts[i].pk)
    for i in finishers:
        _answer_all(attempts[i], i)
    for i in late:  # the pool is taken: these wait
        assert attempt_start(attempt_id=attempts[i].pk).status == AttemptStatus.FULL
    assert set(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == {3}

    # Prolific's side: each dropout's submission was ACTIVE, then RETURNED or TIMED-OUT.
    events = {i: [stand_in.set_status(sessions[i], "ACTIVE"),
                  stand_in.set_status(sessions[i], "RETURNED" if i in returns else "TIMED-OUT")]
              for i in [*returns, *time_outs]}
    answers = []
    for i in range(0, 5):  # out of order: the RETURNED first, then the older ACTIVE
        answers += stand_in.deliver(events[i], reverse=True)
    for i in range(5, 10):  # in order, every delivery twice
        answers += stand_in.deliver(events[i], repeat=2)
    answers += stand_in.deliver([events[i][1] for i in time_outs], repeat=2, reverse=True)  # time-outs only, twice
    assert {status for _, status, _ in answers} == {200}
    slowest = max(seconds for _, _, seconds in answers)
    assert slowest < 5  # the items are back when the app answers the webhook

    for i in [*returns, *time_outs]:
        attempt = Attempt.objects.get(pk=attempts[i].pk)
        assert attempt.status == (AttemptStatus.RETURNED if i in returns else AttemptStatus.EXPIRED), i
        assert not attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists()
    assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 180 - 15 * 4

    # No event applied twice; the duplicates and the late ACTIVEs are logged as such.
    log = ProlificWebhookDelivery.objects.all()
    per_event = Counter(log.filter(outcome__in=["applied", "stale"]).values_list("event_id", flat=True))
    assert per_event and max(per_event.values()) == 1
    assert log.filter(outcome=DeliveryOutcome.DUPLICATE).count() == 10 + 5
    assert log.filter(outcome=DeliveryOutcome.STALE).count() == 5
    assert log.filter(outcome=DeliveryOutcome.APPLIED).count() == 5 + 10 + 5

    # A wrong signature, and a right one on an old timestamp (a replay), are refused and change nothing.
    victim = events[0][1]  # any event; re-signed below
    before = _state()
    wrong = stand_in.set_status(sessions[20], "RETURNED")
    assert stand_in.deliver([wrong], secret="not-the-secret")[0][1] == 401
    assert stand_in.deliver([wrong], sent_at=time.time() - 600)[0][1] == 403
    assert _state() == before
    assert not log.filter(outcome=DeliveryOutcome.REFUSED).exists()  # unverified: counted and logged, not stored
    assert Attempt.objects.get(pk=attempts[20].pk).status == AttemptStatus.FINISHED
    assert stand_in.deliver([victim])[0][1] == 200 and _state() == before  # a genuine re-delivery: a duplicate
    stand_in.state.submissions[sessions[20]]["status"] = "ACTIVE"  # the "return" above never happened at Prolific

    # The waiting participants get the returned items and finish: every item has exactly its 3 answers.
    for i in late:
        attempts[i] = attempt_start(attempt_id=attempts[i].pk)
        assert attempts[i].status == AttemptStatus.STARTED
        _answer_all(attempts[i], i)
    per_item = dict(Response.objects.filter(attempt__study=study).values_list("item").annotate(n=Count("id")))
    assert len(per_item) == 60 and set(per_item.values()) == {3}
    assert not ParticipantLease.objects.filter(attempt__study=study, status=ParticipantLeaseStatus.ACTIVE).exists()
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == 45

    # Reviews with Prolific's rules.
    finished = [stand_in.set_status(sessions[i], "AWAITING REVIEW") for i in [*finishers, *late]]
    assert {status for _, status, _ in stand_in.deliver(finished)} == {200}
    prolific.submission_approve(study_id=study.pk, submission_id=sessions[15])
    assert stand_in.state.submissions[sessions[15]]["status"] == "APPROVED"
    with pytest.raises(SubmissionReviewRefused):  # a TIMED-OUT submission cannot be approved
        prolific.submission_approve(study_id=study.pk, submission_id=sessions[10])
    with pytest.raises(SubmissionReviewRefused) as refusal:  # a rejection needs its reason
        prolific.submission_reject(study_id=study.pk, submission_id=sessions[16], message="", category="LOW_EFFORT")
    assert refusal.value.field == "message"
    assert ProlificSubmission.objects.get(submission_id=sessions[16]).status == SubmissionStatus.AWAITING_REVIEW

    # Bonuses: proposed from the rule, approved, then the pay call's answer is lost after the stand-in paid.
    batch = prolific.bonus_batch_propose(study_id=study.pk)
    payees = dict(batch.payments.values_list("participant_id", "amount"))
    assert len(payees) >= 40 and all(amount > 0 for amount in payees.values())
    assert prolific.bonus_batch_propose(study_id=study.pk) is None  # nobody is proposed twice
    with pytest.raises(BonusBatchRefused):  # not approved yet
        prolific.bonus_batch_send(batch_id=batch.pk)
    prolific.bonus_batch_approve(batch_id=batch.pk)
    stand_in.pay_then_hang_s = 2.5  # records the payment, then the answer never arrives within the 1 s time-out
    with pytest.raises(BonusOutcomeUnknown):
        prolific.bonus_batch_send(batch_id=batch.pk)
    batch.refresh_from_db()
    assert batch.state == BonusBatchState.SENDING and batch.prolific_bulk_id
    assert stand_in.paid_per_participant(PSTUDY) == Counter(payees.keys())  # Prolific did pay

    stand_in.pay_then_hang_s = 0
    batch = prolific.bonus_batch_send(batch_id=batch.pk)  # the restart: reconciled, not paid again
    assert batch.state == BonusBatchState.SENT and batch.reconciled
    with pytest.raises(BonusBatchRefused):
        prolific.bonus_batch_send(batch_id=batch.pk)
    paid = stand_in.paid_per_participant(PSTUDY)
    assert paid == Counter(payees.keys()) and set(paid.values()) == {1}
    assert len(stand_in.state.bulk) == 1
    amounts = {pid: amount for pid, amount, _ in stand_in.state.payments}
    assert amounts == payees
    print(f"\nlifecycle: {len(answers)} deliveries, slowest {slowest * 1000:.0f} ms; "
          f"{len(payees)} bonuses paid once; {time.monotonic() - started:.1f} s")

"""Bonus batches sent by a real Celery worker against the stand-in Prolific API: the worker is SIGKILLed after
Prolific recorded the payment but before its answer arrived, a new worker is started, and the periodic resume
finishes the batch by reconciling with Prolific: every participant is paid exactly once (counted at the
stand-in). The send API answers 202 and refuses a batch that may not be sent."""
from __future__ import annotations

import signal
import time
from collections import Counter
from decimal import Decimal

import pytest

from annotation.models import Item
from studies.prolific import services as prolific
from studies.prolific.models import BonusBatch, BonusBatchState
from studies.services import attempt_start, question_open, response_submit, study_join
from studies.tasks import resume_bonus_batches
from tests.conftest import start_celery_worker, subprocess_env
from tests.support.prolific_server import ProlificStandIn
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SECRET, TOKEN, PSTUDY = "whsec-worker-0123456789", "token-worker", "64f0c0ffee0000000000f00d"
CLAIM_S = 3  # how long a sender holds a batch, in the workers of this test (long enough for no call here)


def test_a_worker_killed_in_the_middle_of_a_bonus_batch_pays_everyone_exactly_once(
        make_study, researcher_client, tmp_path, monkeypatch, settings):
    monkeypatch.setenv("PROLIFIC_TEST_TOKEN", TOKEN)
    with ProlificStandIn(token=TOKEN, webhook_secret=SECRET) as stand_in:
        settings.PROLIFIC_API_URL = stand_in.base_url
        env = subprocess_env(PROLIFIC_API_URL=stand_in.base_url, PROLIFIC_TEST_TOKEN=TOKEN,
                             PROLIFIC_API_TIMEOUT_S="30", PROLIFIC_BONUS_CLAIM_S=str(CLAIM_S))
        study = make_study(n_items=8, per_participant=4, raters=3, time_limit_seconds=3600,
                           bonus_per_correct=Decimal("0.50"), slug="bonus-worker")
        prolific.connection_set(study_id=study.pk, prolific_study_id=PSTUDY, token_env="PROLIFIC_TEST_TOKEN")
        stand_in.add_study(PSTUDY, places=6)
        for n in range(6):
            pid = f"5f{n:022d}"
            attempt = study_join(study=study, participant_id=pid, external_study_id=PSTUDY,
                                 session_id=stand_in.add_submission(PSTUDY, pid))
            attempt = attempt_start(attempt_id=attempt.pk)
            while (question := question_open(attempt=attempt)) is not None:
                response_submit(token=attempt.token, position=question.lease.position,
                                chosen_option=question.lease.item.answer_index)  # all right: every bonus > 0
        batch = prolific.bonus_batch_propose(study_id=study.pk)
        payees = Counter(batch.payments.values_list("participant_id", flat=True))
        assert len(payees) == 6
        send = f"/api/studies/{study.slug}/prolific/bonus-batches/{batch.pk}/send/"
        refused = researcher_client.post(send)  # proposed, not approved: refused at once, nothing queued
        assert refused.status_code == 409 and "approved" in refused.json()["detail"]
        prolific.bonus_batch_approve(batch_id=batch.pk)

        worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
        try:
            stand_in.pay_then_hang_s = 20  # Prolific pays, then its answer does not come before the kill
            accepted = researcher_client.post(send)
            assert accepted.status_code == 202, accepted.content
            wait_until(lambda: sum(stand_in.paid_per_participant(PSTUDY).values()) == 6, 30, "Prolific to record the pay")
            worker.stop(signal.SIGKILL)  # the worker dies between Prolific's payment and the app's record of it
            killed_at = time.monotonic()  # the dead sender took its hold on the batch before this
        finally:
            worker.stop()
        batch.refresh_from_db()
        assert batch.state == BonusBatchState.SENDING and batch.prolific_bulk_id

        stand_in.pay_then_hang_s = 0
        again = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
        try:
            # The dead sender's hold runs out (the new worker's start took part of that time already).
            time.sleep(max(0.0, killed_at + CLAIM_S + 0.5 - time.monotonic()))
            resume_bonus_batches.delay()  # what beat does every STUDIES_SWEEP_INTERVAL_S
            wait_until(lambda: BonusBatch.objects.get(pk=batch.pk).state == BonusBatchState.SENT, 30, "the batch sent")
        finally:
            again.stop()
        paid = stand_in.paid_per_participant(PSTUDY)
    batch.refresh_from_db()
    assert batch.reconciled  # found paid at Prolific, not paid again
    assert paid == payees and set(paid.values()) == {1}, paid
    assert len(stand_in.state.bulk) == 1
    print(f"\nbonus batch: worker SIGKILLed after Prolific paid; {sum(paid.values())} payments for {len(payees)} "
          f"participants after the restart (send attempts {batch.send_attempts})")


# --------------------------------------------------------------------------- whose bonus is proposed, and when

def _answer_right(attempt, k: int) -> None:
    for _ in range(k):
        question = question_open(attempt=attempt)
        response_submit(token=attempt.token, position=question.lease.position,
                        chosen_option=Item.objects.get(pk=question.lease.item_id).answer_index)


def _connected_study(make_study):
    study = make_study(n_items=8, per_participant=4, raters=2, bonus_per_correct=Decimal("0.50"))
    prolific.connection_set(study_id=study.pk, prolific_study_id="p-study-1", token_env="PROLIFIC_TOKEN_X")
    return study


def _joined(study, pid):
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id=pid, session_id=f"S-{pid}").pk)
    attempt.refresh_from_db()
    return attempt


@pytest.mark.django_db
def test_a_running_attempt_is_proposed_only_once_it_has_ended_with_its_whole_bonus(make_study):
    """Proposed mid-way, an attempt was frozen in that batch at its bonus so far and skipped by every later proposal:
    underpaid for good. Now a running attempt waits, and every way of ending with answers (finished, expired,
    returned) is proposed once, in full."""
    from studies.services import attempt_expire, attempt_return

    study = _connected_study(make_study)
    ends = {"finished": lambda a: _answer_right(a, 3), "expired": lambda a: attempt_expire(attempt_id=a.pk),
            "returned": lambda a: attempt_return(attempt_id=a.pk)}
    attempts = {name: _joined(study, name) for name in ends}
    for attempt in attempts.values():
        _answer_right(attempt, 1)
    assert prolific.bonus_batch_propose(study_id=study.pk) is None  # everyone is still running
    for name, end in ends.items():
        end(attempts[name])
    batch = prolific.bonus_batch_propose(study_id=study.pk)
    paid = {p.participant_id: (p.correct, p.amount) for p in batch.payments.all()}
    assert paid == {"finished": (4, Decimal("2.00")), "expired": (1, Decimal("0.50")), "returned": (1, Decimal("0.50"))}
    assert batch.total == Decimal("3.00")
    assert prolific.bonus_batch_propose(study_id=study.pk) is None  # once


@pytest.mark.django_db
def test_a_batch_holding_a_running_or_screened_out_attempt_is_cleaned_before_approval_and_proposal(make_study):
    """A batch proposed before this rule may hold a running attempt: approving it takes that attempt out (it is proposed
    again in full once it has ended); a screened-out attempt is never paid."""
    from studies.prolific.models import BonusPayment
    from studies.services import attempt_screen_out

    study = _connected_study(make_study)
    running, done, screened = (_joined(study, pid) for pid in ("R", "D", "X"))
    for attempt in (running, done, screened):
        _answer_right(attempt, 1)
    _answer_right(done, 3)
    batch = BonusBatch.objects.create(study=study, currency="GBP", total=Decimal("3.00"))
    for attempt, correct in ((running, 1), (done, 4)):  # as the old proposal made it
        BonusPayment.objects.create(batch=batch, attempt=attempt, participant_id=attempt.external_participant_id,
                                    correct=correct, amount=Decimal("0.50") * correct)
    approved = prolific.bonus_batch_approve(batch_id=batch.pk)
    assert approved.state == BonusBatchState.APPROVED and approved.total == Decimal("2.00")
    assert list(approved.payments.values_list("participant_id", flat=True)) == ["D"]
    attempt_screen_out(attempt_id=screened.pk, reason="failed check", report=False)
    _answer_right(running, 3)
    second = prolific.bonus_batch_propose(study_id=study.pk)
    assert {p.participant_id: p.amount for p in second.payments.all()} == {"R": Decimal("2.00")}

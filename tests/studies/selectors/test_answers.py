"""The participants' answers as evaluation reads them: at the item's current version, with the questions shown at it
whose own time limit ran out (counted as not correct by the studies' results)."""
from __future__ import annotations

from datetime import timedelta

import pytest

from annotation.models import Item
from studies.models import Attempt
from studies.selectors.answers import response_outcomes
from studies.services import attempt_question, response_submit
from tests.studies.conftest import started_attempt

pytestmark = pytest.mark.django_db


def test_outcomes_carry_the_questions_that_timed_out_at_the_current_version(make_study):
    study = make_study(n_items=2, per_participant=2, raters=2, question_time_limit_seconds=30, grace_seconds=0)
    answering = started_attempt(study, "A")
    while (question := attempt_question(attempt=Attempt.objects.select_related("study").get(pk=answering.pk))):
        response_submit(token=answering.token, position=question.lease.position,
                        chosen_option=Item.objects.get(pk=question.lease.item_id).answer_index)
    waiting = started_attempt(study, "B")
    now = waiting.started_at
    for _ in range(2):
        now += timedelta(seconds=31)
        attempt_question(attempt=Attempt.objects.select_related("study").get(pk=waiting.pk), now=now)
    outcomes = response_outcomes(item_ids=list(study.pool.values_list("item_id", flat=True)))
    assert {(o.responses, o.correct, o.timed_out, o.counted) for o in outcomes.values()} == {(1, 1, 1, 2)}


def test_an_item_whose_every_question_timed_out_is_read_with_no_answer_right(make_study):
    """Evaluation's human row and figure divide by `counted`: an item nobody answered in time is 0 of its
    time-outs, not left out (which made the participants look better than the study's Table 3 says)."""
    study = make_study(n_items=1, per_participant=1, raters=1, question_time_limit_seconds=30, grace_seconds=0)
    waiting = started_attempt(study, "C")
    attempt_question(attempt=Attempt.objects.select_related("study").get(pk=waiting.pk),
                     now=waiting.started_at + timedelta(seconds=31))
    outcomes = response_outcomes(item_ids=list(study.pool.values_list("item_id", flat=True)))
    assert [(o.responses, o.correct, o.timed_out, o.counted) for o in outcomes.values()] == [(0, 0, 1, 1)]

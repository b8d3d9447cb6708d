"""A study's results: Table 3 counts a question whose own time ran out as not correct, and every per-item figure is
per (item, content version), compared with the key of that version (like for like)."""
from __future__ import annotations

from datetime import timedelta

import pytest

from annotation.models import Item
from annotation.services.items import item_update
from studies.models import Attempt, AttemptStatus
from studies.selectors.results import study_results
from studies.services import attempt_question, response_submit
from tests.studies.conftest import started_attempt

pytestmark = pytest.mark.django_db


def _key(item_id: int) -> int:
    return Item.objects.get(pk=item_id).answer_index


def _attempt(attempt):
    return Attempt.objects.select_related("study").get(pk=attempt.pk)


def test_a_question_that_timed_out_counts_as_not_correct_in_table3(make_study):
    """Two questions timed out, one answered right: 1/3, not a "top participant" with 1/1; the timed-out questions
    count in the per-item figures too."""
    study = make_study(n_items=6, per_participant=3, raters=1, question_time_limit_seconds=30, grace_seconds=0)
    attempt = started_attempt(study, "P1")
    now = attempt.started_at
    for _ in range(2):
        now += timedelta(seconds=31)
        attempt_question(attempt=_attempt(attempt), now=now)
    question = attempt_question(attempt=_attempt(attempt), now=now)
    response_submit(token=attempt.token, position=question.lease.position,
                    chosen_option=_key(question.lease.item_id), now=now + timedelta(seconds=1))
    results = study_results(study)
    assert _attempt(attempt).status == AttemptStatus.FINISHED
    (participant,) = results.participants
    assert (participant.answered, participant.correct, participant.timed_out) == (1, 1, 2)
    assert participant.accuracy == pytest.approx(1 / 3)
    assert (results.table3.n, results.table3.top) == (1, pytest.approx(1 / 3))
    assert results.n_timed_out == 2
    timed_out_rows = [row for row in results.items if row.timed_out]
    assert len(timed_out_rows) == 2 and all(row.accuracy == 0 and row.version == 1 for row in timed_out_rows)


def test_an_attempt_that_timed_out_everywhere_is_not_a_finished_participant(make_study):
    study = make_study(n_items=6, per_participant=2, raters=1, question_time_limit_seconds=30, grace_seconds=0)
    attempt = started_attempt(study, "P1")
    now = attempt.started_at
    for _ in range(2):
        now += timedelta(seconds=31)
        attempt_question(attempt=_attempt(attempt), now=now)
    results = study_results(study)
    assert _attempt(attempt).status == AttemptStatus.EXPIRED
    assert results.table3.n == 0 and (results.table3_all.n, results.table3_all.top) == (1, 0)


def _answer_everything(study, pids, option=lambda item_id: _key(item_id)):
    for pid in pids:
        attempt = started_attempt(study, pid)
        while (question := attempt_question(attempt=_attempt(attempt))) is not None:
            response_submit(token=attempt.token, position=question.lease.position,
                            chosen_option=option(question.lease.item_id))


def test_per_item_figures_are_per_content_version_against_that_versions_key(make_study):
    """Two raters answered version 1 right; the key is then changed (version 2) and a third answers version 2 with
    the new key. Version 1's row: accuracy 1, majority right (against version 1's key, not the current one);
    version 2's row: its own answer; kappa only over a (item, version) with all its raters."""
    study = make_study(n_items=3, per_participant=3, raters=3)
    _answer_everything(study, ["A", "B"])
    item = Item.objects.get(pk=study.pool.order_by("position").first().item_id)
    old_key, new_key = item.answer_index, (item.answer_index + 1) % len(item.options)
    item_update(item_id=item.pk, base_version=item.version, changes={"answer_index": new_key})
    _answer_everything(study, ["C"])
    results = study_results(study)
    rows = {row.version: row for row in results.items if row.study_item.item_id == item.pk}
    assert set(rows) == {1, 2}
    assert (rows[1].chosen, rows[1].key, rows[1].accuracy, rows[1].majority_correct) == \
        ([old_key, old_key], old_key, 1.0, True)
    assert (rows[2].chosen, rows[2].key, rows[2].accuracy, rows[2].majority_correct) == ([new_key], new_key, 1.0, True)
    others = [row for row in results.items if row.study_item.item_id != item.pk]
    assert all(row.version == 1 and len(row.chosen) == 3 for row in others)
    assert results.kappa_items == len(others)  # the curated item's answers are split: no version has all raters
    assert results.majority_accuracy == 1.0

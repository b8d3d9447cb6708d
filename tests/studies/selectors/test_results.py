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


def _reword_and_reject(study, editor=None):
    """The first pool item reworded (a new content version), the second rejected (deleted)."""
    from annotation.models import ItemStatus

    reworded, rejected = (Item.objects.get(pk=pk) for pk in
                          study.pool.order_by("position").values_list("item_id", flat=True)[:2])
    item_update(item_id=reworded.pk, base_version=reworded.version, user=editor,
                changes={"question": reworded.question + " Who?"})
    item_update(item_id=rejected.pk, base_version=rejected.version, changes={}, status=ItemStatus.REJECTED)
    return reworded, rejected


def test_accuracy_counts_current_answers_and_counts_stale_and_deleted_apart(make_study):
    """A answers all four right, B the first two wrong: Table 3 is (1 + 0.5) / 2. The first item is reworded and the
    second rejected: both leave the accuracy figures (B is now 2/2), are counted apart, and their rows say so; the
    bonus still pays for every correct answer."""
    study = make_study(n_items=4, per_participant=4, raters=2, bonus_per_correct="0.10")
    first_two = list(study.pool.order_by("position").values_list("item_id", flat=True)[:2])
    _answer_everything(study, ["A"])
    _answer_everything(study, ["B"], option=lambda item_id: _key(item_id) if item_id not in first_two
                       else (_key(item_id) + 1) % 4)
    before = study_results(study)
    assert before.table3.average == pytest.approx(0.75) and before.states["current"].counted == 8
    reworded, rejected = _reword_and_reject(study)
    results = study_results(study)
    assert results.table3.average == 1.0 and results.table3.n == 2
    assert {s: (c.answers, c.correct, c.items) for s, c in results.states.items()} == {
        "current": (4, 4, 2), "stale": (2, 1, 1), "deleted": (2, 1, 1)}
    assert results.pooled_accuracy == 1.0
    b = next(p for p in results.participants if p.attempt.external_participant_id == "B")
    assert (b.answered, b.correct, b.counted, b.counted_correct, b.stale, b.deleted) == (4, 2, 2, 2, 1, 1)
    assert b.accuracy == 1.0 and b.bonus == 2 * study.bonus_per_correct
    rows = {row.study_item.item_id: row for row in results.items}
    assert (rows[reworded.pk].state.state, rows[reworded.pk].state.changed_fields) == ("stale", ["question"])
    assert rows[reworded.pk].state.current_version == 2 and rows[reworded.pk].version == 1
    assert rows[rejected.pk].state.state == "deleted"
    assert {row.state.state for pk, row in rows.items() if pk not in (reworded.pk, rejected.pk)} == {"current"}


def test_the_pooled_current_accuracy_is_the_leaderboards_humans_row(make_study):
    """With a model run over the whole split, the study's answers given, then one item reworded and another rejected:
    the leaderboard's Humans row and the study's pooled accuracy over current answers count the same answers."""
    from evaluation.selectors.leaderboard import leaderboard
    from evaluation.services import runs as run_services
    from tests.evaluation.conftest import compute_rows

    study = make_study(n_items=6, per_participant=3, raters=2)
    compute_rows(run_services.run_launch(endpoint=run_services.endpoint_for_cli(builtin="first-option"),
                                         method="naive", split="test", enqueue=False))
    _answer_everything(study, ["A", "B"])
    _answer_everything(study, ["C", "D"], option=lambda item_id: 0)
    _reword_and_reject(study)
    results = study_results(study)
    humans = next(b for b in leaderboard(split="test").baselines if b.key == "humans").cells[0]
    assert (humans.n, humans.value) == (results.states["current"].counted, results.pooled_accuracy)
    assert results.states["stale"].answers == 2 and results.states["deleted"].answers == 2


def test_kappa_takes_an_option_an_edit_removed_since(make_study):
    """Every rater chose the last option; then every item lost its last option (a new content version). Fleiss'
    kappa still counts the earlier answers at their own content (it used to fail on the option no item has now)."""
    study = make_study(n_items=3, per_participant=3, raters=3)
    _answer_everything(study, ["A", "B", "C"], option=lambda item_id: len(Item.objects.get(pk=item_id).options) - 1)
    for item in Item.objects.filter(pk__in=study.pool.values_list("item_id", flat=True)):
        item_update(item_id=item.pk, base_version=item.version,
                    changes={"options": item.options[:-1], "answer_index": 0})
    results = study_results(study)
    assert results.kappa_items == 3
    assert all(row.chosen == [3, 3, 3] or len(set(row.chosen)) == 1 for row in results.items)

"""The leaderboard's human row (evaluation/selectors/humans.py): its interval takes the item as the unit, since the
participants who answered one item share its difficulty. Simulated with known truth; the cells themselves are
read from the studies in tests/evaluation/selectors/test_leaderboard.py."""
import numpy as np
import pytest

from evaluation.selectors.humans import HumanCell
from evaluation.statistics.paired import wilson
from tests.studies.conftest import items, make_study  # noqa: F401  (fixtures: a study over real items)


def _cell(correct, answers) -> HumanCell:
    return HumanCell(items=len(answers), responses=int(sum(answers)), correct=int(sum(correct)),
                     per_item=tuple(zip((int(c) for c in correct), (int(n) for n in answers))))


@pytest.mark.parametrize("items,raters,concentration", [(100, 3, 2.0), (250, 3, 1.0), (60, 5, 1.0)])
def test_the_human_interval_covers_with_raters_who_share_an_items_difficulty(items, raters, concentration):  # noqa: F811
    """Each item's chance of a right answer ~ Beta(0.6 c, 0.4 c) (people's mean accuracy 0.6; raters of one item
    correlated, ICC 1 / (c + 1)). Wilson's over the answers covered 0.73-0.88; 500 rounds: at least 90%."""
    rng = np.random.default_rng(items + raters)
    covered = 0
    for _ in range(500):
        right = rng.binomial(raters, rng.beta(0.6 * concentration, 0.4 * concentration, items))
        low, high = _cell(right, [raters] * items).interval
        covered += low <= 0.6 <= high
    print(f"{items} items x {raters} raters (ICC {1 / (concentration + 1):.2f}): coverage {covered / 500:.3f}")
    assert covered / 500 >= 0.90


def test_the_human_interval_at_the_edges():
    assert _cell([1] * 30, [1] * 30).interval == pytest.approx(wilson(30, 30))  # one rater per item: Wilson's
    low, high = _cell([3] * 30, [3] * 30).interval  # every answer right: no narrower than Wilson's on the items
    assert high == pytest.approx(1.0) and low == pytest.approx(wilson(30, 30)[0])
    assert _cell([2], [3]).interval == (None, None)  # one item: no spread between items to see
    assert _cell([], []).interval == (None, None) and _cell([], []).accuracy is None


@pytest.mark.django_db
def test_the_human_row_counts_a_question_whose_time_ran_out_as_not_correct(make_study):  # noqa: F811
    """As the study's Table 3 does: one participant answers right, another lets the question's time run out."""
    from datetime import timedelta

    from annotation.models import Item
    from evaluation.selectors.humans import item_answers
    from studies.models import Attempt
    from studies.services import attempt_question, response_submit
    from tests.studies.conftest import started_attempt

    study = make_study(n_items=1, per_participant=1, raters=2, question_time_limit_seconds=30, grace_seconds=0)
    right = started_attempt(study, "R")
    question = attempt_question(attempt=Attempt.objects.select_related("study").get(pk=right.pk))
    response_submit(token=right.token, position=question.lease.position,
                    chosen_option=Item.objects.get(pk=question.lease.item_id).answer_index)
    late = started_attempt(study, "L")
    attempt_question(attempt=Attempt.objects.select_related("study").get(pk=late.pk),
                     now=late.started_at + timedelta(seconds=31))
    item = Item.objects.get(pk=question.lease.item_id)
    assert item_answers(item_ids=[item.pk]) == {(item.pk, item.content_version): (1, 2)}

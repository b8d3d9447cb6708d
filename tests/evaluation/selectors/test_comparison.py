"""Two runs compared (evaluation.selectors.comparison), held to the leaderboard and the figures: rejected (deleted)
items are left out of all three by one rule (the leaderboard's), each says how many, and on the same runs the three
count the same items and the same accuracies. Runs of every answer format (multiple choice in the original and the
circular option order, free text) over random items, with random items rejected after they ran."""
import itertools
import random

import pytest

from annotation.models import Item
from annotation.services import item_update
from evaluation.selectors.analysis import figure_data, figure_inputs
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from tests.evaluation.formats_support import FORMATS, split_item_ids

pytestmark = pytest.mark.django_db

@pytest.fixture
def item_ids(detectbench_dir):
    return split_item_ids(detectbench_dir, limit=30)


def _reject(item_id: int) -> None:
    item = Item.objects.get(pk=item_id)
    item_update(item_id=item_id, base_version=item.version, changes={}, status="rejected", note="deleted")


def _deleted(n: int) -> str:
    return f"{n} deleted item(s) left out"


def _check_two(a, b, asked, rejected, cells) -> None:
    """Compare on two runs: its pairs are the leaderboard's common items, and it says how many deleted items of those
    either run answered it left out (what the pairs and the two "only in" counts do not hold)."""
    c = run_comparison(a=a, b=b)
    only_a, only_b = asked[a.pk] - asked[b.pk] - rejected, asked[b.pk] - asked[a.pk] - rejected
    assert (c.paired.n, c.paired.ref_only, c.paired.other_only) == (
        len(asked[a.pk] & asked[b.pk] - rejected), len(only_a), len(only_b))
    assert c.rejected_items == c.as_json()["rejected_items"] == len((asked[a.pk] | asked[b.pk]) & rejected)
    # The accuracies on the pairs are the leaderboard cells' on the common items (circular: right in every rotation).
    for run, accuracy in ((a, c.as_json()["accuracy_a"]), (b, c.as_json()["accuracy_b"])):
        cell = cells[run.pk]
        expected = cell.circular_accuracy if run.rotations > 1 else cell.metrics.accuracy
        assert accuracy == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(3))
def test_leaderboard_figures_and_compare_leave_out_the_same_deleted_items(item_ids, compute, seed):
    rng = random.Random(seed)
    runs, asked = [], {}
    for model, method, order in FORMATS:
        ids = sorted(rng.sample(item_ids, rng.randint(20, len(item_ids))))
        runs.append(compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method=method,
                                                split="test", ids=ids, option_order=order, enqueue=False)))
        asked[runs[-1].pk] = set(ids)
    choice = [r for r in runs if r.method != "free-text"]  # what the figures and Compare take
    rejected: set[int] = set()
    left_out = []  # the deleted items each comparison left out: the cases are not all empty
    for _ in range(3):  # more items rejected each round, some of them asked by no run or by one only
        for pk in set(rng.sample(item_ids, rng.randint(1, 3))) - rejected:
            _reject(pk)
            rejected.add(pk)
        for chosen in [*itertools.combinations(choice, 2), choice]:
            common = set.intersection(*(asked[r.pk] for r in chosen))
            expected = sorted(common - rejected)
            table = leaderboard(run_ids=[r.pk for r in chosen])
            inputs = figure_inputs(split="test", run_ids=[r.pk for r in chosen])
            assert table.item_ids == expected == sorted(inputs.facts)
            assert table.common_items == inputs.selection.items == len(expected)
            gone = len(common & rejected)
            assert table.rejected_items == gone
            left_out.append(gone)
            assert (_deleted(gone) in inputs.selection.text()) == bool(gone) == (_deleted(gone) in table.scope)
            cells = {c.run.pk: c for c in table.cells}
            for rows in inputs.runs:
                assert sorted({item for item, _ in rows.rows}) == expected
                assert rows.accuracy == pytest.approx(cells[rows.run_id].metrics.accuracy)
            if len(chosen) == 2:
                _check_two(*chosen, asked, rejected, cells)
        # Every format in one table: the free-text cell on the same items as the others, deleted ones left out.
        everything = set.intersection(*asked.values())
        table = leaderboard(run_ids=[r.pk for r in runs])
        assert table.item_ids == sorted(everything - rejected) and table.rejected_items == len(everything & rejected)
        free_text = next(c for c in table.cells if c.method == "free-text")
        assert free_text.metrics.n == len(everything - rejected)
    assert any(left_out)
    # A figure's own note says it too.
    data = figure_data("keyinfo-accuracy", split="test", run_ids=[r.pk for r in choice])
    gone = len(set.intersection(*(asked[r.pk] for r in choice)) & rejected)
    assert (_deleted(gone) in data.note) == bool(gone)

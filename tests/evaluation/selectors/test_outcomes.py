"""The items common to runs (evaluation.selectors.outcomes.common_item_ids), whatever the runs' answer formats: an item
is common when every run answered it, fresh: a multiple-choice run (original or circular option order) with a scored
row of it, a free-text run with a row without error (its rows are never scored in the row: the judge grades them,
a missing answer counting as wrong). "Common items only" in the leaderboard (``common=on``, ``--common``) and chosen
runs (``--runs``) take those items, and every cell, free text too, is counted on all of them."""
import random

import pytest

from evaluation.models import Result
from evaluation.selectors.leaderboard import leaderboard
from evaluation.selectors.outcomes import common_item_ids
from evaluation.services import runs as services
from tests.evaluation.formats_support import FORMATS, split_item_ids

pytestmark = pytest.mark.django_db

@pytest.fixture
def item_ids(detectbench_dir):
    return split_item_ids(detectbench_dir, limit=24)


def _runs_on_random_items(item_ids, compute, rng):
    """One finished run per format over a random subset of the items, a few of its items failed for good (every row
    an infrastructure error: not an answer in any format); with the items each run answered."""
    runs, answered = [], {}
    for model, method, order in FORMATS:
        asked = sorted(rng.sample(item_ids, rng.randint(16, len(item_ids))))
        run = compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method=method,
                                          split="test", ids=asked, option_order=order, enqueue=False))
        failed = rng.sample(asked, rng.randint(0, 3))
        Result.objects.filter(run=run, item_id__in=failed).update(error="HTTP 500", is_correct=None)
        runs.append(run)
        answered[run.pk] = set(asked) - set(failed)
    return runs, answered


def _cell_items(cell) -> int:
    """The items a cell counted: its circular verdicts with several rows per item, else its rows."""
    return cell.circular[1] if cell.run.rotations > 1 else cell.metrics.n


@pytest.mark.parametrize("seed", range(4))
def test_the_common_items_are_those_every_run_answered_free_text_included(item_ids, compute, seed):
    rng = random.Random(seed)
    runs, answered = _runs_on_random_items(item_ids, compute, rng)
    free_text = next(r for r in runs if r.method == "free-text")
    assert not Result.objects.filter(run=free_text, is_correct__isnull=False).exists()  # never scored in the row
    expected = sorted(set.intersection(*answered.values()))
    assert expected
    assert common_item_ids(runs) == expected
    for size in range(1, len(runs) + 1):  # any choice of runs: the items all of them answered
        chosen = rng.sample(runs, size)
        assert common_item_ids(chosen) == sorted(set.intersection(*(answered[r.pk] for r in chosen)))

    # Chosen runs (`--runs`): every cell, the free-text one too, on exactly the common items.
    table = leaderboard(run_ids=[r.pk for r in runs])
    assert table.item_ids == expected and table.common_items == len(expected)
    assert {c.run.pk: _cell_items(c) for c in table.cells} == {r.pk: len(expected) for r in runs}

    # Common items only (`common=on`) over a split's cells: the three cells of the original option order.
    original = [r for r in runs if r.option_order == "original"]
    table = leaderboard(split="test", common=True)
    shared = sorted(set.intersection(*(answered[r.pk] for r in original)))
    assert sorted(c.run.pk for c in table.cells) == sorted(r.pk for r in original)
    assert table.item_ids == shared and table.common_items == len(shared) > 0
    assert all(c.metrics.n == len(shared) for c in table.cells)
    assert f"the {len(shared)} items common to every cell" in table.scope

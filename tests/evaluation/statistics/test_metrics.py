"""A run's metrics (evaluation/statistics/metrics.py, no database): accuracy with parse failures, wrong answers and
errors counted apart, the interval with the item as the unit (simulated coverage), cost only with a price."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.statistics.metrics import RowScore, accuracy_interval, cost, item_wilson, summarize
from evaluation.statistics.paired import wilson


def test_summarize_counts_parse_failures_wrong_and_errors_apart():
    rows = [
        RowScore(1, True, "ok", 0.5, True), RowScore(2, False, "ok", 0.1, False),
        RowScore(3, False, "missing", 0.0, True), RowScore(4, None, "", None, False, error=True),
    ]
    m = summarize(rows)
    assert (m.n, m.errors, m.correct) == (3, 1, 1)
    assert m.accuracy == pytest.approx(1 / 3)
    assert m.accuracy_parsed == pytest.approx(1 / 2)
    assert m.parse_failures == 1 and m.parse_failure_rate == pytest.approx(1 / 3)
    assert m.keyinfo == pytest.approx(0.2)
    assert m.first_option_baseline == pytest.approx(2 / 3)


def test_the_interval_with_several_rows_per_item_never_collapses():
    """The item bootstrap gave (1.0, 1.0) for 20 items x 3 samples all right and (0.6, 0.6) for one item x 5: now
    never narrower than Wilson's on the items, none from one item, Wilson's on the rows with one row per item."""
    assert accuracy_interval([[1.0] * 3] * 20) == pytest.approx(wilson(20, 20))
    assert accuracy_interval([[0.0] * 3] * 20) == pytest.approx(wilson(0, 20))
    assert accuracy_interval([[1.0, 1.0, 1.0, 0.0, 0.0]]) == (None, None)
    assert accuracy_interval([[1.0]] * 12 + [[0.0]] * 8) == pytest.approx(wilson(12, 20))
    assert accuracy_interval([]) == (None, None)
    rng = np.random.default_rng(1)
    for _ in range(50):
        groups = [list((rng.random(3) < 0.8).astype(float)) for _ in range(15)]
        low, high = accuracy_interval(groups)
        share = sum(map(sum, groups)) / 45
        items_low, items_high = wilson(share * 15, 15)
        assert low <= share <= high and high - low >= items_high - items_low - 1e-9


@settings(max_examples=300, deadline=None)
@given(items=st.integers(1, 5000), rows=st.integers(1, 6), right=st.booleans())
def test_the_interval_of_a_share_of_0_or_1_ends_exactly_at_0_or_1(items, rows, right):
    """All items all right (or all wrong), one row each or several: the interval reaches exactly 1 (0), never
    0.9999999999999999 or 2.8e-17 (20 items x 3 samples all right gave the first; the leaderboard wrote it)."""
    low, high = accuracy_interval([[1.0 if right else 0.0] * rows] * items)
    if items == 1 and rows > 1:
        assert (low, high) == (None, None)  # one item: no spread between items to see
    elif right:
        assert high == 1.0 and 0.0 < low < 1.0
    else:
        assert low == 0.0 and 0.0 < high < 1.0


@pytest.mark.parametrize("items,samples,mean", [(10, 3, 0.95), (12, 5, 0.9), (100, 3, 0.6)])
def test_the_interval_with_several_samples_per_item_covers_the_models_accuracy(items, samples, mean):
    """Items of varying difficulty (each item's chance of a right sample ~ Beta with the given mean, concentration
    4), several samples each: the model's accuracy over the item population. The item bootstrap covered 0.72 (10
    items x 3, accuracy 0.95) and 0.90 (12 x 5, 0.9) and gave intervals of zero width; 400 rounds: at least 90%."""
    rng = np.random.default_rng(items * samples)
    covered = 0
    for _ in range(400):
        p = rng.beta(mean * 4, (1 - mean) * 4, items)
        counts = rng.binomial(samples, p)
        low, high = item_wilson(list(counts.astype(float)), [samples] * items)
        covered += low <= mean <= high
    print(f"{items} items x {samples} samples, accuracy {mean}: coverage {covered / 400:.3f}")
    assert covered / 400 >= 0.90


def test_cost_only_with_a_price():
    assert cost(tokens_in=1_000_000, tokens_out=500_000, price_in_per_mtok=None, price_out_per_mtok=None) is None
    assert cost(tokens_in=1_000_000, tokens_out=500_000, price_in_per_mtok=2, price_out_per_mtok=8) == pytest.approx(6.0)

"""A run's metrics (evaluation/statistics/metrics.py, no database): accuracy with parse failures, wrong answers and
errors counted apart, the seeded bootstrap interval, cost only with a price."""
import pytest

from evaluation.statistics.metrics import RowScore, bootstrap_ci, cost, summarize


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


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    groups = [[1.0]] * 60 + [[0.0]] * 40
    low, high = bootstrap_ci(groups)
    assert (low, high) == bootstrap_ci(groups)
    assert low < 0.6 < high and high - low < 0.25
    # Binomial standard error at p=.6, n=100 is ~0.049: the 95% interval is about +-0.096.
    assert high - low == pytest.approx(2 * 1.96 * 0.049, abs=0.03)
    assert bootstrap_ci([]) == (None, None)


def test_cost_only_with_a_price():
    assert cost(tokens_in=1_000_000, tokens_out=500_000, price_in_per_mtok=None, price_out_per_mtok=None) is None
    assert cost(tokens_in=1_000_000, tokens_out=500_000, price_in_per_mtok=2, price_out_per_mtok=8) == pytest.approx(6.0)

"""evaluation.judge.quality: the belief's spread, the position flips and the length bias, against scipy and
hand counts."""
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from annotation import trust
from evaluation.judge import quality


def test_spearman_equals_scipys_with_a_bonett_wright_interval():
    rng = np.random.default_rng(3)
    x = rng.integers(5, 400, size=80).tolist()
    y = (0.4 + 0.001 * np.asarray(x) + rng.normal(0, 0.2, size=80)).clip(0, 1).tolist()
    found = quality.spearman(x, y)
    expected = spearmanr(x, y)
    assert found.rho == pytest.approx(float(expected.statistic), abs=1e-15)
    assert found.p_value == pytest.approx(float(expected.pvalue), rel=1e-12)
    assert found.n == 80 and found.low < found.rho < found.high
    se = math.sqrt((1 + found.rho ** 2 / 2) / 77)
    assert found.high == pytest.approx(math.tanh(math.atanh(found.rho) + 1.959963984540054 * se))


def test_spearman_refuses_too_few_pairs_and_a_constant_side():
    assert quality.spearman([1, 2, 3], [1, 2, 3]).rho is None
    refused = quality.spearman(list(range(20)), [0.5] * 20)
    assert refused.rho is None and refused.n == 20 and refused.reason


def test_belief_spread_counts():
    beliefs = [0.995, 0.5, 0.6, 0.7, 1.0, 0.005, 0.55]
    spread = quality.belief_spread(beliefs)
    assert spread["n"] == 7 and spread["mean"] == pytest.approx(sum(beliefs) / 7)
    assert spread["extreme"] == 3 and spread["extreme_share"] == pytest.approx(3 / 7)
    assert spread["quantiles"]["0.5"] == pytest.approx(float(np.quantile(beliefs, 0.5)))
    assert sum(b["count"] for b in spread["histogram"]) == 7
    assert spread["histogram"][9]["count"] == 2 and spread["histogram"][0]["count"] == 1
    assert quality.belief_spread([])["n"] == 0


def test_position_flips_rate_interval_and_belief_change():
    flips = quality.position_flips([("a", "a"), ("a", "b"), ("b", "b"), ("b", "a")],
                                   [(0.9, 0.8), (0.9, 0.2), (None, 0.1), (0.3, 0.6)])
    assert (flips.n, flips.flips, flips.rate) == (4, 2, 0.5)
    assert flips.low < 0.5 < flips.high
    assert flips.n_belief == 3 and flips.mean_abs_change == pytest.approx((0.1 + 0.7 + 0.3) / 3)
    none = quality.position_flips([("a", "a")] * 30, [(0.9, 0.9)] * 30)
    assert none.rate == 0 and none.low == 0 and none.high > 0 and none.mean_abs_change == 0
    assert quality.position_flips([], []).rate is None


def test_length_bins_are_the_weighted_accuracy_of_each_quartile():
    lengths = list(range(1, 81))
    agree = [i % 4 != 0 for i in range(80)]
    weights = [1.0 if i % 2 else 3.0 for i in range(80)]
    bins = quality.length_bins(lengths, agree, weights)
    assert len(bins) == 4 and [b["from"] for b in bins] == [1, 21, 41, 61]
    first = [i for i, length in enumerate(lengths) if length <= 20]
    expected = trust.accuracy([agree[i] for i in first], [weights[i] for i in first], min_n=trust.MIN_LABELS)
    assert bins[0]["accuracy"] == expected.as_dict()
    assert quality.length_bins([], []) == []

"""evaluation.statistics.paired: pairing on shared keys, exact McNemar, Holm and Wilson, checked against statsmodels and scipy
on the same numbers (the module must add nothing of its own to the statistics)."""
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evaluation.statistics.paired import (
    Paired,
    holm,
    mcnemar_exact,
    mcnemar_exact_many,
    pair_outcomes,
    wilson,
    wilson_many,
)


def test_pairs_are_the_shared_keys_and_each_side_says_what_it_dropped():
    ref = {(1, 1): True, (2, 1): True, (3, 1): False, (4, 1): False, (5, 2): True}
    other = {(1, 1): True, (2, 1): False, (3, 1): True, (4, 1): False, (5, 1): True, (6, 1): False}
    p = pair_outcomes(ref, other)
    assert (p.both_right, p.ref_right_other_wrong, p.ref_wrong_other_right, p.both_wrong) == (1, 1, 1, 1)
    assert (p.ref_only, p.other_only, p.n, p.dropped) == (1, 2, 4, 3)  # item 5 at version 2 vs 1: no pair
    assert p.table() == [[1, 1], [1, 1]] and p.discordant == (1, 1)
    assert pair_outcomes({}, other).p_value is None


@pytest.mark.parametrize("b,c", [(0, 0), (0, 5), (3, 9), (12, 4), (40, 61), (150, 149), (7, 0)])
def test_exact_mcnemar_equals_statsmodels_and_the_binomial_test(b, c):
    ours = mcnemar_exact(b, c)
    # The concordant cells do not enter the exact test: any values give the same p.
    assert ours == mcnemar([[17, b], [c, 23]], exact=True).pvalue
    expected = 1.0 if b + c == 0 else min(1.0, 2 * binom.cdf(min(b, c), b + c, 0.5))
    assert ours == pytest.approx(expected, rel=1e-12)
    assert mcnemar_exact_many([(b, c), (c, b)]) == [ours, ours]  # the table's vectorised call: the same numbers


def test_paired_p_value_uses_the_discordant_pairs_of_random_outcomes():
    rng = random.Random(4)
    ref = {i: rng.random() < 0.6 for i in range(500)}
    other = {i: (ref[i] if rng.random() < 0.8 else not ref[i]) if i in ref else rng.random() < 0.5
             for i in range(40, 520)}
    p = pair_outcomes(ref, other)
    b = sum(1 for i in range(40, 500) if ref[i] and not other[i])
    c = sum(1 for i in range(40, 500) if not ref[i] and other[i])
    assert p.discordant == (b, c) and p.n == 460 and (p.ref_only, p.other_only) == (40, 20)
    assert p.p_value == mcnemar([[0, b], [c, 0]], exact=True).pvalue


def test_holm_equals_multipletests_and_keeps_untested_cells_empty():
    ps = [0.01, None, 0.04, 0.03, None, 0.2, 0.001, 0.03, 0.9, 0.6]
    present = [x for x in ps if x is not None]
    expected = iter(multipletests(present, method="holm")[1])
    assert holm(ps) == [None if x is None else pytest.approx(next(expected), abs=1e-15) for x in ps]
    rng = random.Random(3)
    for size in (1, 2, 7, 40, 169):
        sample = [rng.random() ** 3 for _ in range(size)]
        assert holm(sample) == pytest.approx(list(multipletests(sample, method="holm")[1]), abs=1e-15)
    assert holm([None, None]) == [None, None] and holm([]) == []
    assert holm([0.01, 0.02])[0] == pytest.approx(0.02)  # the smallest of two is doubled


@pytest.mark.parametrize("correct,n", [(0, 10), (10, 10), (571, 1196), (14, 24), (1, 3), (0, 7), (7, 7)])
def test_wilson_equals_statsmodels(correct, n):
    low, high = wilson(correct, n)
    assert (low, high) == pytest.approx(proportion_confint(correct, n, alpha=0.05, method="wilson"), abs=1e-12)
    assert low <= correct / n <= high
    assert wilson(0, 0) == (None, None)
    assert wilson_many([correct, 0], [n, 0]) == [(low, high), (None, None)]


@st.composite
def _successes(draw) -> tuple[int, int]:
    """(k, n): n in 1..10^6, k none, all, or any."""
    n = draw(st.integers(1, 10**6))
    return draw(st.one_of(st.just(0), st.just(n), st.integers(0, n))), n


@settings(max_examples=3000, deadline=None)
@given(_successes())
def test_wilson_bounds_are_in_0_1_exact_at_no_and_all_successes_and_statsmodels_otherwise(counts):
    """For 0 correct statsmodels gives a lower bound of 2.8e-17 (n = 7, 9, 14, ...), for all correct an upper bound
    of 0.9999999999999999: the leaderboard wrote them. Ours: exactly 0 and 1 there, within 1e-12 of statsmodels."""
    k, n = counts
    expected = proportion_confint(k, n, alpha=0.05, method="wilson")
    for low, high in (wilson(k, n), wilson(float(k), float(n)), wilson_many([k], [n])[0]):
        assert 0.0 <= low <= k / n <= high <= 1.0
        assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)
        assert abs(low - expected[0]) <= 1e-12 and abs(high - expected[1]) <= 1e-12


@settings(max_examples=200, deadline=None)
@given(st.lists(_successes(), min_size=1, max_size=30))
def test_wilson_many_is_wilson_of_each_exact_at_the_edges(many):
    """The leaderboard's one call for all its cells: each cell's own interval, ending at 0 or 1 exactly."""
    ks, ns = [k for k, _ in many], [n for _, n in many]
    intervals = wilson_many([*ks, 0], [*ns, 0])
    assert intervals == [*(wilson(k, n) for k, n in many), (None, None)]
    assert all((low == 0.0) == (k == 0) and (high == 1.0) == (k == n) for (k, n), (low, high) in zip(many, intervals))


def test_a_paired_result_is_a_value():
    assert Paired(1, 2, 3, 4, 0, 0).n == 10 and Paired(1, 2, 3, 4, 5, 6).dropped == 11

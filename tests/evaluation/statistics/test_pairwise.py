"""evaluation.statistics.pairwise: every pair's exact McNemar p equals an independent recomputation (a binomial test
on the discordant pairs, counted here key by key), the corrections equal statsmodels' multipletests, and the
humans-against-a-model test (item sign-flip, item bootstrap) equals brute force where brute force is possible."""
import itertools
import random

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

from evaluation.statistics.paired import adjust, benjamini_hochberg, mcnemar_exact
from evaluation.statistics.pairwise import (
    HUMANS,
    humans_vs_model,
    mcnemar_pairs,
    mean_ci,
    pairwise,
    sign_flip_p,
)


def _respondents(seed: int, count: int = 6, items: int = 300):
    """Respondents of different skill on overlapping (item, version) keys, some keys at another version."""
    rng = random.Random(seed)
    difficulty = [rng.random() for _ in range(items)]
    out = []
    for r in range(count):
        skill = 0.3 + 0.1 * r
        start, stop = rng.randrange(0, 40), items - rng.randrange(0, 40)
        out.append({(i, 2 if i % 17 == 0 and r % 2 else 1): rng.random() < skill + 0.4 * (0.5 - difficulty[i])
                    for i in range(start, stop)})
    return [f"m{r}@e" for r in range(count)], out


def _independent_p(a: dict, b: dict) -> tuple[int, int, int, float]:
    common = [k for k in a if k in b]
    b_count = sum(1 for k in common if a[k] and not b[k])
    c_count = sum(1 for k in common if not a[k] and b[k])
    p = 1.0 if b_count + c_count == 0 else binomtest(b_count, b_count + c_count, 0.5).pvalue
    return len(common), b_count, c_count, p


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_pair_p_equals_a_binomial_test_on_the_discordant_pairs(seed):
    labels, outcomes = _respondents(seed)
    tests = mcnemar_pairs(labels, outcomes)
    assert len(tests) == len(labels) * (len(labels) - 1) // 2
    for t in tests:
        a, b = outcomes[labels.index(t.a)], outcomes[labels.index(t.b)]
        n, b_count, c_count, p = _independent_p(a, b)
        assert (t.n, t.a_better, t.b_better) == (n, b_count, c_count)
        assert (t.a_only, t.b_only) == (len(a) - n, len(b) - n)
        assert t.p_value == pytest.approx(p, rel=1e-10, abs=1e-15)
        assert t.a_accuracy == pytest.approx(sum(a[k] for k in a if k in b) / n)
        assert t.difference == pytest.approx((b_count - c_count) / n)


@pytest.mark.parametrize("correction,method", [("holm", "holm"), ("bh", "fdr_bh")])
def test_the_correction_equals_multipletests_on_the_same_p_values(correction, method):
    labels, outcomes = _respondents(7, count=8)
    result = pairwise(labels, outcomes, correction=correction)
    raw = [t.p_value for t in result.tests]
    assert [t.p_adjusted for t in result.tests] == pytest.approx(list(multipletests(raw, method=method)[1]),
                                                                 abs=1e-14)
    print(f"\n{correction}: {sum(t.significant for t in result.tests)} of {len(raw)} pairs significant")
    assert any(t.significant for t in result.tests) and not all(t.significant for t in result.tests)


def test_benjamini_hochberg_equals_multipletests_and_keeps_untested_pairs_empty():
    rng = random.Random(5)
    for size in (1, 2, 3, 10, 45, 300):
        ps = [rng.random() ** 4 for _ in range(size)] + [1.0, 1.0]
        ps[0] = ps[-1] = 1.0  # ties
        assert benjamini_hochberg(ps) == pytest.approx(list(multipletests(ps, method="fdr_bh")[1]), abs=1e-15)
    assert benjamini_hochberg([0.01, None, 0.04]) == [pytest.approx(0.02), None, pytest.approx(0.04)]
    assert adjust([], "bh") == [] and adjust([None], "holm") == [None]
    with pytest.raises(ValueError):
        adjust([0.1], "bonferroni")


def test_sign_flip_is_exact_against_brute_force_for_few_items():
    rng = random.Random(11)
    for _ in range(20):
        d = [rng.choice([-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1]) for _ in range(rng.randrange(1, 15))]
        observed = abs(sum(d))
        hits = sum(abs(sum(s * x for s, x in zip(signs, d))) >= observed - 1e-9
                   for signs in itertools.product([-1, 1], repeat=len(d)))
        assert sign_flip_p(d) == pytest.approx(hits / 2 ** len(d), abs=1e-12)
    assert sign_flip_p([0, 0, 0]) == 1.0


def _exact_thirds(d) -> float:
    """The exact sign-flip p of d in thirds (three raters per item), by convolving each item's +-3|d| in integers."""
    steps = [round(3 * abs(x)) for x in d if abs(x) > 1e-12]
    dist = {0: 1.0}
    for v in steps:
        new = {}
        for s, w in dist.items():
            new[s + v] = new.get(s + v, 0) + w / 2
            new[s - v] = new.get(s - v, 0) + w / 2
        dist = new
    observed = abs(round(3 * sum(d)))
    return sum(w for s, w in dist.items() if abs(s) >= observed)


def test_sign_flip_monte_carlo_is_close_to_the_exact_p_and_seeded():
    rng = random.Random(2)
    for shift in (0.0, 0.08, 0.15):
        d = [max(-1.0, min(1.0, rng.choice([-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1]) + shift)) for _ in range(120)]
        d = [round(3 * x) / 3 for x in d]
        exact, estimate = _exact_thirds(d), sign_flip_p(d)
        print(f"\nshift {shift}: exact p {exact:.5f}, Monte Carlo {estimate:.5f}")
        assert estimate == pytest.approx(exact, abs=max(0.006, 4 * (exact * (1 - exact) / 20_000) ** 0.5))
        assert sign_flip_p(d) == estimate  # seeded


def test_with_one_rater_per_item_the_humans_test_is_exact_mcnemar():
    rng = random.Random(9)
    for size in (10, 14, 60, 200):
        humans = {(i, 1): (int(rng.random() < 0.7), 1) for i in range(size)}
        model = {(i, 1): rng.random() < 0.5 for i in range(size)}
        t = humans_vs_model(humans, model, model_label="m@e")
        b = sum(1 for k in model if humans[k][0] and not model[k])
        c = sum(1 for k in model if not humans[k][0] and model[k])
        assert (t.a_better, t.b_better) == (b, c)
        exact = mcnemar_exact(b, c)
        tolerance = 1e-12 if b + c <= 16 else 4 * (exact * (1 - exact) / 20_000) ** 0.5 + 1e-4
        assert t.p_value == pytest.approx(exact, abs=tolerance)


@pytest.mark.parametrize("people, model", [(0.97, 0.90), (0.9, 0.97), (0.7, 0.6), (1.0, 0.9)])
def test_the_interval_of_people_against_a_model_covers_from_ten_items_and_waits_below(people, model):
    """Known truth: items answered by 3 people each right with chance `people`, the model right with `model`.
    From 10 items on the interval covers the difference at least 94% of the time (2,000 rounds each at 10, 20 and
    50 items); below 10 items, and never zero-width, none is given (the bootstrap covered 27-86% there)."""
    rng = np.random.default_rng(int(people * 100 + model * 10))
    for n in (3, 5, 9):
        assert mean_ci([0.0] * n) is None and mean_ci(list(rng.uniform(-1, 1, n))) is None
    for n in (10, 20, 50):
        covered = 0
        for _ in range(2000):
            d = rng.binomial(3, people, n) / 3 - (rng.random(n) < model)
            low, high = mean_ci(list(d))
            assert high - low > 0.01 and -1.0 <= low <= high <= 1.0
            covered += low <= people - model <= high
        print(f"\npeople {people} vs model {model}, {n} items: coverage {covered / 2000:.3f}")
        assert covered / 2000 >= 0.94


def test_humans_join_the_family_against_every_cell():
    labels, outcomes = _respondents(4, count=3)
    rng = random.Random(1)
    humans = {(i, 1): (sum(rng.random() < 0.8 for _ in range(3)), 3) for i in range(0, 300, 2)}
    result = pairwise(labels, outcomes, correction="bh", humans=humans)
    assert result.labels == [HUMANS, *labels] and len(result.tests) == 3 + 3
    human_tests = [t for t in result.tests if t.a == HUMANS]
    for t, o in zip(human_tests, outcomes):
        common = [k for k in humans if k in o]
        assert t.n == len(common) and t.raters == 3 * len(common)
        assert t.a_accuracy == pytest.approx(np.mean([humans[k][0] / 3 for k in common]))
        assert t.ci95[0] < t.difference < t.ci95[1]
    raw = [t.p_value for t in result.tests]
    assert [t.p_adjusted for t in result.tests] == pytest.approx(list(multipletests(raw, method="fdr_bh")[1]))
    difference, p = result.matrix()
    assert difference[0][1] == pytest.approx(human_tests[0].difference) == -difference[1][0]
    assert p[0][1] == p[1][0] == human_tests[0].p_adjusted and difference[0][0] is None

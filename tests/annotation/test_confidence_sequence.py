"""The anytime-valid confidence sequences (annotation.confidence_sequence): the formulas, the look-ahead, and a
simulation with known truth showing that the interval reported when reviewing stops at a precision target covers
the truth at its nominal rate, where the fixed-n interval under the same optional stopping covers less."""
import math
import time

import numpy as np
import pytest

from annotation import confidence_sequence as cs


def _wilson(successes, n, z=1.959963984540054):
    """Wilson's 95% interval, vectorised (statsmodels' `proportion_confint(method="wilson")`)."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _bernstein_by_hand(x, alpha=0.05, c=0.5):
    """Theorem 2 of Waudby-Smith and Ramdas (the predictable plug-in empirical-Bernstein CS), term by term."""
    lows, highs, low, high = [], [], 0.0, 1.0
    total = squares = bets = weighted = penalty = 0.0
    mean_before, var_before = 0.5, 0.25
    for t, xi in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (var_before * t * math.log(1 + t))), c)
        penalty += 4 * (xi - mean_before) ** 2 * (-math.log(1 - lam) - lam) / 4
        bets += lam
        weighted += lam * xi
        margin = (math.log(2 / alpha) + penalty) / bets
        low, high = max(low, weighted / bets - margin, 0.0), min(high, weighted / bets + margin, 1.0)
        lows.append(low)
        highs.append(high)
        total += xi
        mean_before = (0.5 + total) / (t + 1)
        squares += (xi - mean_before) ** 2
        var_before = (0.25 + squares) / (t + 1)
    return lows, highs


def test_before_any_observation_the_sequence_is_the_unit_interval():
    s = cs.confidence_sequence([])
    assert (s.n, s.mean, s.low, s.high, s.half_width) == (0, None, 0.0, 1.0, 0.5)


def test_empirical_bernstein_is_theorem_2_term_by_term():
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, size=700)  # any [0, 1] quantity, not only yes/no
    lows, highs = cs.path(x, method="empirical_bernstein")
    expected_lows, expected_highs = _bernstein_by_hand(x)
    assert np.allclose(lows, expected_lows, atol=1e-12) and np.allclose(highs, expected_highs, atol=1e-12)


def test_the_hedged_sequence_is_the_set_of_means_where_the_capital_stays_below_one_over_alpha():
    rng = np.random.default_rng(5)
    x = (rng.random(120) < 0.75).astype(float)
    s = cs.confidence_sequence(x)

    def capital_ever_reached(m):  # the hedged capital process of Theorem 3 at candidate mean m, recomputed
        plus = minus = 0.0
        total = squares = 0.0
        mean_before, var_before = 0.5, 0.25
        for t, xi in enumerate(x, start=1):
            lam = math.sqrt(2 * math.log(2 / 0.05) / (var_before * t * math.log(1 + t)))
            plus += math.log(1 + min(lam, 0.5 / m) * (xi - m))
            minus += math.log(1 - min(lam, 0.5 / (1 - m)) * (xi - m))
            if 0.5 * math.exp(plus) + 0.5 * math.exp(minus) >= 1 / 0.05:
                return True
            total += xi
            mean_before = (0.5 + total) / (t + 1)
            squares += (xi - mean_before) ** 2
            var_before = (0.25 + squares) / (t + 1)
        return False

    inside = [m for m in np.linspace(0.01, 0.99, 99) if not capital_ever_reached(m)]
    assert inside, "the sequence holds some mean"
    # The grid interval is the set's hull widened by one grid step each side.
    assert s.low <= min(inside) and s.high >= max(inside)
    assert s.low >= min(inside) - 0.011 and s.high <= max(inside) + 0.011


@pytest.mark.parametrize("method", cs.METHODS)
def test_the_sequence_never_widens_and_holds_the_mean_of_steady_data(method):
    rng = np.random.default_rng(7)
    x = (rng.random(1500) < 0.3).astype(float)
    lows, highs = map(np.asarray, cs.path(x, method=method))
    assert (np.diff(lows) >= -1e-12).all() and (np.diff(highs) <= 1e-12).all()
    assert (lows <= highs).all() and lows[0] >= 0 and highs[0] <= 1
    assert lows[-1] < 0.3 < highs[-1]
    assert highs[-1] - lows[-1] < 0.12  # it does narrow: 1,500 observations, about 0.05 each side


def test_hedged_betting_is_narrower_than_empirical_bernstein_with_few_reviews():
    rng = np.random.default_rng(11)
    widths = {method: [] for method in cs.METHODS}
    for _ in range(20):
        x = (rng.random(60) < 0.8).astype(float)
        for method in cs.METHODS:
            widths[method].append(cs.confidence_sequence(x, method=method).half_width)
    assert np.mean(widths["hedged"]) < np.mean(widths["empirical_bernstein"])


def test_observations_outside_the_unit_interval_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cs.confidence_sequence([0.2, 1.5])
    with pytest.raises(ValueError, match="alpha"):
        cs.confidence_sequence([0.2], alpha=1.0)
    with pytest.raises(ValueError, match="method"):
        cs.confidence_sequence([0.2], method="wald")
    with pytest.raises(ValueError, match="between 0 and 0.5"):
        cs.more_needed([1, 0], 0.5)


@pytest.mark.parametrize("method", cs.METHODS)
def test_more_needed_is_the_count_that_reaches_the_target_if_the_mean_holds(method):
    rng = np.random.default_rng(13)
    x = list((rng.random(80) < 0.7).astype(float))
    more = cs.more_needed(x, 0.06, method=method)
    assert more is not None and more > 0
    share = (sum(x) + 0.5) / (len(x) + 1)
    continuation = [math.floor(i * share + 0.5) - math.floor((i - 1) * share + 0.5) for i in range(1, more + 1)]
    lows, highs = cs.path(x + continuation, method=method)
    assert (highs[-1] - lows[-1]) / 2 <= 0.06 < (highs[-2] - lows[-2]) / 2
    assert cs.more_needed(x + continuation, 0.06, method=method) == 0
    assert cs.more_needed(x, 0.001, method=method, limit=500) is None
    assert cs.first_reached(x + continuation, 0.06, method=method) == len(x) + more


def test_a_review_sequence_stopped_at_its_precision_target_covers_the_truth():
    """500 review rounds of a yes/no quantity with a known share p = 0.8; each stops at the first review where the
    sequence's half-width is at most 0.1. The interval it then reports covers p in at least 95% of rounds; the
    fixed-n (Wilson) interval at the same stopping time covers less, and one watched after every review misses
    p at some time in far more than 5% of rounds (what optional stopping exploits), the sequence in at most 5%."""
    started = time.monotonic()
    rounds, p, target, horizon, watched, first_look = 500, 0.8, 0.1, 1000, 300, 10
    rng = np.random.default_rng(2026)
    x = (rng.random((rounds, horizon)) < p).astype(float)
    stopped, covered, ever_missed = [], [], []
    for row in x:
        lows, highs = map(np.asarray, cs.path(row[:watched]))
        ever_missed.append(bool(((lows > p) | (highs < p)).any()))
        reached = np.flatnonzero((highs - lows) / 2 <= target)
        stop = int(reached[0]) + 1 if reached.size else cs.first_reached(row, target)
        assert stop is not None, "every round reaches the target within the horizon"
        s = cs.confidence_sequence(row[:stop]) if stop > watched else None
        stopped.append(stop)
        covered.append(s.low <= p <= s.high if s else lows[stop - 1] <= p <= highs[stop - 1])
    stopped = np.asarray(stopped)
    successes = np.cumsum(x, axis=1)
    w_low, w_high = _wilson(successes, np.arange(1, horizon + 1))
    at_stop = np.arange(rounds), stopped - 1
    naive_covered = (w_low[at_stop] <= p) & (p <= w_high[at_stop])
    looks = slice(first_look - 1, watched)
    naive_ever_missed = ((w_low[:, looks] > p) | (w_high[:, looks] < p)).any(axis=1)
    coverage, naive = float(np.mean(covered)), float(np.mean(naive_covered))
    print(f"\nconfidence sequence (hedged): coverage at the stop {coverage:.3f}, mean stopped n {stopped.mean():.1f} "
          f"(min {stopped.min()}, max {stopped.max()}), missed at some time up to n = {watched} "
          f"{np.mean(ever_missed):.3f}; fixed-n Wilson at the same stop: coverage {naive:.3f}, missed at some look "
          f"from n = {first_look} to {watched} {naive_ever_missed.mean():.3f}; {time.monotonic() - started:.1f} s")
    assert coverage >= 0.95
    assert naive < coverage
    assert np.mean(ever_missed) <= 0.05 < 0.2 <= naive_ever_missed.mean()


def test_in_the_queue_design_the_stopped_interval_covers_the_share_of_the_queue_labels():
    """The queue's design: 400 labels whose people's answer depends on the judge's belief, each with its audit key
    (uniform, fixed when recorded); the uniform sample grows in audit-key order whatever triage hands out in between
    (annotation.review_order), so the sequence runs over the labels' answers sorted by key, a draw without
    replacement from the queue. Stopped at half-width 0.1, the interval covers the share over the queue's own 400
    labels (the estimand the page names) in at least 95% of 300 rounds."""
    started = time.monotonic()
    rounds, labels, target = 300, 400, 0.1
    rng = np.random.default_rng(21)
    covered, stopped = [], []
    for _ in range(rounds):
        belief = rng.uniform(0.3, 1.0, labels)
        answers = (rng.random(labels) < belief).astype(float)  # people call the answer correct
        audit_key = rng.random(labels)
        in_key_order = answers[np.argsort(audit_key)]
        stop = cs.first_reached(in_key_order, target) or labels  # every label reviewed: the sequence ends there
        s = cs.confidence_sequence(in_key_order[:stop])
        stopped.append(stop)
        covered.append(s.low <= answers.mean() <= s.high)
    coverage = float(np.mean(covered))
    print(f"\nqueue design: coverage of the queue's share {coverage:.3f}, mean stopped uniform n {np.mean(stopped):.1f} "
          f"of {labels} labels; {time.monotonic() - started:.1f} s")
    assert coverage >= 0.95
    assert 50 < np.mean(stopped) < labels  # it does stop early, on far fewer reviews than labels

"""The calibration error's interval (annotation.calibration, pure): simulated with a known true ECE, it holds the
truth at every true ECE, 0 included, and keeps a width when every review agrees. The debiased estimate itself is
tested with the trust figures (tests/annotation/test_trust.py)."""
import numpy as np
import pytest

from annotation import calibration


def _coverage(rng, rounds: int, draw) -> tuple[float, float]:
    """The share of ``rounds`` intervals that hold the truth, and the narrowest one's width."""
    covered, narrowest = 0, 1.0
    for _ in range(rounds):
        beliefs, agree, truth = draw(rng)
        estimate = calibration.calibration_error(list(beliefs), list(agree), rounds=1000,
                                                 seed=int(rng.integers(1 << 30)))
        assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 1.0
        covered += estimate.low <= truth <= estimate.high
        narrowest = min(narrowest, estimate.high - estimate.low)
    return covered / rounds, narrowest


@pytest.mark.parametrize("n,gap", [(200, 0.0), (500, 0.0), (500, 0.02)])
def test_the_interval_holds_a_calibrated_judges_ece(n, gap):
    """Beliefs uniform on [0.5, 1), right with probability belief - gap (the binned ECE is the gap). A percentile
    bootstrap of the clipped estimate held a calibrated judge's 0 in about 40% of rounds; 200 rounds: >= 90%."""
    def draw(rng):
        beliefs = rng.uniform(0.5, 1.0, n)
        return beliefs, rng.random(n) < beliefs - gap, gap

    covered, _ = _coverage(np.random.default_rng(int(n + 1000 * gap)), 200, draw)
    print(f"n={n}, true ECE {gap}: coverage {covered:.3f}")
    assert covered >= 0.90


@pytest.mark.parametrize("belief,right,n", [(1.0, 0.97, 30), (1.0, 0.97, 100), (0.95, 0.99, 60)])
def test_the_interval_keeps_a_width_when_every_review_agrees(belief, right, n):
    """A judge stating one belief, right 97-99% of the time: many samples hold no disagreement, the bin's sample
    variance is 0, and the interval collapsed to [x, x] (trust page: 0.500 [0.500, 0.500]). 300 rounds: no
    interval of zero width, and the true ECE |belief - right| held in >= 90% of them."""
    def draw(rng):
        return [belief] * n, rng.random(n) < right, abs(belief - right)

    covered, narrowest = _coverage(np.random.default_rng(n), 300, draw)
    print(f"belief {belief}, right {right}, n={n}: coverage {covered:.3f}, narrowest {narrowest:.3f}")
    assert narrowest > 0.01
    assert covered >= 0.90


def test_one_label_and_every_review_agreeing_give_an_interval_around_the_value():
    for beliefs, agree in (([0.9], [True]), ([1.0], [True]), ([0.7] * 12, [False] * 12), ([0.5] * 40, [True] * 40)):
        estimate = calibration.calibration_error(beliefs, agree)
        assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 1.0
        assert estimate.high - estimate.low > 0.01, (beliefs[0], agree[0], estimate)
    assert calibration.calibration_error([0.8] * 20, [True] * 16 + [False] * 4) == \
        calibration.calibration_error([0.8] * 20, [True] * 16 + [False] * 4)  # seeded

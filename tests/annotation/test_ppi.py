"""Judge-powered estimates (annotation.ppi, pure): PPI++ for a share under the review queue's design (issue 21,
point 1). Tested against ppi_py where both apply (a uniform sample), and by simulation with known truth: queues
of 500 labels whose judge is right more often the more it believes, reviewed in triage order with the default
20% uniform share."""
import heapq
import random

import numpy as np
import pytest

from annotation import ppi
from annotation import review_order as ro


def judged_targets(rng: random.Random, n: int) -> list[dict]:
    """The judge's belief is uniform on [0.5, 1) and it is right with probability = its belief; the answers it is
    least sure of are the hard ones (right with probability 0.3 at belief 0.5, 0.9 at belief 1)."""
    targets = []
    for _ in range(n):
        belief = 0.5 + 0.5 * rng.random()
        truth = rng.random() < 0.3 + 1.2 * (belief - 0.5)
        judge_right = rng.random() < belief
        label = "correct" if truth == judge_right else "incorrect"
        targets.append({"y": float(truth), "belief": belief, "label": label, "u": rng.random(), "stream": None,
                        "f": ppi.prediction(label, belief, "correct", ("correct", "incorrect"))})
    return targets


def review(targets: list[dict], handouts: int, share: float = 0.2) -> list[float]:
    """Hand out as the queue does (triage order, a uniform share); the inclusion probability of every target."""
    by_key = [(ro.triage_key(t["belief"], t["u"]), i) for i, t in enumerate(targets)]
    by_u = [(t["u"], i) for i, t in enumerate(targets)]
    heapq.heapify(by_key)
    heapq.heapify(by_u)
    for number in range(1, handouts + 1):
        stream = ro.handout_stream(ro.TRIAGE, number, share)
        heap = by_u if stream == ro.RANDOM else by_key
        while targets[heap[0][1]]["stream"] is not None:
            heapq.heappop(heap)
        targets[heapq.heappop(heap)[1]]["stream"] = stream
    return ro.inclusion_probabilities([ro.Drawn(t["belief"], t["u"], t["stream"]) for t in targets])


def estimate(targets, pi, **kwargs):
    return ppi.powered_mean([t["f"] for t in targets], [t["y"] if t["stream"] else None for t in targets], pi,
                            **kwargs)


def test_uniform_sample_agrees_with_ppi_py():
    """Every target equally likely to be reviewed and few of them reviewed: the estimate is ppi_py's, with the
    same lambda (point estimate exact, interval to 1%), and with lambda tuned both ways nearly the same."""
    ppi_py = pytest.importorskip("ppi_py")
    rng = random.Random(3)
    targets = judged_targets(rng, 20000)
    rate = 0.01
    for t in targets:
        t["stream"] = ro.RANDOM if t["u"] < rate else None
    pi = [rate] * len(targets)
    reviewed = [t for t in targets if t["stream"]]
    y = np.array([t["y"] for t in reviewed])
    yhat = np.array([t["f"] for t in reviewed])
    everything = np.array([t["f"] for t in targets])
    for lam in (0.0, 0.5, 1.0):
        ours = estimate(targets, pi, lam=lam)
        low, high = ppi_py.ppi_mean_ci(y, yhat, everything, alpha=0.05, lam=lam)
        theirs = ppi_py.ppi_mean_pointestimate(y, yhat, everything, lam=lam)
        assert ours.value == pytest.approx(float(np.ravel(theirs)[0]), abs=1e-12)
        assert ours.half_width == pytest.approx((float(high[0]) - float(low[0])) / 2, rel=0.01)
    tuned = estimate(targets, pi)
    low, high = ppi_py.ppi_mean_ci(y, yhat, everything, alpha=0.05)
    assert 0 < tuned.lam <= 1
    assert tuned.low == pytest.approx(float(low[0]), abs=0.005) and tuned.high == pytest.approx(float(high[0]), abs=0.005)


def test_refusals_and_a_census():
    with pytest.raises(ValueError):
        ppi.powered_mean([0.5], [None, 1.0], [1.0])
    few = ppi.powered_mean([0.9] * 20, [1.0] * 5 + [None] * 15, [0.25] * 20)
    assert few.value is None and "5 reviewed target(s) were not certain to be reviewed" in few.reason
    unreachable = ppi.powered_mean([0.9] * 3, [1.0, None, None], [1.0, 0.0, 0.0])
    assert unreachable.value is None and "2 target(s) had no chance of review" in unreachable.reason
    # Every target reviewed, each certain to be: the estimate is the people's share exactly, no sampling error.
    census = ppi.powered_mean([0.9, 0.2, None], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    assert census.value == pytest.approx(2 / 3) and census.low == census.high == pytest.approx(2 / 3)
    assert ppi.prediction("incorrect", 0.8, "correct", ("correct", "incorrect")) == pytest.approx(0.2)
    assert ppi.prediction("draft", 0.7, "draft", ("draft", "edited", "discarded")) == 0.7
    assert ppi.prediction("", None, "correct", ("correct", "incorrect")) is None


ROUNDS = 300


@pytest.fixture(scope="module")
def rounds() -> list[dict]:
    """300 queues of 500 labels, 150 hand-outs each (30 from the uniform share), reviewed in triage order."""
    rng = random.Random(21)
    found = []
    for _ in range(ROUNDS):
        targets = judged_targets(rng, 500)
        pi = review(targets, 150)
        reviewed = [t for t in targets if t["stream"]]
        found.append({"truth": sum(t["y"] for t in targets) / len(targets),
                      "powered": estimate(targets, pi), "people": estimate(targets, pi, lam=0.0),
                      "judge": sum(t["label"] == "correct" for t in targets) / len(targets),
                      "naive": sum(t["y"] for t in reviewed) / len(reviewed)})
    return found


def test_powered_intervals_cover_the_true_accuracy_and_are_narrower_than_peoples(rounds):
    covered = sum(r["powered"].low <= r["truth"] <= r["powered"].high for r in rounds) / ROUNDS
    people = sum(r["people"].low <= r["truth"] <= r["people"].high for r in rounds) / ROUNDS
    width = np.mean([r["powered"].high - r["powered"].low for r in rounds])
    people_width = np.mean([r["people"].high - r["people"].low for r in rounds])
    bias = np.mean([r["powered"].value - r["truth"] for r in rounds])
    print(f"PPI++ coverage {covered:.3f}, width {width:.3f}, bias {bias:+.4f}; people only: coverage {people:.3f}, "
          f"width {people_width:.3f}; lambda {np.mean([r['powered'].lam for r in rounds]):.2f}")
    assert 0.90 <= covered <= 0.98  # 3,000 rounds: 0.938 (people only 0.941)
    assert abs(bias) < 0.015
    assert width < 0.9 * people_width
    assert all(r["powered"].value is not None for r in rounds)


def test_the_naive_share_of_all_reviews_and_the_judge_alone_are_biased(rounds):
    """Lowest belief first: the reviewed targets are the hard ones, so the plain share of all reviews is off; the
    judge alone is off by its own errors. The powered estimate is not."""
    naive = np.mean([r["naive"] - r["truth"] for r in rounds])
    judge = np.mean([r["judge"] - r["truth"] for r in rounds])
    print(f"naive bias {naive:+.4f}, judge-only bias {judge:+.4f}")
    assert naive < -0.1  # the hard answers are reviewed first
    assert abs(judge - naive) > 0.1

"""Judge-powered estimates (annotation.ppi, pure): PPI++ for a share under the review queue's design (issue 21,
point 1). Tested against ppi_py where both apply (a uniform sample), and by simulation with known truth: queues
of 500 labels whose judge is right more often the more it believes, reviewed in triage order with the default
20% uniform share."""
import random

import numpy as np
import pytest

from annotation import ppi
from annotation import review_order as ro

from .triage_rounds import hand_out


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
    hand_out(targets, handouts, share)
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
        # ppi_py's interval is for a superpopulation mean (and Wald's at lambda 0); ours is for these targets (the
        # reviewed 1% known exactly) and Wilson's at lambda 0: the same to a few percent away from the edges.
        assert ours.half_width == pytest.approx((float(high[0]) - float(low[0])) / 2, rel=0.03)
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


@pytest.mark.parametrize("lam", [None, 0.0, 1.0])
@pytest.mark.parametrize("people", [0.0, 1.0, 0.5])
def test_a_census_drawn_partly_at_random_is_the_peoples_share(lam, people):
    """Every target reviewed, one of them drawn at random (pi 0.2): nothing is left to estimate, so the value is
    the people's share over the targets, with no interval around it (it was a Hajek mean, -0.034 where people
    said 'incorrect' to every answer)."""
    f = [0.1 + 0.02 * i for i in range(30)]
    census = ppi.powered_mean(f, [people] * 30, [1.0] * 29 + [0.2], lam=lam)
    assert census.value == census.low == census.high == pytest.approx(people)


def test_every_estimate_is_a_share_with_an_interval_around_it_at_the_edges():
    """Edge designs (share 0 and 1, one label drawn, every review agreeing with a judge sure of itself, a few
    targets left): the value and both ends are in [0, 1], the interval holds the value, and it has width while a
    target is left unreviewed."""
    rng = random.Random(5)
    designs = []
    for share in (0.0, 1.0):
        for belief in (0.5, 0.9, 1.0):
            f = [belief if share else 1 - belief] * 60
            designs.append((f, [share] * 12 + [None] * 48, [0.2] * 60))  # every review agrees
            designs.append((f, [share] * 58 + [None] * 2, [1.0] * 40 + [0.9] * 20))  # nearly all reviewed
    f = [rng.random() for _ in range(40)]
    designs.append((f, [round(x) for x in f[:11]] + [None] * 29, [0.25] * 40))
    for f, y, pi in designs:
        for lam in (None, 0.0, 0.5):
            e = ppi.powered_mean(f, y, pi, lam=lam, min_uniform=1)
            assert 0.0 <= e.low <= e.value <= e.high <= 1.0, (f[0], y[:3], lam, e)
            assert e.high - e.low > 1e-3, (f[0], y[:3], lam, e)
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
    assert 0.90 <= covered <= 0.98 and people >= 0.90  # 3,000 rounds: see the README
    assert abs(bias) < 0.015
    # People alone take the reviewed labels as known and Wilson's interval for the rest (0.24 wide here; 0.275
    # as a Hajek mean with a Wald interval); the judge makes it narrower still.
    assert width < 0.95 * people_width
    assert all(r["powered"].value is not None for r in rounds)


def test_the_naive_share_of_all_reviews_and_the_judge_alone_are_biased(rounds):
    """Lowest belief first: the reviewed targets are the hard ones, so the plain share of all reviews is off; the
    judge alone is off by its own errors. The powered estimate is not."""
    naive = np.mean([r["naive"] - r["truth"] for r in rounds])
    judge = np.mean([r["judge"] - r["truth"] for r in rounds])
    print(f"naive bias {naive:+.4f}, judge-only bias {judge:+.4f}")
    assert naive < -0.1  # the hard answers are reviewed first
    assert abs(judge - naive) > 0.1


def _coverage(found: list[tuple[float, object]]) -> float:
    return sum(e.low <= truth <= e.high for truth, e in found) / len(found)


def test_intervals_cover_a_share_near_one():
    """A uniform sample of 40 reviews from 500 answers of which 97% are correct; the judge believes 0.9-1 in
    every right answer and flags half of the wrong ones. Most samples hold no wrong answer the judge missed, so
    the residuals' sample variance is about 0 (it was 0 in a quarter of the rounds: intervals of zero width,
    judge-powered coverage 0.60, people-only 0.74). 300 rounds: both cover at least 90%."""
    rng = random.Random(97)
    powered, people = [], []
    for _ in range(300):
        y = [1.0 if rng.random() < 0.97 else 0.0 for _ in range(500)]
        f = [0.9 + 0.1 * rng.random() if yi or rng.random() < 0.5 else 0.1 * rng.random() for yi in y]
        chosen = set(rng.sample(range(500), 40))
        observed = [y[i] if i in chosen else None for i in range(500)]
        truth = sum(y) / 500
        powered.append((truth, ppi.powered_mean(f, observed, [0.08] * 500)))
        people.append((truth, ppi.powered_mean(f, observed, [0.08] * 500, lam=0.0)))
    print(f"share 0.97, 40 of 500 reviewed: judge-powered coverage {_coverage(powered):.3f}, "
          f"people only {_coverage(people):.3f}")
    assert min(e.high - e.low for _, e in powered + people) > 0
    assert _coverage(powered) >= 0.90 and _coverage(people) >= 0.90


@pytest.mark.parametrize("handouts", [400, 480])
def test_intervals_cover_when_most_of_a_triage_queue_is_reviewed(handouts):
    """Triage order with the 20% uniform share, 400 and 480 hand-outs of 500 labels (80% and 96% reviewed): the
    labels left are the ones the judge is surest of, right almost always, so the few uniform reviews among them
    rarely show a residual (judge-powered coverage fell to 0.76 at 480). 200 rounds: at least 90%."""
    rng = random.Random(handouts)
    powered, people = [], []
    for _ in range(200):
        targets = judged_targets(rng, 500)
        pi = review(targets, handouts)
        truth = sum(t["y"] for t in targets) / len(targets)
        powered.append((truth, estimate(targets, pi)))
        people.append((truth, estimate(targets, pi, lam=0.0)))
    powered = [(truth, e) for truth, e in powered if e.value is not None]
    people = [(truth, e) for truth, e in people if e.value is not None]
    print(f"{handouts} hand-outs of 500: judge-powered coverage {_coverage(powered):.3f} ({len(powered)} given), "
          f"people only {_coverage(people):.3f}")
    assert len(powered) >= 150
    assert _coverage(powered) >= 0.90 and _coverage(people) >= 0.90

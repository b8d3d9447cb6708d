"""Every trust figure's 95% interval covers the truth near its nominal rate (issue 21): simulated review queues
with known truth, reviewed in triage order with the default 20% uniform share, as the queue hands labels out
(`review_order`), the figures computed as the trust page does (`trust`). Pure: no database."""
import heapq
import random

import pytest

from annotation import review_order as ro
from annotation import trust

ROUNDS = 200
P_CORRECT_LABEL = 0.6  # the judge says "correct" to 60% of the answers, whatever its belief
GAP = 0.03  # people agree with the judge with probability belief - GAP


def truth() -> dict:
    """The figures of the judge the rounds draw from: beliefs uniform on [0.3, 1); agreement independent of the
    label the judge gave."""
    accuracy = (0.3 + 1.0) / 2 - GAP
    human_correct = P_CORRECT_LABEL * accuracy + (1 - P_CORRECT_LABEL) * (1 - accuracy)
    chance = P_CORRECT_LABEL * human_correct + (1 - P_CORRECT_LABEL) * (1 - human_correct)
    return {"accuracy": accuracy, "kappa": (accuracy - chance) / (1 - chance)}


def queue_round(rng: random.Random, n_labels=500, handouts=150, share=0.2) -> list[dict]:
    labels, by_key, by_u = [], [], []
    for i in range(n_labels):
        belief = 0.3 + 0.7 * rng.random()
        judge = "correct" if rng.random() < P_CORRECT_LABEL else "incorrect"
        agree = rng.random() < belief - GAP
        human = judge if agree else ("incorrect" if judge == "correct" else "correct")
        label = {"belief": belief, "u": rng.random(), "judge": judge, "human": human, "agree": agree, "stream": None}
        labels.append(label)
        heapq.heappush(by_key, (ro.triage_key(belief, label["u"]), i))
        heapq.heappush(by_u, (label["u"], i))
    for number in range(1, handouts + 1):
        stream = ro.handout_stream(ro.TRIAGE, number, share)
        heap = by_u if stream == ro.RANDOM else by_key
        while labels[heap[0][1]]["stream"] is not None:
            heapq.heappop(heap)
        labels[heapq.heappop(heap)[1]]["stream"] = stream
    return labels


@pytest.fixture(scope="module")
def rounds() -> list[dict]:
    """Per round, the uniform and weighted figures (accuracy, kappa) as the trust page computes them."""
    rng = random.Random(2021)
    found = []
    for _ in range(ROUNDS):
        labels = queue_round(rng)
        drawn = [ro.Drawn(x["belief"], x["u"], x["stream"]) for x in labels]
        u_star, _ = ro.sampling_frontier(drawn)
        pi = ro.inclusion_probabilities(drawn)
        reviewed = [(x, p) for x, p in zip(labels, pi) if x["stream"]]
        uniform = [x for x, d in zip(labels, drawn) if ro.in_uniform_sample(d, u_star)]
        weights = [1 / p for _, p in reviewed]
        found.append({
            "uniform": {"accuracy": trust.accuracy([x["agree"] for x in uniform], min_n=trust.MIN_LABELS),
                        "kappa": trust.kappa([x["judge"] for x in uniform], [x["human"] for x in uniform],
                                             min_n=trust.MIN_LABELS)},
            "weighted": {"accuracy": trust.accuracy([x["agree"] for x, _ in reviewed], weights, min_n=trust.MIN_LABELS),
                         "kappa": trust.kappa([x["judge"] for x, _ in reviewed], [x["human"] for x, _ in reviewed],
                                              weights, min_n=trust.MIN_LABELS)},
            "naive": sum(x["agree"] for x, _ in reviewed) / len(reviewed),
        })
    return found


@pytest.mark.parametrize("side", ["uniform", "weighted"])
@pytest.mark.parametrize("figure", ["accuracy", "kappa"])
def test_the_interval_covers_the_truth_near_95_percent(rounds, side, figure):
    target = truth()[figure]
    estimates = [r[side][figure] for r in rounds if r[side][figure].value is not None]
    assert len(estimates) >= 0.95 * ROUNDS  # an estimate is given in (nearly) every round
    covered = sum(e.low <= target <= e.high for e in estimates) / len(estimates)
    bias = sum(e.value for e in estimates) / len(estimates) - target
    print(f"{side} {figure}: coverage {covered:.3f}, bias {bias:+.4f}, n {sum(e.n for e in estimates) / len(estimates):.0f}")
    assert 0.90 <= covered <= 0.995, covered
    assert abs(bias) < 0.03


def test_the_naive_share_of_all_reviews_is_biased(rounds):
    """Lowest belief first: the plain share of all reviews that agree is far below the truth."""
    assert sum(r["naive"] for r in rounds) / ROUNDS < truth()["accuracy"] - 0.15

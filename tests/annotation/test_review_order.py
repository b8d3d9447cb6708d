"""The belief-review hand-out policy (annotation.review_order is pure: no database)."""
import random

import pytest

from annotation import review_order as ro
from annotation import trust


def test_random_share_is_exact_and_spread_evenly():
    assert [n for n in range(1, 21) if ro.is_random_handout(n, 0.2)] == [5, 10, 15, 20]
    assert [n for n in range(1, 9) if ro.is_random_handout(n, 0.25)] == [4, 8]
    assert sum(ro.is_random_handout(n, 0.29) for n in range(1, 101)) == 29
    assert sum(ro.is_random_handout(n, 0.3) for n in range(1, 1001)) == 300
    assert not any(ro.is_random_handout(n, 0.0) for n in range(1, 50))
    assert all(ro.is_random_handout(n, 1.0) for n in range(1, 50))
    with pytest.raises(ValueError):
        ro.is_random_handout(0, 0.2)


def test_audit_order_always_draws_at_random():
    assert {ro.handout_stream(ro.AUDIT, n, 0.2) for n in range(1, 30)} == {ro.RANDOM}
    streams = [ro.handout_stream(ro.TRIAGE, n, 0.2) for n in range(1, 11)]
    assert streams == [ro.ORDER] * 4 + [ro.RANDOM] + [ro.ORDER] * 4 + [ro.RANDOM]


CANDIDATES = [
    ro.Candidate(1, 0.7, 0.05),
    ro.Candidate(2, 0.2, 0.9),
    ro.Candidate(3, 0.2, 0.3),
    ro.Candidate(4, 0.95, 0.01),
]


def test_order_stream_takes_the_lowest_belief_ties_by_audit_key_and_unscored_first():
    assert ro.pick(CANDIDATES, ro.ORDER) == (CANDIDATES[2], ro.ORDER)
    unscored = ro.Candidate(5, None, 0.99)
    assert ro.pick(CANDIDATES + [unscored], ro.ORDER) == (unscored, ro.ORDER)


def test_random_stream_takes_the_smallest_audit_key():
    assert ro.pick(CANDIDATES, ro.RANDOM) == (CANDIDATES[3], ro.RANDOM)
    assert ro.pick([], ro.RANDOM) == (None, ro.RANDOM)


def test_order_stream_skips_labels_at_or_above_the_threshold_and_falls_back_to_random():
    assert ro.pick(CANDIDATES, ro.ORDER, threshold=0.2) == (CANDIDATES[3], ro.RANDOM)
    assert ro.pick(CANDIDATES, ro.ORDER, threshold=0.8) == (CANDIDATES[2], ro.ORDER)


def test_inclusion_probabilities_by_hand():
    labels = [
        ro.Drawn(0.1, 0.80, ro.ORDER),   # triage key (.1, .8)
        ro.Drawn(0.3, 0.60, ro.ORDER),   # k* = (.3, .6)
        ro.Drawn(0.3, 0.50, None),       # below k*: certain to be drawn
        ro.Drawn(0.9, 0.20, ro.RANDOM),
        ro.Drawn(0.7, 0.40, ro.RANDOM),  # u* = .4
        ro.Drawn(0.3, 0.70, None),       # same belief, key above k*
        ro.Drawn(0.8, 0.90, None),
    ]
    assert ro.sampling_frontier(labels) == (0.40, (0.3, 0.60))
    assert ro.inclusion_probabilities(labels) == [1.0, 1.0, 1.0, 0.4, 0.4, 0.4, 0.4]
    u_star, _ = ro.sampling_frontier(labels)
    assert [ro.in_uniform_sample(d, u_star) for d in labels] == [False, False, False, True, True, False, False]


def test_audit_only_queue_weights_every_review_alike():
    labels = [ro.Drawn(0.5, u, ro.RANDOM) for u in (0.1, 0.2, 0.3)]
    assert ro.inclusion_probabilities(labels) == [0.3, 0.3, 0.3]


def _simulate(order, share, n_labels=1000, handouts=400, seed=7):
    """A queue whose judge is right with probability = its belief; review `handouts` labels."""
    rng = random.Random(seed)
    labels = []
    for i in range(n_labels):
        belief = rng.random()
        labels.append({"id": i, "belief": belief, "u": rng.random(), "right": rng.random() < belief, "stream": None})
    available = {label["id"]: label for label in labels}
    for number in range(1, handouts + 1):
        stream = ro.handout_stream(order, number, share)
        chosen, used = ro.pick((ro.Candidate(x["id"], x["belief"], x["u"]) for x in available.values()), stream)
        available.pop(chosen.id)["stream"] = used
    return labels


def test_weighted_estimates_are_unbiased_where_the_triage_sample_alone_is_not():
    labels = _simulate(ro.TRIAGE, 0.2)
    drawn = [ro.Drawn(x["belief"], x["u"], x["stream"]) for x in labels]
    pi = ro.inclusion_probabilities(drawn)
    reviewed = [(x, p) for x, p in zip(labels, pi) if x["stream"]]
    truth = sum(x["right"] for x in labels) / len(labels)
    naive = trust.accuracy([x["right"] for x, _ in reviewed]).value
    weighted = trust.accuracy([x["right"] for x, _ in reviewed], [1 / p for _, p in reviewed])
    assert naive < truth - 0.2  # lowest belief first: the reviewed labels are mostly wrong
    assert abs(weighted.value - truth) < 0.1
    assert weighted.low < truth < weighted.high
    u_star, _ = ro.sampling_frontier(drawn)
    uniform = [x["right"] for x, d in zip(labels, drawn) if ro.in_uniform_sample(d, u_star)]
    assert len(uniform) >= 80  # the 80 random draws and the triage picks that fall under u*
    assert abs(sum(uniform) / len(uniform) - truth) < 0.1
    assert sum(x["stream"] == ro.RANDOM for x in labels) == 80

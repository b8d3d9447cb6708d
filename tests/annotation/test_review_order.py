"""The belief-review hand-out policy (annotation.review_order is pure: no database)."""
import heapq
import random

import pytest

from annotation import review_order as ro
from annotation import trust

from .triage_rounds import hand_out


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
        ro.Drawn(0.3, 0.70, None),       # same belief, key above k*: tied by its u, so u > .6 > u*: never drawn
        ro.Drawn(0.8, 0.90, None),
    ]
    assert ro.sampling_frontier(labels) == (0.40, (0.3, 0.60))
    assert ro.inclusion_probabilities(labels) == [1.0, 1.0, 1.0, 0.4, 0.4, 0.0, 0.4]
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


def test_a_label_added_after_reviewing_began_is_not_certain_to_have_been_handed_out():
    """Issue 21: labels recorded after the order stream had passed their triage key (a judge grading a second
    run into the same queue) were given inclusion probability 1 although never handed out. Only the hand-outs
    made after a label was added say anything about it."""
    early = [ro.Drawn(0.1, 0.80, ro.ORDER, added=0), ro.Drawn(0.3, 0.60, ro.ORDER, added=0),
             ro.Drawn(0.9, 0.20, ro.RANDOM, added=0), ro.Drawn(0.7, 0.40, ro.RANDOM, added=0)]
    handouts = [ro.Handout(1, ro.ORDER, 0.1, 0.80), ro.Handout(2, ro.ORDER, 0.3, 0.60),
                ro.Handout(3, ro.RANDOM, 0.9, 0.20), ro.Handout(4, ro.RANDOM, 0.7, 0.40)]
    late = [ro.Drawn(0.05, 0.50, None, added=5),  # below k* = (.3, .6), never handed out
            ro.Drawn(0.2, 0.10, None, added=5)]   # below k* and below u* = .4, never handed out
    labels = early + late
    assert ro.inclusion_probabilities(labels, handouts) == [1.0, 1.0, 0.4, 0.4, 0.0, 0.0]
    assert [ro.in_uniform_sample(d, u) for d, (u, _) in zip(labels, ro.frontiers(labels, handouts))] == \
        [False, False, True, True, False, False]
    # After the second run arrived: one random hand-out (the smallest key, .10) and one in triage order (.05).
    handouts += [ro.Handout(6, ro.RANDOM, 0.2, 0.10), ro.Handout(7, ro.ORDER, 0.05, 0.50)]
    late = [ro.Drawn(0.05, 0.50, ro.ORDER, added=5), ro.Drawn(0.2, 0.10, ro.RANDOM, added=5),
            ro.Drawn(0.25, 0.30, None, added=5)]  # above the order stream's frontier since, above u = .10
    labels = early + late
    assert ro.inclusion_probabilities(labels, handouts) == [1.0, 1.0, 0.4, 0.4, 1.0, 0.1, 0.1]
    # Without hand-out records every label counts as there from the start (the frontier of all hand-outs).
    assert ro.inclusion_probabilities(early) == [1.0, 1.0, 0.4, 0.4]


def _simulate_two_runs(seed, share=0.2, first=300, second=300, before=250, after=100):
    """A queue in triage order: `first` labels, `before` hand-outs, `second` more labels, `after` hand-outs.
    The judge is right with probability = its belief, the second run's judge far less often (belief * 0.3). The
    streams pick as `ro.pick` does (the smallest triage key; the smallest audit key), kept in heaps."""
    rng = random.Random(seed)
    labels, handouts, by_key, by_u = [], [], [], []

    def add(n, when, worse):
        for _ in range(n):
            x = {"id": len(labels), "belief": rng.random(), "u": rng.random(), "added": when, "stream": None}
            x["right"] = rng.random() < x["belief"] * (0.3 if worse else 1.0)
            labels.append(x)
            heapq.heappush(by_key, (ro.triage_key(x["belief"], x["u"]), x["id"]))
            heapq.heappush(by_u, (x["u"], x["id"]))

    def review(count, start):
        for number in range(start, start + count):
            stream = ro.handout_stream(ro.TRIAGE, number, share)
            heap = by_u if stream == ro.RANDOM else by_key
            while labels[heap[0][1]]["stream"] is not None:
                heapq.heappop(heap)
            x = labels[heapq.heappop(heap)[1]]
            x["stream"] = stream
            handouts.append(ro.Handout(number, stream, x["belief"], x["u"]))

    add(first, 0, worse=False)
    review(before, 1)
    add(second, before + 0.5, worse=True)
    review(after, before + 1)
    return labels, handouts


def test_weighted_accuracy_stays_unbiased_when_a_second_run_joins_the_queue():
    """200 simulated queues: the weighted accuracy with each label's own frontier is unbiased and its interval
    covers near its nominal rate; with one frontier for all (labels added late counted as certainly
    reviewed) it is biased upward."""
    errors, old_errors, covered = [], [], 0
    rounds = 200
    for seed in range(rounds):
        labels, handouts = _simulate_two_runs(seed)
        truth = sum(x["right"] for x in labels) / len(labels)
        drawn = [ro.Drawn(x["belief"], x["u"], x["stream"], added=x["added"]) for x in labels]
        for pi, old in ((ro.inclusion_probabilities(drawn, handouts), False),
                        (ro.inclusion_probabilities([ro.Drawn(d.belief, d.audit_key, d.first_stream) for d in drawn]),
                         True)):
            reviewed = [(x, p) for x, p in zip(labels, pi) if x["stream"]]
            estimate = trust.accuracy([x["right"] for x, _ in reviewed], [1 / p for _, p in reviewed])
            (old_errors if old else errors).append(estimate.value - truth)
            if not old:
                covered += estimate.low <= truth <= estimate.high
    bias = sum(errors) / rounds
    old_bias = sum(old_errors) / rounds
    print(f"bias {bias:+.4f}, before the fix {old_bias:+.4f}; coverage {covered / rounds:.3f}")
    assert old_bias > 0.04  # the unreviewed late labels (mostly wrong) counted as certainly reviewed
    assert abs(bias) < 0.015
    assert 0.90 * rounds <= covered <= rounds


def test_a_tie_key_drawn_apart_from_u_leaves_a_tied_label_beyond_the_frontier_its_chance_u_star():
    """With tie keys (v apart from u) a label tied with k*'s belief and beyond it says nothing of its u: pi = u*. A
    label without one (recorded before tie keys) was tied by u: above k*'s key t*, its chance is (u* - t*)/(1 - t*)."""
    tied = [ro.Drawn(0.3, 0.05, ro.ORDER, tie_key=0.2), ro.Drawn(0.3, 0.9, ro.ORDER, tie_key=0.5),  # k* = (.3, .5)
            ro.Drawn(0.6, 0.7, ro.RANDOM, tie_key=0.1),                                             # u* = .7
            ro.Drawn(0.3, 0.3, None, tie_key=0.8), ro.Drawn(0.3, 0.8, None)]
    assert ro.sampling_frontier(tied) == (0.7, (0.3, 0.5))
    assert ro.inclusion_probabilities(tied) == pytest.approx([1.0, 1.0, 0.7, 0.7, (0.7 - 0.5) / (1 - 0.5)])


def _tied_round(rng, *, tie_by_u: bool, n_labels=300, handouts=90, share=0.2):
    """A queue in triage order whose judge states few beliefs (0.6, 0.8, 1.0: a sampled or verbal belief), right with
    probability = its belief; hand-outs as `ro.pick` makes them (heaps). Labels tie by a key drawn apart from u, or
    (`tie_by_u`, labels recorded before tie keys) by u. Returns the labels and their inclusion probabilities."""
    labels = []
    for _ in range(n_labels):
        belief, u = rng.choice((0.6, 0.8, 1.0)), rng.random()
        tie = None if tie_by_u else rng.random()
        labels.append({"belief": belief, "u": u, "tie": tie, "right": rng.random() < belief, "stream": None})
    hand_out(labels, handouts, share)
    drawn = [ro.Drawn(x["belief"], x["u"], x["stream"], tie_key=x["tie"]) for x in labels]
    return labels, ro.inclusion_probabilities(drawn)


def test_tied_beliefs_keep_the_weighted_accuracy_unbiased_and_its_interval_covering():
    """The audit's simulation (issue: tied beliefs). With ties broken by u, the labels of the frontier's tie group
    beyond it could not be in the random sample, yet were weighted as if they could (pi = u*): the weighted accuracy
    leaned (about +0.02 in this round, +0.07 in the audit's). With a tie key drawn apart from u, over 400 rounds with known truth the weighted
    accuracy is unbiased and its 95% interval covers the truth; a label tied by u gets its own design's chance,
    0 where it could not be drawn."""
    rng = random.Random(20261207)
    errors, covered, old_errors = [], 0, []
    rounds = 400
    for _ in range(rounds):
        labels, pi = _tied_round(rng, tie_by_u=False)
        truth = sum(x["right"] for x in labels) / len(labels)
        reviewed = [(x, p) for x, p in zip(labels, pi) if x["stream"]]
        estimate = trust.accuracy([x["right"] for x, _ in reviewed], [1 / p for _, p in reviewed])
        errors.append(estimate.value - truth)
        covered += estimate.low <= truth <= estimate.high
        # The old design's weights on the same kind of round: ties by u, every label beyond k* at u*.
        old, old_pi = _tied_round(rng, tie_by_u=True)
        u_star, k_star = ro.sampling_frontier([ro.Drawn(x["belief"], x["u"], x["stream"]) for x in old])
        as_before = [1.0 if k_star is not None and ro.triage_key(x["belief"], x["u"]) <= k_star else u_star
                     for x in old]
        old_reviewed = [(x, p) for x, p in zip(old, as_before) if x["stream"]]
        old_estimate = trust.accuracy([x["right"] for x, _ in old_reviewed], [1 / p for _, p in old_reviewed])
        old_errors.append(old_estimate.value - sum(x["right"] for x in old) / len(old))
        # What the design now says of those labels: a label it gives no chance was indeed never handed out.
        assert all(x["stream"] is None for x, p in zip(old, old_pi) if p == 0)
    bias, old_bias = sum(errors) / rounds, sum(old_errors) / rounds
    print(f"\ntied beliefs, {rounds} rounds: weighted accuracy bias {bias:+.4f} (ties by u, as before: "
          f"{old_bias:+.4f}), 95% interval coverage {covered / rounds:.3f}")
    assert abs(bias) < 0.01 and old_bias > 0.015  # the old design leaned ~+0.02 here: the test can tell them apart
    assert covered / rounds >= 0.92

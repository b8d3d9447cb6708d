"""Participant allocation (pure): fullest-first keeps quotas balanced so every attempt can be filled."""
import random

from studies.allocation import Slot, choose_items, presentation_order


def _simulate(chooser, n_items=250, raters=3, per=15):
    load = {k: 0 for k in range(n_items)}
    filled = 0
    while True:
        chosen = chooser([Slot(k, raters, load[k]) for k in load], per, filled)
        if chosen is None:
            return filled, load
        assert len(set(chosen)) == per
        for k in chosen:
            load[k] += 1
            assert load[k] <= raters
        filled += 1


def test_fullest_first_fills_exactly_fifty_attempts_of_fifteen_distinct_items():
    filled, load = _simulate(lambda slots, n, i: choose_items(slots, n, seed=f"s:{i}"))
    assert filled == 50
    assert set(load.values()) == {3}


def test_random_hand_out_can_strand_the_last_attempts():
    """Why the allocator is not random: a random pick of items with spare quota runs out of distinct items."""
    stranded = 0
    for seed in range(20):
        rng = random.Random(seed)

        def random_choice(slots, n, i, rng=rng):
            open_slots = [s.key for s in slots if s.remaining > 0]
            return rng.sample(open_slots, n) if len(open_slots) >= n else None

        filled, _ = _simulate(random_choice)
        stranded += filled < 50
    assert stranded > 0


def test_release_after_dropout_is_refilled_first():
    slots = [Slot(k, 3, 3) for k in range(20)] + [Slot(100 + k, 3, 2) for k in range(10)] + \
            [Slot(200 + k, 3, 0) for k in range(30)]
    chosen = choose_items(slots, 15, seed=1)
    assert set(range(200, 215)) <= set(chosen) or len(set(chosen) & set(range(200, 230))) == 15


def test_too_few_distinct_items_means_full():
    assert choose_items([Slot(k, 3, 0) for k in range(14)], 15, seed=0) is None
    assert choose_items([Slot(k, 3, 3) for k in range(100)], 15, seed=0) is None


def test_presentation_order_is_seeded_and_a_permutation():
    keys = list(range(15))
    a, b = presentation_order(keys, seed="x:1"), presentation_order(keys, seed="x:1")
    assert a == b and sorted(a) == keys
    assert presentation_order(keys, seed="x:2") != a

"""Participant allocation (pure): fullest-first keeps quotas balanced so every attempt can be filled."""
import random

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from studies.allocation import Slot, choose_items, presentation_order, tie_break


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


def test_among_equal_quota_the_items_a_dropout_released_come_first():
    """After a dropout, the next participant takes over exactly what was left (when quotas are equal)."""
    released = [Slot(k, 3, 2, released=True) for k in range(15)]
    others = [Slot(100 + k, 3, 2) for k in range(30)]
    for seed in range(10):
        assert sorted(choose_items(others + released, 15, seed=seed)) == list(range(15))
    # Fuller items still come first: a released item with less room waits.
    fresh = [Slot(200 + k, 3, 0) for k in range(15)]
    assert sorted(choose_items(released + fresh, 15, seed=0)) == list(range(200, 215))


def test_with_dropouts_every_item_still_ends_with_exactly_its_raters():
    """The project's allocator over a whole study with random dropouts (a fifth of the attempts give their items
    back): every item ends with exactly 3 answers and exactly 50 attempts complete, in every one of 20 rounds."""
    for seed in range(20):
        rng = random.Random(seed)
        load = {k: 0 for k in range(250)}
        released: set[int] = set()
        completed = attempt = 0
        while True:
            slots = [Slot(k, 3, load[k], released=k in released) for k in load]
            chosen = choose_items(slots, 15, seed=f"{seed}:{attempt}")
            attempt += 1
            if chosen is None:
                break
            assert len(set(chosen)) == 15
            for k in chosen:
                load[k] += 1
                released.discard(k)
                assert load[k] <= 3
            if rng.random() < 0.2:  # a dropout: its leases come back
                for k in chosen:
                    load[k] -= 1
                    released.add(k)
            else:
                completed += 1
        assert completed == 50, (seed, completed)
        assert set(load.values()) == {3}, seed


def test_too_few_distinct_items_means_full():
    assert choose_items([Slot(k, 3, 0) for k in range(14)], 15, seed=0) is None
    assert choose_items([Slot(k, 3, 3) for k in range(100)], 15, seed=0) is None


def test_presentation_order_is_seeded_and_a_permutation():
    keys = list(range(15))
    a, b = presentation_order(keys, seed="x:1"), presentation_order(keys, seed="x:1")
    assert a == b and sorted(a) == keys
    assert presentation_order(keys, seed="x:2") != a


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 4), st.booleans()), max_size=60),
       st.integers(0, 20), st.integers(0, 10**6))
@hypothesis_settings(max_examples=300, deadline=None)
def test_choose_items_equals_the_rule_as_written(specs, n, seed):
    """The level-by-level selection (tie-breaks only where a level is split) takes exactly the items of the rule
    as the module states it: sort every open item by (most remaining, lost a rater, seeded key), take n."""
    slots = [Slot(key, quota, min(load, quota), released) for key, (quota, load, released) in enumerate(specs)]
    open_slots = [s for s in slots if s.remaining > 0]
    expected = None if n <= 0 or len(open_slots) < n else [s.key for s in sorted(
        open_slots, key=lambda s: (-s.remaining, not s.released, tie_break(seed, s.key)))[:n]]
    assert choose_items(slots, n, seed=seed) == expected


def test_mix_is_a_bijection_of_32_bit_keys_and_spreads_consecutive_ids():
    """Distinct items never tie (the SQL and Python orders agree on every pair), and the order of consecutive ids
    under one seed looks nothing like their numeric order."""
    from studies.allocation import mix

    keys = [mix(k, 0xDEADBEEF) for k in range(1 << 16)]
    assert len(set(keys)) == len(keys) and all(0 <= k < 1 << 32 for k in keys)
    order = sorted(range(1000), key=lambda k: mix(k, 12345))
    assert sum(a < b for a, b in zip(order, order[1:])) in range(400, 600)  # about half ascending, as at random
    assert order != sorted(range(1000), key=lambda k: mix(k, 54321))


# --------------------------------------------------------------------------- the SQL hand-out (PostgreSQL)

@pytest.mark.django_db
def test_the_tie_break_hash_is_postgresqls_own():
    """pg_hash_int8 gives what PostgreSQL's hashint8extended gives: the edges of bigint, ids above 2**32, seeds
    of zero, 32 and 64 bits and negative, and thousands of random pairs (hypothesis-free: one query for all)."""
    from django.db import connection

    from studies.allocation import pg_hash_int8

    rng = random.Random(23)
    values = [0, 1, -1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 12345, 2**63 - 1, -2**63, *range(2, 3000),
              *(rng.randrange(-2**63, 2**63) for _ in range(3000))]
    seeds = [0, 1, 2**32 - 1, -5, 2**40 + 7, -2**63, 2**63 - 1, *(rng.randrange(0, 2**32) for _ in range(60))]
    pairs = [(value, rng.choice(seeds)) for value in values]
    with connection.cursor() as cursor:
        cursor.execute("SELECT hashint8extended(v, s) FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY "
                       "AS t(v, s, n) ORDER BY n", [[v for v, _ in pairs], [s for _, s in pairs]])
        theirs = [row[0] for row in cursor.fetchall()]
    assert theirs == [pg_hash_int8(value, seed) for value, seed in pairs]


@pytest.mark.django_db
@pytest.mark.parametrize("id_offset", [0, (1 << 32) + 12345])
def test_the_sql_hand_out_picks_exactly_the_items_and_order_of_the_python_rule(make_study, id_offset):
    """Many random pool states (loads, quotas, released items): a start on PostgreSQL (one SQL statement) hands out
    exactly the items choose_items picks from the same rows, in presentation_order, with the loads raised by one.
    Also with study-item ids above 2**32, where the tie key keeps only their low 32 bits, in SQL as in Python."""
    from django.db.models import F
    from django.utils import timezone

    from studies.models import Attempt, AttemptStatus, ParticipantLease, StudyItem
    from studies.services import attempt_start, study_join

    study = make_study(n_items=40, per_participant=6, raters=4)
    if id_offset:
        StudyItem.objects.filter(study=study).update(id=F("id") + id_offset)
        assert StudyItem.objects.filter(study=study, id__lt=id_offset).count() == 0
    rng = random.Random(7)
    for round_ in range(25):
        pool = list(StudyItem.objects.filter(study=study))
        for row in pool:
            row.quota = rng.randint(1, 4)
            row.load = rng.randint(0, row.quota)
            row.released_at = timezone.now() if rng.random() < 0.3 else None
        StudyItem.objects.bulk_update(pool, ["quota", "load", "released_at"])
        attempt = study_join(study=study, participant_id=f"sql-{round_}")
        seed = f"{study.seed}:{attempt.pk}"
        expected = choose_items([Slot(r.pk, r.quota, r.load, r.released_at is not None) for r in pool],
                                study.per_participant, seed=seed)
        started = attempt_start(attempt_id=attempt.pk)
        leases = list(attempt.leases.order_by("position").values_list("study_item_id", flat=True))
        if expected is None:
            assert started.status == AttemptStatus.FULL and leases == []
            assert Attempt.objects.get(pk=attempt.pk).started_at is None
            continue
        assert started.status == AttemptStatus.STARTED
        assert leases == presentation_order(expected, seed=seed), round_
        # The leases the start hands up (the first question's page reads none) are the rows written, every field.
        fields = [field.attname for field in ParticipantLease._meta.concrete_fields]
        assert all(not lease.get_deferred_fields() for lease in started.handed_out)
        assert [[getattr(lease, name) for name in fields] for lease in started.handed_out] == [
            list(row) for row in ParticipantLease.objects.filter(attempt=attempt).order_by("position")
            .values_list(*fields)]
        assert [lease.shown_at for lease in started.handed_out] == [started.started_at] + [None] * (len(leases) - 1)
        after = dict(StudyItem.objects.filter(study=study).values_list("pk", "load"))
        assert after == {r.pk: r.load + (r.pk in expected) for r in pool}
        assert not StudyItem.objects.filter(pk__in=expected, released_at__isnull=False).exists()

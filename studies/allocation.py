"""Participant allocation: which items a new attempt gets. Pure Python, no Django.

The pool is a set of items, each with a quota (raters per item) and a load (answers
already given plus leases still running). A new attempt needs `n` *distinct* items.

Rule: take the `n` items with the most remaining quota, ties broken by a seeded
random key. Taking the fullest items first keeps the remaining quotas of all items
within one of each other (water filling), so when the total remaining quota is an
exact multiple of `n` (250 items x 3 raters = 50 x 15) the last attempt still finds
`n` distinct items; a greedy or random hand-out can strand it with a few items that
have spare quota but not enough distinct ones.
"""
from __future__ import annotations

import functools
import hashlib
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import gcd


@dataclass(frozen=True)
class Slot:
    """One item of the pool as the allocator sees it."""

    key: int
    quota: int
    load: int
    released: bool = False   # lost a rater (dropout, timeout) since it was last handed out

    @property
    def remaining(self) -> int:
        return self.quota - self.load


#: The presentation order's multiplier (a 32-bit integer hash: T. Mueller's, a bijection of 32-bit numbers). Products stay
#: below 2**59, so PostgreSQL computes the same keys in bigint (studies.services.hand_out).
MIX = 0x45D9F3B
MASK = 0xFFFFFFFF


def seed_salt(seed: int | str) -> int:
    """The 32-bit number a seed turns into for the tie-break and the presentation order (MD5: stable, independent of
    Python's hash seed)."""
    return int(hashlib.md5(str(seed).encode(), usedforsecurity=False).hexdigest()[:8], 16)


def mix(key: int, salt: int) -> int:
    """The presentation-order key of item `key` under `salt`: distinct keys under 2**32 never collide (a bijection).
    The choice's tie-break is `pg_hash_int8` (computed by PostgreSQL in C over a whole pool)."""
    x = (key ^ salt) & MASK
    x = (((x >> 16) ^ x) * MIX) & MASK
    x = (((x >> 16) ^ x) * MIX) & MASK
    return (x >> 16) ^ x


def pg_hash_int8(value: int, seed: int) -> int:
    """PostgreSQL's ``hashint8extended(value, seed)``: its hash of a bigint (Bob Jenkins' lookup3, as in its
    hashfn.c), a signed 64-bit number. The choice's tie-break: PostgreSQL computes it in C, once per item of the
    pool, where `mix` took a dozen bigint operators (a third of a start's hand-out on 1,563 items)."""
    value &= (1 << 64) - 1
    low, high = value & MASK, value >> 32
    low ^= high if value < (1 << 63) else ~high & MASK  # as hashint8: the high half folded into the low one
    seed &= (1 << 64) - 1
    a = b = c = (0x9E3779B9 + 4 + 3923095) & MASK
    if seed:
        a, b = (a + (seed >> 32)) & MASK, (b + (seed & MASK)) & MASK
        a, b, c = _lookup3_mix(a, b, c)
    a = (a + low) & MASK
    c = ((c ^ b) - _rot(b, 14)) & MASK
    a = ((a ^ c) - _rot(c, 11)) & MASK
    b = ((b ^ a) - _rot(a, 25)) & MASK
    c = ((c ^ b) - _rot(b, 16)) & MASK
    a = ((a ^ c) - _rot(c, 4)) & MASK
    b = ((b ^ a) - _rot(a, 14)) & MASK
    c = ((c ^ b) - _rot(b, 24)) & MASK
    result = (b << 32) | c
    return result - (1 << 64) if result >= (1 << 63) else result


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & MASK


def _lookup3_mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    for shift_a, shift_b, shift_c in ((4, 6, 8), (16, 19, 4)):
        a = ((a - c) & MASK) ^ _rot(c, shift_a)
        c = (c + b) & MASK
        b = ((b - a) & MASK) ^ _rot(a, shift_b)
        a = (a + c) & MASK
        c = ((c - b) & MASK) ^ _rot(b, shift_c)
        b = (b + a) & MASK
    return a, b, c


def tie_break(seed: int | str, key: int) -> tuple[int, int]:
    """A stable pseudo-random sort key for (seed, item): PostgreSQL's hash of the item under the seed's salt, then
    the item itself (two items whose hashes collide keep their order by key).

    The SQL hand-out (studies.services.hand_out) orders by the same expression, so on PostgreSQL a start picks
    exactly the items this module picks.
    """
    return pg_hash_int8(key, seed_salt(seed)), key


def choose_items(slots: Iterable[Slot], n: int, *, seed: int | str) -> list[int] | None:
    """Keys of `n` distinct items with spare quota, fullest first; None when fewer than `n` have any.

    Among items with equal remaining quota, items that lost a rater (a dropout) come first, so the
    next participant takes over what a dropout left; then a seeded random order.
    """
    # By (remaining, released) level, fullest first: whole levels are taken as they are, and only the level that
    # is split needs the seeded tie-breaks (a hash per item, the costly part), and only its n smallest.
    levels: dict[tuple[int, bool], list[Slot]] = {}
    for s in slots:
        if s.remaining > 0:
            levels.setdefault((-s.remaining, not s.released), []).append(s)
    if n <= 0 or sum(map(len, levels.values())) < n:
        return None
    chosen: list[Slot] = []
    for level in sorted(levels):
        members, wanted = levels[level], n - len(chosen)
        key = functools.partial(_tie_key, seed_salt(seed))
        chosen += sorted(members, key=key) if len(members) <= wanted else heapq.nsmallest(wanted, members, key=key)
        if len(chosen) == n:
            break
    return [s.key for s in chosen]


def _tie_key(salt: int, slot: Slot) -> tuple[int, int]:
    return pg_hash_int8(slot.key, salt), slot.key


def presentation_order(keys: Sequence[int], *, seed: int | str) -> list[int]:
    """The order in which one participant sees their items: a seeded shuffle (by the tie-break key under
    "order:seed", which the SQL hand-out computes the same way)."""
    salt = seed_salt(f"order:{seed}")
    return sorted(keys, key=lambda key: (mix(key, salt), key))


@dataclass(frozen=True)
class QuotaFit:
    """How a pool's answers divide into attempts: complete attempts, and answers no attempt can collect."""

    items: int
    raters: int
    per_participant: int
    complete_attempts: int
    stranded_answers: int
    item_counts: tuple[int, ...] = ()         # nearby pool sizes that divide exactly
    per_participant_counts: tuple[int, ...] = ()  # nearby questions per participant that divide exactly

    @property
    def divides(self) -> bool:
        return self.stranded_answers == 0 and self.complete_attempts > 0


def quota_fit(items: int, raters: int, per_participant: int) -> QuotaFit:
    """Whether `items` x `raters` answers divide into attempts of `per_participant` distinct items.

    With the fullest-first rule every answer is collected when they divide (and an attempt fits the
    pool); otherwise the remainder can never be handed out: each attempt needs that many distinct items.
    """
    if per_participant <= 0 or raters <= 0 or items < per_participant:
        return QuotaFit(items, raters, per_participant, 0, max(0, items * raters))
    total = items * raters
    complete, stranded = divmod(total, per_participant)
    if not stranded:
        return QuotaFit(items, raters, per_participant, complete, 0)
    step = per_participant // gcd(per_participant, raters)  # pool sizes that divide are the multiples of this
    below = items - items % step
    sizes = tuple(n for n in (below, below + step) if n >= per_participant and n > 0)
    divisors = [p for p in range(1, items + 1) if total % p == 0]
    nearby = sorted(divisors, key=lambda p: (abs(p - per_participant), p))[:2]
    return QuotaFit(items, raters, per_participant, complete, stranded, sizes, tuple(sorted(nearby)))

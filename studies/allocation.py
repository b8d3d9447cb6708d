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

import hashlib
import random
from dataclasses import dataclass
from typing import Iterable, Sequence


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


def tie_break(seed: int | str, key: int) -> bytes:
    """A stable pseudo-random sort key for (seed, item), independent of Python's hash seed."""
    return hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()


def choose_items(slots: Iterable[Slot], n: int, *, seed: int | str) -> list[int] | None:
    """Keys of `n` distinct items with spare quota, fullest first; None when fewer than `n` have any.

    Among items with equal remaining quota, items that lost a rater (a dropout) come first, so the
    next participant takes over what a dropout left; then a seeded random order.
    """
    open_slots = [s for s in slots if s.remaining > 0]
    if n <= 0 or len(open_slots) < n:
        return None
    open_slots.sort(key=lambda s: (-s.remaining, not s.released, tie_break(seed, s.key)))
    return [s.key for s in open_slots[:n]]


def presentation_order(keys: Sequence[int], *, seed: int | str) -> list[int]:
    """The order in which one participant sees their items: a seeded shuffle."""
    order = sorted(keys)
    random.Random(f"order:{seed}").shuffle(order)
    return order

"""Which judge label to hand out next for review, and how likely each label was to be drawn
(pure, no Django).

Every label gets an audit key u, uniform on [0, 1), when it is recorded. Two streams hand
labels out:

* the random stream takes the available label with the smallest u: a uniform random order,
  fixed in advance, so the labels with u <= u* (u* the largest key it has drawn) have all
  been handed out, whatever the other stream did: a uniform (Bernoulli) sample of rate u*;
* the order stream, in triage order, takes the available label with the lowest belief
  (unscored labels first, ties by a second key v drawn apart from u), and only labels below
  the accept threshold. In audit order every hand-out comes from the random stream.

Hand-out number n (1, 2, ...) of a queue comes from the random stream when
floor(n * share) > floor((n - 1) * share): exactly floor(N * share) of the first N hand-outs,
spread evenly (share 0.2: the 5th, 10th, ...). When the order stream has nothing left below
the threshold, the hand-out comes from the random stream and is recorded as such.

Inclusion probabilities for inverse-probability weights: with k* the largest triage key the
order stream has drawn, a label with triage key <= k* was certain to be handed out (pi = 1);
any other label was handed out exactly when u <= u* (pi = u*): its being beyond k* says nothing
of its u, because ties are broken by v, not u. (Labels recorded before v existed have none:
their ties went by u, so one of them with the belief of k* and beyond it has u above k*'s key
t*, and was handed out with the chance max(0, (u* - t*) / (1 - t*)), which it is given.)

Labels can be added after reviewing began (a judge grading a second run into the same queue).
Only the hand-outs made after a label was added say anything about it: a hand-out of triage key
k by the order stream at time t means every label present at t with a smaller key had already
been handed out, and a random hand-out of key u the same for every label present with a smaller
u. So each label has its own frontier (u*, k*), over the hand-outs made since it was added
(``frontiers``, from the hand-out records); a label added after the order stream passed its key
and never handed out since is not certain to have been reviewed (its pi is its own u*, 0 while
no random hand-out has come after it).
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

TRIAGE = "triage"
AUDIT = "audit"
ORDERS = (TRIAGE, AUDIT)

RANDOM = "random"
ORDER = "order"


def is_random_handout(number: int, share: float) -> bool:
    """Whether hand-out `number` (from 1) of a queue is drawn uniformly at random."""
    if number < 1:
        raise ValueError("hand-outs are numbered from 1")
    if not 0.0 <= share <= 1.0:
        raise ValueError("the random share is between 0 and 1")
    # The rounding keeps 0.29 * 100 at 29, not 28.999...
    return math.floor(round(number * share, 9)) > math.floor(round((number - 1) * share, 9))


def handout_stream(order: str, number: int, share: float) -> str:
    """The stream of hand-out `number` in a queue with this order and random share."""
    if order not in ORDERS:
        raise ValueError(f"unknown review order {order!r}")
    if order == AUDIT or is_random_handout(number, share):
        return RANDOM
    return ORDER


def triage_key(belief: float | None, tie: float) -> tuple[float, float]:
    """Lowest belief first, unscored labels (no belief) before every scored one, ties by `tie` (the label's tie key
    v; its audit key u for a label recorded before tie keys existed: `tie_of`)."""
    return (-1.0 if belief is None else float(belief), float(tie))


def tie_of(label: Any) -> float:
    """What breaks a label's ties in triage order: its tie key, or its audit key when it has none (recorded before)."""
    return label.audit_key if label.tie_key is None else label.tie_key


@dataclass(frozen=True)
class Candidate:
    """A label as the hand-out policy sees it."""

    id: int
    belief: float | None
    audit_key: float
    tie_key: float | None = None


def eligible_for_order(candidate: Candidate, threshold: float | None) -> bool:
    """Whether the order stream may hand out this label (below the accept threshold)."""
    return threshold is None or candidate.belief is None or candidate.belief < threshold


def pick(candidates: Iterable[Candidate], stream: str, threshold: float | None = None) -> tuple[Candidate | None, str]:
    """The label a stream hands out among the available ones, and the stream actually used
    (the random stream when the order stream has nothing left below the threshold)."""
    pool = list(candidates)
    if stream == ORDER:
        eligible = [c for c in pool if eligible_for_order(c, threshold)]
        if eligible:
            return min(eligible, key=lambda c: (triage_key(c.belief, tie_of(c)), c.id)), ORDER
        stream = RANDOM
    if stream != RANDOM:
        raise ValueError(f"unknown stream {stream!r}")
    if not pool:
        return None, RANDOM
    return min(pool, key=lambda c: (c.audit_key, c.id)), RANDOM


@dataclass(frozen=True)
class Drawn:
    """A label with the stream that first handed it out (None: never handed out) and when it was added (any
    orderable time; None: there from the start)."""

    belief: float | None
    audit_key: float
    first_stream: str | None
    added: Any = None
    tie_key: float | None = None  # None: recorded before tie keys, its ties went by the audit key


@dataclass(frozen=True)
class Handout:
    """One hand-out: when, by which stream (the one actually used), and the handed-out label's belief and key."""

    at: Any
    stream: str
    belief: float | None
    audit_key: float
    tie_key: float | None = None


def sampling_frontier(labels: Sequence[Drawn]) -> tuple[float, tuple[float, float] | None]:
    """u* (0 when the random stream drew nothing) and k* (None when the order stream drew nothing)."""
    u_star = max((d.audit_key for d in labels if d.first_stream == RANDOM), default=0.0)
    k_star = max((triage_key(d.belief, tie_of(d)) for d in labels if d.first_stream == ORDER), default=None)
    return u_star, k_star


def inclusion_probability(label: Drawn, u_star: float, k_star: tuple[float, float] | None) -> float:
    """The chance that this label was handed out, given the frontier of both streams."""
    if k_star is not None and triage_key(label.belief, tie_of(label)) <= k_star:
        return 1.0
    if label.tie_key is None and k_star is not None and triage_key(label.belief, 0.0)[0] == k_star[0]:
        # Tied by u with k*'s belief and beyond it: its u is above k*'s t*, uniform there (module docstring).
        t_star = k_star[1]
        return max(0.0, (u_star - t_star) / (1.0 - t_star)) if t_star < 1.0 else 0.0
    return u_star


def in_uniform_sample(label: Drawn, u_star: float) -> bool:
    """Whether the label belongs to the uniform sample (u <= u*), however it was handed out."""
    return label.first_stream is not None and u_star > 0 and label.audit_key <= u_star


Frontier = tuple[float, "tuple[float, float] | None"]


def frontiers(labels: Sequence[Drawn], handouts: Sequence[Handout] | None = None) -> list[Frontier]:
    """Each label's (u*, k*): over the hand-outs made at or after the label was added.

    Without hand-out records (``handouts`` None) every label has the one frontier of ``sampling_frontier``
    (every label there from the start)."""
    if handouts is None:
        return [sampling_frontier(labels)] * len(labels)
    ordered = sorted(handouts, key=lambda h: h.at)
    times = [h.at for h in ordered]
    # Suffix maxima: the largest random key and the largest triage key of the hand-outs from position i on.
    u_from: list[float] = [0.0] * (len(ordered) + 1)
    k_from: list[tuple[float, float] | None] = [None] * (len(ordered) + 1)
    for i in range(len(ordered) - 1, -1, -1):
        h = ordered[i]
        u_from[i], k_from[i] = u_from[i + 1], k_from[i + 1]
        if h.stream == RANDOM:
            u_from[i] = max(u_from[i], float(h.audit_key))
        elif h.stream == ORDER:
            key = triage_key(h.belief, tie_of(h))
            k_from[i] = key if k_from[i] is None else max(k_from[i], key)
    result = []
    for label in labels:
        i = 0 if label.added is None else bisect.bisect_left(times, label.added)
        result.append((u_from[i], k_from[i]))
    return result


def inclusion_probabilities(labels: Sequence[Drawn], handouts: Sequence[Handout] | None = None) -> list[float]:
    """The inclusion probability of every label (IPW weight = 1 / it, for drawn labels); with ``handouts``, each
    over the hand-outs made since the label was added."""
    return [inclusion_probability(d, u, k) for d, (u, k) in zip(labels, frontiers(labels, handouts))]

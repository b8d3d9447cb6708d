"""The judge's belief in a verdict, from one of three sources (no Django inside).

- ``logprob``: the chat API's token log-probabilities (``logprobs: true``,
  ``top_logprobs: N``). At the token where the verdict's text starts, every listed
  alternative token is read as the start of one allowed verdict (the token without
  leading spaces and quotes, cut at a closing quote, must be a non-empty prefix of
  exactly one allowed verdict, case-insensitive); the probabilities of the tokens of
  each verdict are summed, and the belief is the chosen verdict's share of the
  allowed ones: ``p(chosen) / sum over allowed p(v)`` (a softmax over the allowed
  verdicts' log-probabilities). The allowed verdicts of every task differ in their
  first letter, so the first token decides. An allowed verdict absent from the returned
  top log-probabilities is not taken as impossible: it gets the most mass the list
  allows (``unseen_rival_mass``: at most the least probable listed token, and together
  at most 1 - the listed mass), so the belief is the lowest the list is consistent
  with and never exactly 1 from a truncated list. No belief when the endpoint returned
  no log-probabilities or their text does not match the reply.
- ``sampled``: k replies to the same prompt; the majority verdict (ties: the earliest)
  with the share of the k replies that gave it (a reply that cannot be read counts
  against the majority).
- ``verbal``: the ``confidence`` the judge states in its JSON.

For a free-form draft (the clue graph) ``sequence_belief`` is the geometric mean of the
reply's token probabilities.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from foundation.storable import storable_text

LOGPROB, SAMPLED, VERBAL, BUILTIN = "logprob", "sampled", "verbal", "builtin"
BELIEF_SOURCES = (LOGPROB, SAMPLED, VERBAL, BUILTIN)

_LEAD = " \t\n\r\"'“”`"


@dataclass(frozen=True)
class TokenLogprob:
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


def read_logprobs(content: object) -> tuple[TokenLogprob, ...]:
    """The ``choices[0].logprobs.content`` list of a chat completion as TokenLogprob (bad entries end it)."""
    found = []
    for entry in content if isinstance(content, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            break
        try:
            logprob = float(entry.get("logprob"))
        except (TypeError, ValueError):
            break
        if not math.isfinite(logprob) and logprob != -math.inf:  # NaN, +inf: not a log-probability
            break
        top = tuple(
            (storable_text(alt["token"]), float(alt["logprob"]))
            for alt in entry.get("top_logprobs") or ()
            if isinstance(alt, dict) and isinstance(alt.get("token"), str) and isinstance(alt.get("logprob"), (int, float))
            and not isinstance(alt.get("logprob"), bool) and (math.isfinite(alt["logprob"]) or alt["logprob"] == -math.inf)
        )
        # Token text as PostgreSQL can keep it (the response cache stores it): a NUL or a lone surrogate is U+FFFD.
        found.append(TokenLogprob(storable_text(entry["token"]), logprob, top))
    return tuple(found)


def logprobs_as_json(tokens: Sequence[TokenLogprob]) -> list[dict]:
    """The inverse of :func:`read_logprobs` (for the response cache)."""
    return [{"token": t.token, "logprob": t.logprob, "top_logprobs": [{"token": a, "logprob": p} for a, p in t.top]}
            for t in tokens]


def verdict_of_token(token: str, choices: Sequence[str]) -> str | None:
    """The allowed verdict a token starts, or None (no verdict, or the start of several)."""
    piece = token.lstrip(_LEAD).split('"', 1)[0].strip().lower()
    if not piece:
        return None
    matches = [c for c in choices if c.lower().startswith(piece)]
    return matches[0] if len(matches) == 1 else None


def _token_at(tokens: Sequence[TokenLogprob], text: str, offset: int) -> tuple[int, int] | None:
    """(index of the token covering character ``offset`` of ``text``, where that token starts), if the tokens
    spell ``text``."""
    if "".join(t.token for t in tokens) != text:
        return None
    position = 0
    for index, token in enumerate(tokens):
        if position <= offset < position + len(token.token):
            return index, position
        position += len(token.token)
    return None


def logprob_belief(tokens: Sequence[TokenLogprob], text: str, span: tuple[int, int], chosen: str,
                   choices: Sequence[str]) -> float | None:
    """The probability of ``chosen`` normalised over ``choices`` at the verdict spanning ``span`` (quotes included)."""
    if not tokens:
        return None
    start = span[0] + 1 if text[span[0]:span[0] + 1] == '"' else span[0]
    found = _token_at(tokens, text, start)
    if found is None:
        return None
    token = tokens[found[0]]
    # The token may begin before the verdict (' "correct'): its alternatives are read after the same lead.
    lead = token.token[:start - found[1]]
    candidates = dict(token.top)
    candidates.setdefault(token.token, token.logprob)
    mass: dict[str, float] = {}
    for alternative, logprob in candidates.items():
        verdict = verdict_of_token(alternative[len(lead):] if alternative.startswith(lead) else alternative, choices)
        if verdict is not None:
            mass[verdict] = mass.get(verdict, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if chosen not in mass or total <= 0:
        return None
    return mass[chosen] / (total + unseen_rival_mass(candidates.values(), len(set(choices) - set(mass))))


def unseen_rival_mass(listed_logprobs: Iterable[float], unseen: int) -> float:
    """The most probability the ``unseen`` allowed verdicts outside a returned top-logprob list can have together.

    The list holds the most probable tokens, so each verdict outside it is at most as probable as the least
    probable listed token, and all of them together at most the mass the list leaves over (1 - its sum). The
    smaller bound is taken; when rounding makes the listed mass reach 1, the smallest listed probability alone
    bounds them (something is missing, so it is never 0). The belief read with this mass is the lowest the
    returned list allows: a truncated list never yields a belief of exactly 1.
    """
    if unseen <= 0:
        return 0.0
    probabilities = [math.exp(logprob) for logprob in listed_logprobs]
    if not probabilities:
        return 0.0
    per_verdict = unseen * min(probabilities)
    leftover = 1.0 - math.fsum(probabilities)
    return min(per_verdict, leftover) if leftover > 0 else per_verdict


def sampled_belief(labels: Sequence[str | None]) -> tuple[str | None, float | None]:
    """(majority verdict, its share of all samples); ties go to the verdict that came first; None if none read."""
    counts = Counter(label for label in labels if label is not None)
    if not counts:
        return None, None
    best = max(counts.values())
    winner = next(label for label in labels if label is not None and counts[label] == best)
    return winner, best / len(labels)


def sequence_belief(tokens: Iterable[TokenLogprob]) -> float | None:
    """The geometric mean of the tokens' probabilities (exp of the mean log-probability); None without tokens."""
    logprobs = [t.logprob for t in tokens]
    if not logprobs:
        return None
    return math.exp(sum(logprobs) / len(logprobs))

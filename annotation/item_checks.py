"""Checks an annotator sees while rewriting an item or building its clue graph (pure Python)."""
from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Sequence

from .text import CONTRACTION_PIECES, NEGATION_WORDS, QUANTIFIER_WORDS, content_words, tokens

#: Words of a conclusion's wording, not of its content ("Therefore, the answer is ...").
_CONCLUSION_WORDS = ("answer", "therefore", "thus", "hence")
_DISTINGUISHING = NEGATION_WORDS | QUANTIFIER_WORDS | CONTRACTION_PIECES


@dataclass(frozen=True)
class Check:
    kind: str
    message: str


def _norm(text: str) -> str:
    return " ".join(tokens(text))


def option_checks(options: Sequence[str], answer_index: int | None) -> list[Check]:
    """Rule 2.4: at least two non-empty, distinct options and exactly one correct option."""
    checks = []
    if len(options) < 2:
        checks.append(Check("too_few_options", "an item needs at least two options"))
    for i, option in enumerate(options):
        if not option.strip():
            checks.append(Check("empty_option", f"option {i + 1} is empty"))
    seen: dict[str, int] = {}
    for i, option in enumerate(options):
        key = _norm(option)
        if key and key in seen:
            checks.append(Check("duplicate_option", f"options {seen[key] + 1} and {i + 1} are the same"))
        seen.setdefault(key, i)
    if answer_index is None or not 0 <= answer_index < len(options):
        checks.append(Check("no_correct_option", "choose exactly one correct option"))
    return checks


def _content_words(text: str) -> set[str]:
    # Options often differ only in "no" / "not" / "all" or a letter naming a person ("D is ..."):
    # those count here.
    return content_words(text, ignore=_CONCLUSION_WORDS, keep=_DISTINGUISHING)


def reaches_answer(final_output: str | None, options: Sequence[str], answer_index: int) -> bool:
    """Rule 3.3: the last conclusion names the correct option better than any other option."""
    if not final_output or not 0 <= answer_index < len(options):
        return False
    target = _norm(final_output)
    scores = []
    for option in options:
        words = _content_words(option)
        overlap = len(words & _content_words(final_output)) / len(words) if words else 0.0
        scores.append(max(overlap, SequenceMatcher(None, _norm(option), target).ratio()))
    best = max(scores)
    return scores[answer_index] == best and best >= 0.5 and scores.count(best) == 1

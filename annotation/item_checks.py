"""Checks an annotator sees while working on an item: its options (rewriting), and clues that are not key
information because they cover most of the context (the clue graph). Pure Python, no Django.

Whether the clue graph's last conclusion names the answer is a clue-graph check:
annotation.clue_graph.checks.reaches_answer.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotation.text import node_key
from foundation.words import gettext


@dataclass(frozen=True)
class Check:
    kind: str
    message: str


def option_key(text: str) -> str:
    """What makes two options "the same": equal text, case, spacing, quote style and surrounding punctuation aside
    (annotation.text's node_key: "Box A." and "box  a" are the same; "(3 + 3) × 8" and "(3 × 3) + 8" are not,
    as inner symbols count). The one definition: the rewrite page refuses such options, the quality checks flag
    items that have them (evaluation.statistics.quality_checks)."""
    return node_key(text)


def same_options(options: Sequence[str]) -> list[list[int]]:
    """The groups of options that are the same (their 0-based positions, two or more in each, in the order of
    their first option); an empty option is in none (it is an empty option)."""
    groups: dict[str, list[int]] = {}
    for i, option in enumerate(options):
        key = option_key(option)
        if key:
            groups.setdefault(key, []).append(i)
    return [group for group in groups.values() if len(group) > 1]


def option_checks(options: Sequence[str], answer_index: int | None) -> list[Check]:
    """Rule 2.4: at least two non-empty, distinct options and exactly one correct option."""
    checks = []
    if len(options) < 2:
        checks.append(Check("too_few_options", gettext("an item needs at least two options")))
    for i, option in enumerate(options):
        if not option.strip():
            checks.append(Check("empty_option", gettext("option %(n)s is empty", n=i + 1)))
    for first, *others in same_options(options):
        for other in others:
            checks.append(Check("duplicate_option", gettext("options %(first)s and %(other)s are the same",
                                                               first=first + 1, other=other + 1)))
    if answer_index is None or not 0 <= answer_index < len(options):
        checks.append(Check("no_correct_option", gettext("choose exactly one correct option")))
    return checks


#: Key information is a few words of the context: a clue covering more than this share of the context's
#: characters is most of the story (a warning: the clue graph can still be saved).
BROAD_CLUE_SHARE = 0.5


def clue_span_checks(context: str, clues: Sequence[tuple[int, int]]) -> list[Check]:
    """Clues that cover most of the context: ``clues`` are (clue number, characters of the context it covers,
    its span when it is found in the context, else its own length); one warning per clue above
    BROAD_CLUE_SHARE."""
    total = len(context.strip())
    if not total:
        return []
    checks = []
    for number, covered in clues:
        share = covered / total
        if share > BROAD_CLUE_SHARE:
            checks.append(Check("broad_clue", gettext(
                "clue %(n)s covers %(share)s of the context: key information is the few words a step needs, not "
                "most of the story", n=number, share=f"{share:.0%}")))
    return checks

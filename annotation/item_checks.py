"""Checks an annotator sees while rewriting an item: its options (pure Python, no Django).

Whether the clue graph's last conclusion names the answer is a clue-graph check:
annotation.clue_graph.checks.reaches_answer.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotation.text import word_key


@dataclass(frozen=True)
class Check:
    kind: str
    message: str


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
        key = word_key(option)
        if key and key in seen:
            checks.append(Check("duplicate_option", f"options {seen[key] + 1} and {i + 1} are the same"))
        seen.setdefault(key, i)
    if answer_index is None or not 0 <= answer_index < len(options):
        checks.append(Check("no_correct_option", "choose exactly one correct option"))
    return checks

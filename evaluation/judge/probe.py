"""The position probe of a judge: the same target shown with its options in another order (no Django inside).

An LLM judge may prefer an option for where it stands rather than what it says. The probe judges a sample of
targets again with the options permuted (the gold option moves with its text, so the right verdict is the
same) and compares the two verdicts: a position-invariant judge gives the same label and belief.

``order`` is the permutation as shown: position i of the probe shows the original option ``order[i]``.
"""
from __future__ import annotations

from dataclasses import replace

from evaluation.judge.specs import CLUE_GRAPH, FREE_TEXT, SCREENING, JudgeInput
from foundation.words import gettext_noop

REVERSED, ROTATED = "reversed", "rotated"
#: The permutations a probe may apply (a model JudgeRun's ``probe`` field).
PERMUTATIONS = (REVERSED, ROTATED)
#: The tasks whose judge sees the options (a clue-graph draft sees only the gold answer: nothing to permute).
PROBED_TASKS = (FREE_TEXT, SCREENING)
NOT_PROBED = {CLUE_GRAPH: gettext_noop("a clue-graph draft sees only the gold answer: there is no option order to "
                                       "permute")}


def option_order(kind: str, n: int) -> tuple[int, ...]:
    """The options' order under the permutation ``kind``: reversed, or rotated one place (the first goes last)."""
    if kind == REVERSED:
        return tuple(range(n - 1, -1, -1))
    if kind == ROTATED:
        return tuple(range(1, n)) + ((0,) if n else ())
    raise ValueError(f"unknown permutation {kind!r}; choose from {', '.join(PERMUTATIONS)}")


def moves(kind: str, n: int) -> bool:
    """Whether the permutation changes the order of n options at all (a single option stays where it is)."""
    return option_order(kind, n) != tuple(range(n))


def permuted(data: JudgeInput, kind: str) -> JudgeInput:
    """The same target with its options in the permuted order; the gold option keeps its text."""
    order = option_order(kind, len(data.options))
    answer_index = order.index(data.answer_index) if 0 <= data.answer_index < len(order) else data.answer_index
    return replace(data, options=tuple(data.options[i] for i in order), answer_index=answer_index)


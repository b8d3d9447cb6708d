"""Score one result: what a model's outcome on one shown item is worth (no Django inside).

`score_outcome` turns the method's :class:`~evaluation.prompting.methods.Outcome` for an item as it
was shown (:class:`~evaluation.prompting.prompts.Presented`) into the stored judgement of that row:
the parse status, the chosen option in the item's original order, correctness, and the
KeyInfo score (ROUGE-L F1 against the gold key information). `evaluation.statistics.metrics`
aggregates many such rows; `evaluation.execution.chunks` only copies them into the database.
"""
from __future__ import annotations

from dataclasses import dataclass

from annotation.keyinfo import keyinfo_score
from evaluation.prompting.answer_reading import MISSING, OK, section_text
from evaluation.prompting.methods import Outcome
from evaluation.prompting.prompts import Presented

#: Stored labels are at most this long (Result.answer_label).
LABEL_MAX = 10


@dataclass(frozen=True)
class Score:
    parse_status: str
    answer_index: int | None  # 0-based, in the item's original option order
    answer_label: str  # the label the model wrote, as shown
    is_correct: bool | None  # None for free-text answers (judged later) and failed calls
    keyinfo: float | None  # None: the item has no gold key information


def answer_shown_first(shown: Presented) -> bool:
    """The correct option was shown in the first position (what always-first-option would get right)."""
    return shown.order[0] == shown.item.answer_index


def score_outcome(shown: Presented, outcome: Outcome) -> Score:
    keyinfo = keyinfo_score(outcome.key_information, list(shown.item.key_information))
    if outcome.answer is None:  # free text: "ok" when the output has an answer section
        status = OK if section_text(outcome.output, "answer") else MISSING
        return Score(parse_status=status, answer_index=None, answer_label="", is_correct=None, keyinfo=keyinfo)
    answer_index = shown.original_index(outcome.answer.index)
    return Score(parse_status=outcome.answer.status, answer_index=answer_index,
                 answer_label=outcome.answer.label[:LABEL_MAX], is_correct=answer_index == shown.item.answer_index,
                 keyinfo=keyinfo)

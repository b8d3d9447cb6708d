"""Scoring one result (evaluation.prompting.scoring, no database): parse status, original-order answer, correctness, KeyInfo."""
import pytest

from annotation.keyinfo import keyinfo_score
from evaluation.prompting.answer_reading import AMBIGUOUS, MISSING, OK
from evaluation.prompting.methods import Outcome
from evaluation.prompting.prompts import ItemView, present
from evaluation.prompting.scoring import answer_shown_first, score_outcome

ITEM = ItemView(
    id=11, context="The vase was found broken. Wet paw prints led to the sofa.", question="Who broke the vase?",
    options=("The butler", "The cat", "The wind", "Nobody"), answer_index=1,
    key_information=("Wet paw prints led to the sofa", "The vase was found broken"), reasoning="",
)
GOLD = "Wet paw prints led to the sofa\nThe vase was found broken"


def read(shown, output):
    return Outcome().read(shown, output)


def test_the_answer_is_mapped_back_to_the_original_order_before_it_is_judged():
    shown = present(ITEM, seed=5, permute=True)
    assert shown.order != tuple(range(4))  # the seed really permutes this item
    label = shown.answer_label
    score = score_outcome(shown, read(shown, f"### Key Information:\n{GOLD}\n### Answer: {label}"))
    assert (score.parse_status, score.answer_index, score.is_correct) == (OK, 1, True)
    assert score.answer_label == label
    assert score.keyinfo == pytest.approx(1.0)
    wrong = next(lab for lab in shown.labels if lab != label)
    score = score_outcome(shown, read(shown, f"### Answer: {wrong}"))
    assert score.is_correct is False and score.answer_index == shown.order[shown.labels.index(wrong)] != 1
    assert score.keyinfo == 0.0


def test_parse_failures_are_wrong_with_no_answer():
    shown = present(ITEM, seed=1, permute=False)
    missing = score_outcome(shown, read(shown, "I cannot tell."))
    assert (missing.parse_status, missing.answer_index, missing.is_correct) == (MISSING, None, False)
    ambiguous = score_outcome(shown, read(shown, "### Answer: 1 or 2"))
    assert (ambiguous.parse_status, ambiguous.answer_index, ambiguous.is_correct) == (AMBIGUOUS, None, False)


def test_keyinfo_is_rouge_l_against_the_gold_key_information():
    shown = present(ITEM, seed=1, permute=False)
    said = "Paw prints led to the sofa"
    score = score_outcome(shown, read(shown, f"### Key Information:\n{said}\n### Answer: 2"))
    assert score.keyinfo == pytest.approx(keyinfo_score(said, list(ITEM.key_information)))
    assert 0 < score.keyinfo < 1


def test_free_text_is_not_judged_here():
    shown = present(ITEM, seed=1, permute=False)
    answered = Outcome(output="### Key Information:\nWet paw prints\n### Answer:\nThe cat", key_information="Wet paw prints",
                       free_answer="The cat")
    score = score_outcome(shown, answered)
    assert (score.parse_status, score.is_correct, score.answer_index, score.answer_label) == (OK, None, None, "")
    assert score.keyinfo > 0
    assert score_outcome(shown, Outcome(output="no sections at all")).parse_status == MISSING


def test_answer_shown_first_follows_the_shown_order():
    assert not answer_shown_first(present(ITEM, seed=1, permute=False))  # the answer is option 2
    shown = [present(ITEM, seed=seed, permute=True) for seed in range(40)]
    assert {answer_shown_first(s) for s in shown} == {True, False}
    assert all(answer_shown_first(s) == (s.order[0] == 1) for s in shown)

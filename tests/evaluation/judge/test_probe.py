"""evaluation.judge.probe: the permutations of a position probe move the options and keep the gold option's text."""
import pytest

from evaluation.judge import probe
from evaluation.judge.specs import JudgeInput


def data(options, answer_index=1) -> JudgeInput:
    return JudgeInput(target="item:1", item_id=1, item_version=1, context="c", question="q",
                      options=tuple(options), answer_index=answer_index, answer="a")


def test_reversed_and_rotated_orders():
    assert probe.option_order(probe.REVERSED, 4) == (3, 2, 1, 0)
    assert probe.option_order(probe.ROTATED, 4) == (1, 2, 3, 0)
    assert probe.option_order(probe.REVERSED, 0) == probe.option_order(probe.ROTATED, 0) == ()
    with pytest.raises(ValueError):
        probe.option_order("shuffled", 4)


@pytest.mark.parametrize("kind", probe.PERMUTATIONS)
@pytest.mark.parametrize("answer_index", [0, 1, 3])
def test_permuted_keeps_the_gold_text_and_every_option(kind, answer_index):
    original = data(["A", "B", "C", "D"], answer_index)
    shown = probe.permuted(original, kind)
    assert shown.gold_answer == original.gold_answer
    assert sorted(shown.options) == sorted(original.options) and shown.options != original.options
    order = probe.option_order(kind, 4)
    assert [original.options[i] for i in order] == list(shown.options)
    assert (shown.target, shown.item_version, shown.answer) == (original.target, original.item_version, original.answer)


def test_moves_says_when_the_order_changes():
    assert probe.moves(probe.REVERSED, 2) and probe.moves(probe.ROTATED, 3)
    assert not probe.moves(probe.REVERSED, 1) and not probe.moves(probe.ROTATED, 1)


def test_clue_graph_is_not_probed():
    assert "clue-graph" not in probe.PROBED_TASKS and "clue-graph" in probe.NOT_PROBED

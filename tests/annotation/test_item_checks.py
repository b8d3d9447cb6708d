"""annotation.item_checks: the options of an item, clues that cover most of the context."""
from annotation.item_checks import clue_span_checks, option_checks, same_options


def test_option_checks():
    assert option_checks(["a", "b"], 1) == []
    kinds = {c.kind for c in option_checks(["a", "A ", ""], 5)}
    assert kinds == {"duplicate_option", "empty_option", "no_correct_option"}
    assert [c.kind for c in option_checks(["Box A.", "box  a", "Box B"], 0)] == ["duplicate_option"]
    assert [c.kind for c in option_checks(["only one"], 0)] == ["too_few_options"]


def test_same_options_ignore_case_spacing_and_surrounding_punctuation_but_not_inner_symbols():
    assert same_options(["Box A.", "box  a", "Box B", "“box a”"]) == [[0, 1, 3]]
    assert same_options(["", " ", "a"]) == []  # empty options are another check
    # Real items (test split 1167, 2181): options that differ only in their operators are not the same.
    assert same_options(["(3 + 3) × (8 ÷ 8)", "(3 - 3 + 8) × 8", "(3 + 3 ÷ 8) × 8", "(3 × 3) + (8 ÷ 8)"]) == []
    assert same_options(["98-76+54+3+21=100", "98-76+54-3+21=100"]) == []
    assert [c.kind for c in option_checks(["98-76+54+3+21=100", "98-76+54-3+21=100"], 0)] == []


def test_a_clue_covering_more_than_half_of_the_context_is_flagged():
    context = "x" * 100
    assert clue_span_checks(context, [(1, 20), (2, 50)]) == []  # half is not most
    (check,) = clue_span_checks(context, [(1, 20), (2, 51), (3, 0)])
    assert check.kind == "broad_clue" and check.message.startswith("clue 2 covers 51% of the context")
    assert clue_span_checks("", [(1, 5)]) == []

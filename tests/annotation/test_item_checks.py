"""annotation.item_checks: option checks and whether the last conclusion names the answer."""
from annotation.item_checks import option_checks, reaches_answer


def test_option_checks_and_reaching_the_answer():
    assert option_checks(["a", "b"], 1) == []
    kinds = {c.kind for c in option_checks(["a", "A ", ""], 5)}
    assert kinds == {"duplicate_option", "empty_option", "no_correct_option"}
    options = ["The gardener", "The butler", "The cook"]
    assert reaches_answer("Therefore the gardener did it", options, 0)
    assert not reaches_answer("the butler", options, 0)
    assert not reaches_answer("", options, 0)

"""annotation.item_checks: the options of an item."""
from annotation.item_checks import option_checks


def test_option_checks():
    assert option_checks(["a", "b"], 1) == []
    kinds = {c.kind for c in option_checks(["a", "A ", ""], 5)}
    assert kinds == {"duplicate_option", "empty_option", "no_correct_option"}
    assert [c.kind for c in option_checks(["Box A.", "box  a", "Box B"], 0)] == ["duplicate_option"]
    assert [c.kind for c in option_checks(["only one"], 0)] == ["too_few_options"]

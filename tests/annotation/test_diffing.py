"""annotation.diffing: word-level and field-level diffs."""
from annotation.diffing import content_diff, inline_diff


def test_inline_diff_marks_words_and_escapes():
    assert inline_diff("the cat sat", "the dog sat") == "the <del>cat</del><ins>dog</ins> sat"
    assert "&lt;b&gt;" in inline_diff("", "<b>")
    diffs = content_diff({"question": "a", "options": ["x", "y"]}, {"question": "a", "options": ["x", "z"]})
    assert [d.field for d in diffs] == ["options"]

"""annotation.diffing: word-level and field-level diffs."""
from annotation.diffing import content_diff, inline_diff


def test_inline_diff_marks_words_and_escapes():
    assert inline_diff("the cat sat", "the dog sat") == "the <del>cat</del><ins>dog</ins> sat"
    assert "&lt;b&gt;" in inline_diff("", "<b>")
    diffs = content_diff({"question": "a", "options": ["x", "y"]}, {"question": "a", "options": ["x", "z"]})
    assert [d.field for d in diffs] == ["options"]


def test_a_three_way_merge_takes_their_fields_keeps_mine_and_names_what_both_changed():
    from hypothesis import given
    from hypothesis import strategies as st

    from annotation.diffing import merge_three

    fields = ("question", "options", "answer_index")
    text = st.sampled_from(["a", "b", "c"])

    @given(base=st.fixed_dictionaries({"question": text, "options": st.lists(text, min_size=2, max_size=2),
                                       "answer_index": st.integers(0, 1)}),
           theirs_q=text, mine_q=text, theirs_o=st.lists(text, min_size=2, max_size=2),
           mine_o=st.lists(text, min_size=2, max_size=2))
    def check(base, theirs_q, mine_q, theirs_o, mine_o):
        theirs, mine = {**base, "question": theirs_q, "options": theirs_o}, {**base, "question": mine_q, "options": mine_o}
        merge = merge_three(base, theirs, mine, fields)
        for name, b, t, m in [("question", base["question"], theirs_q, mine_q),
                              *[(f"options {i + 1}", base["options"][i], theirs_o[i], mine_o[i]) for i in range(2)]]:
            got = merge.content["question"] if name == "question" else merge.content["options"][int(name[-1]) - 1]
            assert got == (t if m == b else m)  # theirs where I kept the base, else mine
            assert (name in merge.clashes) == (m != b and t != b and m != t)
            assert (name in merge.taken) == (m == b and t != b)

    check()
    # Options of another length are one field.
    merge = merge_three({"options": ["a", "b"]}, {"options": ["a", "b", "c"]}, {"options": ["x", "b"]}, ("options",))
    assert merge.content["options"] == ["x", "b"] and merge.clashes == ("options",)

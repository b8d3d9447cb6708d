"""annotation.translations: an edit of the original marks its translations out of date, and an edit restoring the
original brings them up to date again."""
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.translations import MADE_FROM, MIRRORED_FIELDS, OUT_OF_DATE, following_the_original, is_out_of_date

ZH = {"context": "故事", "question": "谁？", "options": ["甲", "乙"]}
ORIGINAL = {"context": "A story.", "question": "Who?", "options": ["A", "B"]}


def test_a_change_of_a_mirrored_field_marks_every_translation_with_what_it_was_made_from():
    after = {**ORIGINAL, "options": ["B", "A"]}
    marked = following_the_original({"zh-hans": ZH, "de": {**ZH}}, ORIGINAL, after)
    assert set(marked) == {"zh-hans", "de"}
    for entry in marked.values():
        assert is_out_of_date(entry) and entry[OUT_OF_DATE] == "options" and set(entry[MADE_FROM]) == {"options"}
        assert {key: entry[key] for key in ZH} == ZH  # the translation itself is kept


def test_changing_the_original_back_brings_the_translation_up_to_date_field_by_field():
    reordered = {**ORIGINAL, "options": ["B", "A"]}
    marked = following_the_original({"zh-hans": ZH}, ORIGINAL, reordered)
    retold = {**reordered, "context": "Another story."}
    both = following_the_original(marked, reordered, retold)  # a second field changed: recorded too
    assert both["zh-hans"][OUT_OF_DATE] == "context, options"
    options_back = {**retold, "options": ORIGINAL["options"]}
    one = following_the_original(both, retold, options_back)
    assert one["zh-hans"][OUT_OF_DATE] == "context" and set(one["zh-hans"][MADE_FROM]) == {"context"}
    assert following_the_original(one, options_back, ORIGINAL) == {"zh-hans": ZH}  # all back: up to date


def test_a_mark_without_its_record_stays_and_other_changes_or_no_translation_change_nothing():
    legacy = {"zh-hans": {**ZH, OUT_OF_DATE: "options"}}  # marked before the record was kept
    assert following_the_original(legacy, {**ORIGINAL, "options": ["B", "A"]}, ORIGINAL) is None
    assert following_the_original({"zh-hans": ZH}, ORIGINAL, dict(ORIGINAL)) is None
    assert following_the_original({}, ORIGINAL, {**ORIGINAL, "context": "x"}) is None
    assert following_the_original(None, ORIGINAL, {**ORIGINAL, "context": "x"}) is None
    assert not is_out_of_date(ZH) and not is_out_of_date("text")


VALUES = {"context": ["A story.", "Another story.", "A third."], "question": ["Who?", "Why?"],
          "options": [["A", "B"], ["B", "A"], ["A", "B", "C"]]}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(*(st.integers(0, len(VALUES[name]) - 1) for name in MIRRORED_FIELDS)), max_size=8))
def test_after_any_sequence_of_edits_a_translation_is_out_of_date_exactly_where_the_original_differs(steps):
    """Property: whatever edits follow one another, the translation is marked by exactly the mirrored fields in
    which the original now differs from the one it was made from (none: no mark, no record)."""
    made_from = {name: VALUES[name][0] for name in MIRRORED_FIELDS}
    original, translations = dict(made_from), {"zh-hans": ZH}
    for step in steps:
        edited = {name: VALUES[name][index] for name, index in zip(MIRRORED_FIELDS, step)}
        translations = following_the_original(translations, original, edited) or translations
        original = edited
        differs = [name for name in MIRRORED_FIELDS if original[name] != made_from[name]]
        entry = translations["zh-hans"]
        assert entry.get(OUT_OF_DATE, "") == ", ".join(differs), (steps, entry)
        assert set(entry.get(MADE_FROM, {})) == set(differs)
        assert {key: entry[key] for key in ZH} == ZH


def test_every_pair_of_values_of_one_field_marks_exactly_when_they_differ():
    for name in MIRRORED_FIELDS:
        for old, new in itertools.product(VALUES[name], repeat=2):
            followed = following_the_original({"zh-hans": ZH}, {**ORIGINAL, name: old}, {**ORIGINAL, name: new})
            assert (followed is not None) == (old != new)

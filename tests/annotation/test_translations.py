"""annotation.translations: an edit of the original marks its translations out of date."""
from annotation.translations import OUT_OF_DATE, is_out_of_date, marked_out_of_date

ZH = {"context": "故事", "question": "谁？", "options": ["甲", "乙"]}


def test_a_change_of_a_mirrored_field_marks_every_translation_once():
    marked = marked_out_of_date({"zh-hans": ZH, "de": {**ZH}}, ["options", "evidence"])
    assert marked == {"zh-hans": {**ZH, OUT_OF_DATE: "options"}, "de": {**ZH, OUT_OF_DATE: "options"}}
    assert all(is_out_of_date(entry) for entry in marked.values())
    assert marked_out_of_date(marked, ["context"]) is None  # already marked: the first mark stays


def test_a_change_of_other_fields_or_no_translation_marks_nothing():
    assert marked_out_of_date({"zh-hans": ZH}, ["answer_index", "evidence", "reasoning", "extra"]) is None
    assert marked_out_of_date({}, ["options"]) is None and marked_out_of_date(None, ["options"]) is None
    assert not is_out_of_date(ZH) and not is_out_of_date("text")

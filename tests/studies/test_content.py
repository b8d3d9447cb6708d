"""What a participant sees and the validation of what they send (pure)."""
import pytest

from studies.content import AnswerInvalid, clean_answer, parse_highlights, shown_item

CTX = "The butler was in the garden. The door was locked from inside."


def test_valid_answer_is_cleaned_sorted_and_deduplicated():
    spans = [{"start": 30, "end": 62, "text": CTX[30:62]}, {"start": 4, "end": 10, "text": "butler"},
             {"start": 4, "end": 10, "text": "butler"}]
    option, conf, cleaned = clean_answer(context=CTX, n_options=4, chosen_option="2", confidence="5", highlights=spans)
    assert (option, conf) == (2, 5)
    assert [s["start"] for s in cleaned] == [4, 30]


@pytest.mark.parametrize("kwargs, field", [
    ({"chosen_option": "4"}, "chosen_option"),
    ({"chosen_option": "-1"}, "chosen_option"),
    ({"chosen_option": None}, "chosen_option"),
    ({"confidence": "6"}, "confidence"),
    ({"confidence": "0"}, "confidence"),
    ({"highlights": [{"start": 0, "end": 999, "text": "x"}]}, "highlights"),
    ({"highlights": [{"start": 4, "end": 10, "text": "BUTLER"}]}, "highlights"),
    ({"highlights": [{"start": 5, "end": 4, "text": ""}]}, "highlights"),
    ({"highlights": "nope"}, "highlights"),
    ({"highlights": [{"start": 0, "end": 3}] * 100}, "highlights"),
])
def test_invalid_answers_are_rejected(kwargs, field):
    args = {"context": CTX, "n_options": 4, "chosen_option": "1", "confidence": None, "highlights": [], **kwargs}
    with pytest.raises(AnswerInvalid) as error:
        clean_answer(**args)
    assert field in error.value.errors


def test_translation_is_used_when_complete():
    zh = {"context": "管家在花园里。", "question": "谁？", "options": ["甲", "乙"]}
    shown = shown_item(context="c", question="q", options=["a", "b"], translations={"zh-hans": zh}, language="zh-hans")
    assert shown.context == "管家在花园里。" and shown.options == ("甲", "乙")
    fallback = shown_item(context="c", question="q", options=["a", "b", "c"], translations={"zh-hans": zh},
                          language="zh-hans")
    assert fallback.context == "c"


@pytest.mark.parametrize("value", ["²", "٣", "9" * 5000, "1_0", True])
def test_odd_numbers_are_invalid_not_errors(value):
    """Unicode digits pass str.isdigit() but not int(); huge digit strings exceed int()'s limit: both were 500s."""
    with pytest.raises(AnswerInvalid) as error:
        clean_answer(context=CTX, n_options=4, chosen_option=value, confidence=value, highlights=[])
    assert set(error.value.errors) == {"chosen_option", "confidence"}


@pytest.mark.parametrize("raw", ["{not json", "[" * 50_000 + "]" * 50_000, "[" + "1," * 60_000 + "1]"])
def test_highlights_field_malformed_nested_or_oversized_is_invalid(raw):
    with pytest.raises(AnswerInvalid) as error:
        parse_highlights(raw)
    assert "highlights" in error.value.errors


def test_highlights_field_parses_json_and_empty():
    assert parse_highlights("") == [] and parse_highlights(None) == []
    assert parse_highlights('[{"start": 0, "end": 3, "text": "The"}]') == [{"start": 0, "end": 3, "text": "The"}]


def test_shown_item_says_which_language_was_shown():
    zh = {"context": "管家在花园里。", "question": "谁？", "options": ["甲", "乙"]}
    assert shown_item(context="c", question="q", options=["a", "b"], translations={"zh-hans": zh},
                      language="zh-hans").language == "zh-hans"
    assert shown_item(context="c", question="q", options=["a"], translations={"zh-hans": zh},
                      language="zh-hans").language == ""


def test_highlights_widened_to_whole_words_are_accepted_as_the_page_sends_them():
    """The page widens a selection to whole words ("utler was in the gar" -> "butler was in the garden."): the
    server takes the widened passage as it is, trailing punctuation and Chinese words included."""
    widened = CTX.index("butler"), CTX.index("garden.") + len("garden.")
    spans = [{"start": widened[0], "end": widened[1], "text": CTX[slice(*widened)]}]
    _, _, cleaned = clean_answer(context=CTX, n_options=4, chosen_option=0, confidence=None, highlights=spans)
    assert cleaned == spans and cleaned[0]["text"] == "butler was in the garden."
    zh = "管家说他整晚都在花园里。但是他的鞋子是干的。"
    word = {"start": zh.index("鞋子"), "end": zh.index("鞋子") + 2, "text": "鞋子"}
    assert clean_answer(context=zh, n_options=4, chosen_option=1, confidence=None, highlights=[word])[2] == [word]


# --------------------------------------------------------------------------- offsets as the page counts them

def _utf16_offsets_to_code_points(text: str, start: int, end: int) -> tuple[int, int]:
    """What studies/static/studies/question.js does before it sends a highlight (its `toServer`): the page counts
    UTF-16 units, the server code points."""
    units = [len(ch.encode("utf-16-le")) // 2 for ch in text]
    point_of, unit = {}, 0
    for point, width in enumerate(units):
        point_of[unit] = point
        unit += width
    point_of[unit] = len(text)
    return point_of[start], point_of[end]


@pytest.mark.parametrize("line_break", ["\r\n", "\r", "\n"])
def test_the_shown_context_is_the_text_a_browser_holds_so_offsets_after_a_line_break_match(line_break):
    """A context written in a textarea keeps CRLF; HTML parsing gives the page LF: the shown context (what is
    rendered and what highlights are checked against) is the browser's text, so a highlight after the line break,
    counted by the page, is accepted."""
    raw = f"First paragraph.{line_break}{line_break}Second: the butler was in the garden."
    shown = shown_item(context=raw, question=f"Who?{line_break}Really?", options=[f"a{line_break}b", "c"],
                       translations={"zh-hans": {"context": f"甲{line_break}乙管家", "question": "谁", "options": ["x", "y"]}},
                       language="")
    browser = raw.replace("\r\n", "\n").replace("\r", "\n")  # HTML's input-stream preprocessing
    assert shown.context == browser and "\r" not in shown.question + "".join(shown.options)
    start = browser.index("butler")
    spans = [{"start": start, "end": start + 6, "text": "butler"}]
    assert clean_answer(context=shown.context, n_options=2, chosen_option=0, confidence=None, highlights=spans)[2] == spans
    translated = shown_item(context=raw, question="q", options=["x", "y"],
                            translations={"zh-hans": {"context": f"甲{line_break}乙管家", "question": "谁", "options": ["x", "y"]}},
                            language="zh-hans")
    assert translated.context == "甲\n乙管家"


@pytest.mark.parametrize("story", [
    "😀 The butler was in the garden.",                       # an emoji before the word
    "𠀀𠀁 管家 𝒳 The butler was in the garden 🎩.",            # CJK Extension B and a math letter
    "Plain ASCII: the butler was in the garden.",
])
def test_offsets_sent_by_the_page_after_a_character_outside_the_bmp_match_the_shown_context(story):
    """The page counts UTF-16 units (two for a character outside the BMP), Python code points: question.js converts
    before sending, and the server checks code points; the stored highlight is the same text."""
    text_units = story.encode("utf-16-le")
    word = "garden"
    unit_start = text_units.decode("utf-16-le").index(word)  # str.index: code points; the page's offset in units is:
    unit_start = len(story[:unit_start].encode("utf-16-le")) // 2
    start, end = _utf16_offsets_to_code_points(story, unit_start, unit_start + len(word))
    spans = [{"start": start, "end": end, "text": word}]
    shown = shown_item(context=story, question="q", options=["a", "b"], translations={}, language="")
    assert clean_answer(context=shown.context, n_options=2, chosen_option=0, confidence=None, highlights=spans)[2] == spans
    if any(ord(ch) > 0xFFFF for ch in story[:story.index(word)]):  # the units the page counts are refused as they are
        with pytest.raises(AnswerInvalid):
            clean_answer(context=shown.context, n_options=2, chosen_option=0, confidence=None,
                         highlights=[{"start": unit_start, "end": unit_start + len(word), "text": word}])

"""Answer and key-information parsing on real-looking model outputs, including the shapes harnesses get wrong."""
import unicodedata

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from evaluation.prompting import answer_reading
from evaluation.prompting.answer_reading import (
    AMBIGUOUS,
    MISSING,
    OK,
    parse_answer,
    parse_free_answer,
    parse_key_information,
)
from tests.evaluation.corpus import reading

OPTIONS = ["The gardener", "The butler", "The maid", "The driver"]


@pytest.mark.parametrize(
    "output, index",
    [
        ("### Key Information:\nThe door was locked.\n\n### Answer:\n2", 1),
        ("### Key Information: The door was locked.\n### Answer: 3", 2),
        ("### Answer: Option 2", 1),
        ("### Answer: (4)", 3),
        ("### Answer: **2**", 1),
        ("**Answer:** 2", 1),
        ("**### Answer:**\n\n**3**", 2),
        ("### answer: 1", 0),
        ("### ANSWERS:\n4", 3),
        ("### Answer：2", 1),  # full-width colon
        ("Answer: 2.", 1),
        ("### Final Answer:\n`3`", 2),
        ("### Answer:\n2. The butler", 1),
        ("### Answer:\n2 (the butler had the key)", 1),
        ("### Answer: The butler", 1),  # written as the option's text
        ("### Answer:\nThe answer is option 3.", 2),
        ("After thinking, the answer is 4.", 3),  # no header at all
        ("I conclude the butler did it. ### Answer: 2", 1),  # header inline
    ],
)
def test_answer_shapes(output, index):
    parsed = parse_answer(output, OPTIONS)
    assert parsed.status == OK, parsed
    assert parsed.index == index


def test_last_answer_wins_when_an_answer_is_echoed_in_the_reasoning():
    output = (
        "### Thought:\nAt first I thought ### Answer: 1 would fit, since the gardener had mud on his boots.\n"
        "But the butler had the only key.\n\n### Key Information:\nthe only key\n\n### Answer:\n2"
    )
    assert parse_answer(output, OPTIONS).index == 1


def test_lowercase_header_in_reasoning_then_final_answer():
    output = "### Thought:\nanswer: 3 seems plausible but wrong.\n### Answer: 4"
    assert parse_answer(output, OPTIONS).index == 3


def test_the_template_copied_verbatim_is_ambiguous():
    output = "### Key Information:\nxxxxx\n\n### Answer:\n1/2/3/4"
    assert parse_answer(output, OPTIONS).status == AMBIGUOUS


def test_two_different_answers_are_ambiguous():
    assert parse_answer("### Answer: 2 or 3", OPTIONS).status == AMBIGUOUS
    assert parse_answer("### Answer: options 1 and 4 are both possible", OPTIONS).status == AMBIGUOUS


def test_out_of_range_and_missing():
    assert parse_answer("### Answer: 7", OPTIONS).status == MISSING
    assert parse_answer("### Key Information:\nsomething", OPTIONS).status == MISSING
    assert parse_answer("", OPTIONS).status == MISSING
    assert parse_answer("### Answer:\n", OPTIONS).status == MISSING


def test_empty_last_answer_falls_back_to_the_previous_one():
    # A truncated output: the last header has nothing after it; the earlier answer still counts.
    assert parse_answer("### Answer: 2\n### Summary: ...\n### Answer:", OPTIONS).index == 1


def test_letters_when_letters_were_shown():
    assert parse_answer("### Answer: B", OPTIONS, labels="letters").index == 1
    assert parse_answer("### Answer: (C)", OPTIONS, labels="letters").index == 2
    assert parse_answer("### Answer: Option D", OPTIONS, labels="letters").index == 3
    # With numbers shown, a bare letter is not an answer.
    assert parse_answer("### Answer: B", OPTIONS).status == MISSING


def test_option_count_as_int():
    assert parse_answer("### Answer: 2", 2).index == 1
    assert parse_answer("### Answer: 3", 2).status == MISSING


def test_key_information_section():
    output = (
        "### Thought:\nstep\n### **Key Information**:\nThe door was locked from inside.\nThe key was in his pocket."
        "\n\n### Answer: 2"
    )
    assert parse_key_information(output) == "The door was locked from inside.\nThe key was in his pocket."
    assert parse_key_information("### key information: the mud\n### answer: 1") == "the mud"
    assert parse_key_information("### Key Information:\nxxxxx\n### Answer: 1") == ""
    assert parse_key_information("no sections") == ""


def test_free_answer():
    assert parse_free_answer("### Key Information:\nx y\n### Answer:\nThe butler did it.") == "The butler did it."
    assert parse_free_answer("The butler did it.") == "The butler did it."


def test_an_out_of_range_final_answer_is_not_replaced_by_an_earlier_one():
    # The final answer names no shown option: the echo of 2 earlier must not win.
    assert parse_answer("### Answer: 2\n### Thought: on reflection...\n### Answer: 5", OPTIONS).status == MISSING
    assert parse_answer("### Answer: 2\n### Answer: 0", OPTIONS).status == MISSING


@pytest.mark.parametrize("output", ["### Answer: -1", "### Answer: 2.5", "### Answer: -3", "### Answer: 1.5"])
def test_negative_and_fractional_numbers_are_not_options(output):
    assert parse_answer(output, OPTIONS).status != OK


def test_a_lowercase_article_is_not_a_letter_answer():
    assert parse_answer("### Answer: a locked door means the butler", OPTIONS, labels="letters").index == 1
    assert parse_answer("### Answer: a stranger did it", OPTIONS, labels="letters").status == MISSING
    assert parse_answer("### Answer: b", OPTIONS, labels="letters").index == 1
    assert parse_answer("### Answer: (c)", OPTIONS, labels="letters").index == 2


# --- what a person reads (issue 13) ------------------------------------------------------------------

@pytest.mark.parametrize(
    "output",
    [
        "### Summary:\nThe answer is 1/2.",
        "The answer is: 1/2/3/4",
        "### Answer:\n1/2/3/4",
        "### Answer 1:\n2. xxxxxx\n### Answer 2:\n3. xxxxxx\n### Answer 3:\n4. xxxxxx\n### Answer 4:\n5. xxxxxx",
        "### Answer: 1. xxxxxx\n2. xxxxxx\n3. xxxxxx\n4. xxxxxx",
        "### Answer:\n1. The gardener\n2. The butler\n3. The maid\n4. The driver",

        "### Answer:\n2. xxxxxx",
        "### Answer:\n1\n2\n3\n4",
    ],
)
def test_template_echoes_are_not_answers(output):
    assert parse_answer(output, OPTIONS).status == AMBIGUOUS


def test_placeholders_alone_are_missing():
    assert parse_answer("### Key Information:\nxxxxx\n\n### Answer:\nxxxxx", OPTIONS).status == MISSING


@pytest.mark.parametrize(
    "output, index",
    [
        ("3", 2), ("1\n", 0), ("**3**", 2), ("(3)", 2), ("Option 3", 2), ("3. The maid", 2),
        ("3\n\nThe maid was in the kitchen.", 2), ("The maid was in the kitchen all night.\n\n3", 2),
        ("The answer to the question is 4", 3), ("The answer is the butler.", 1),
        ("I think the answer might be 2.", 1), ("After weighing it all, option 3 is correct.", 2),
        ("The final answer is $\\boxed{3}$.", 2), ("### Answer:\n\\boxed{\\text{3}}", 2),
        ("### Answer:\nThe butler, because he had the key; the gardener was away.", 1),
        ('{"key_information": "the key", "answer": 3}', 2), ("The answer is the third option.", 2),
        ("<think>maybe 1</think>\n### Answer: 3", 2), ("### 答案：\n３", 2), ("根据线索，答案是3。", 2),
        ("The butler did it.", 1), ("It is in the context and answer:\n\n4. The driver", 3),
    ],
)
def test_what_a_person_reads(output, index):
    parsed = parse_answer(output, OPTIONS)
    assert (parsed.status, parsed.index) == (OK, index)


@pytest.mark.parametrize(
    "output, status",
    [
        ("The answer is the butler or the maid.", AMBIGUOUS),
        ("The answer is 2. Actually, looking again, the answer is 3.", AMBIGUOUS),
        ("### Answer:\n2. The gardener", AMBIGUOUS),  # the label and the text name different options
        ("### Answer:\nEither the butler or the maid.", AMBIGUOUS),
        ("<think>the answer is probably 3, but", MISSING),  # still thinking: no final answer
        ("Option 2 is not correct.", MISSING),
        ("Here are the options:\n1. The gardener\n2. The butler\n3. The maid\n4. The driver", MISSING),  # no answer
        ("1\n2\n3\n4", AMBIGUOUS),
        ("### Answer:\n4/12/30", AMBIGUOUS),  # another number right after the label, even out of range
        ("### Key Information:\nthe mud\n2/3/4", AMBIGUOUS),  # the template's 1/2/3/4, cut
        ("### Key Information:\nhalf (2/4) or three quarters (3/9)\nSo the answer is 5", MISSING),  # a fraction
        ("### Possible Responses:\n1. 2\n2. 3\n3. 4", MISSING),  # a list of possibilities, none chosen
        ("1. The gardener\n2. The butler\n\n### Clues:\nxxxxx", MISSING),
        ("The answer is C.", MISSING),  # a letter when numbers were shown
        ("### Answer:\nNone of the options is correct.", MISSING),
    ],
)
def test_what_a_person_does_not_read_as_one_answer(output, status):
    assert parse_answer(output, OPTIONS).status == status


def test_the_answer_is_accepts_letters_and_chinese_when_letters_were_shown():
    assert parse_answer("The correct option is C.", OPTIONS, labels="letters").index == 2
    assert parse_answer("ANSWER: C", OPTIONS, labels="letters").index == 2
    assert parse_answer("综上所述，正确答案为选项B。", OPTIONS, labels="letters").index == 1
    assert parse_answer("### Answer:\nA/B/C/D", OPTIONS, labels="letters").status == AMBIGUOUS
    assert parse_answer("### Answer:\nA lit room was expected.", OPTIONS, labels="letters").status == MISSING
    assert parse_answer("xxxxxx\nC\nD", OPTIONS, labels="letters").status == AMBIGUOUS  # two bare labels


def test_a_label_with_a_garbled_copy_of_another_option_is_ambiguous():
    options = ["In mathematical operations, 7 plus 8 equals 15.", "In terms of time, 7 hours after 8 o'clock is 3.",
               "In a numerical game, the numbers 7 and 8 combined form the number 78.",
               "In some special coding system, the numbers 7 and 8 could represent 3."]
    garbled = "B. In some special coding system, the numbers 7 and 8 combined form the number 78."
    assert parse_answer(garbled, options, labels="letters").status == AMBIGUOUS
    assert parse_answer("C. In a numerical game, 7 and 8 combined form 78.", options, labels="letters").index == 2


def test_numeric_options_are_read_by_value_and_a_clash_with_a_label_is_ambiguous():
    values = ["-3", "-1", "2", "4"]
    assert parse_answer("### Answer: 2", values).index == 1  # a bare serial number: label 2 (-1), see below
    assert parse_answer("The missing value is 2, so the answer is 2 (option 3).", values).status != OK
    assert parse_answer("### Answer: 4", values).index == 3
    assert parse_answer("### Answer: -3", values).index == 0
    money = ["50 yuan", "70 yuan", "80 yuan", "100 yuan"]
    assert parse_answer("### Answer: 70 yuan", money).index == 1
    assert parse_answer("### Answer: 80", money).index == 2
    assert parse_answer("### Answer:\n50 yuan or 70 yuan", money).status == AMBIGUOUS
    assert parse_answer("### Answer: 866", ["866", "841", "34", "37"]).index == 0


@pytest.mark.parametrize("options", [["5", "2", "1", "3"], ["1/120", "1/25", "1/5", "1"]])  # test items 2131, 3789
@pytest.mark.parametrize(
    "output, index",
    [
        ("### Key Information:\nThe door was locked.\n\n### Answer:\n1", 0),  # the first-option baseline's output
        ("1", 0), ("1.", 0), ("**1**", 0), ("Answer: 1", 0), ("Answer: 3.", 2), ("### Answer: 4", 3),
        ("### Answer: 1.", 0), ("**Answer:** 2", 1), ("### Answer:\n(3)", 2), ("### Answer: Option 1", 0),
        ("The door was locked.\n\n1", 0),
    ],
)
def test_a_bare_serial_number_is_the_serial_number_even_where_an_option_is_that_number(output, index, options):
    """Every prompt asks for the serial number of the option: a number alone where it is asked for is that serial
    number, as a person reading the prompt reads it, even where an option's text is the same number."""
    parsed = parse_answer(output, options)
    assert (parsed.status, parsed.index) == (OK, index)


def test_a_number_that_is_not_alone_still_clashes_with_an_option_of_that_value():
    options = ["5", "2", "1", "3"]
    assert parse_answer("The answer is 1.", options).status == AMBIGUOUS  # prose: the value 1 or option 1
    assert parse_answer("### Answer:\n3\n\nThe total is 3.", options).status == AMBIGUOUS
    assert parse_answer("### Answer: 3. 1", options).index == 2  # the label with its own option's text


# --- the corpus of real outputs ------------------------------------------------------------------

def test_the_reader_agrees_with_a_person_on_the_corpus(detectbench_dir):
    """No false answer at all (none on a template echo), and >= 98% of the rows read as the person read them.

    A false answer (an option read where the person read another one, or none) moves accuracy; an
    answer read as ambiguous/missing only moves the parse-failure count, which is reported beside it.
    """
    rows = reading.load_rows()
    assert len(rows) >= 300
    result = reading.measure(rows, reading.load_items(detectbench_dir))
    assert result.echo_rows >= 40
    assert result.echo_false_answers == []
    assert result.false_answers == [], result.disagreements
    assert result.rate >= 0.98, f"{result.agreed}/{result.rows}: {result.disagreements}"



_MARKS = st.sampled_from(["<think>", "</think>", "<THINK>", "\\text{", "\\boxed{", "\\(", "$", "$$", "}", "##", "###",
                          " ## Answer:", "\n", "\r\n", "Answer: 2", "x", "İ", "ß", "２", "："])


@given(st.lists(st.one_of(_MARKS, st.text(max_size=6)), max_size=25).map("".join))
@hypothesis_settings(max_examples=3000, deadline=None)
def test_the_quick_looks_for_marks_never_change_a_reading(text):
    """_prepare and split_sections skip a pattern when its mark (<, a backslash, $, ##) is not in the text: the
    result is the whole chain's, applied without skipping."""
    full = unicodedata.normalize("NFKC", text.replace("\r\n", "\n"))
    full = answer_reading._THINK.sub("", full).replace("</think>", "")
    for _ in range(3):
        full = answer_reading._LATEX_WRAP.sub(r"\1", full)
    full = answer_reading._LATEX_MARK.sub("", answer_reading._BOXED.sub(r" the answer is \1. ", full))
    assert answer_reading._prepare(text) == full
    lines = text.replace("\r\n", "\n")
    assert answer_reading._INLINE_HEADER.sub("\n", lines) == lines or "##" in lines


_HEADS = st.lists(st.one_of(_MARKS, st.sampled_from([
    "### Key Information:", "### Answer:", "### Answer 2:", "Answer: 3", "the answer is 4", "option three",
    "### Answer:\n2", "1/2/3/4", "xxxxx", "The butler", "\n\n", " ", "#", "**", "＃＃＃ Answer：", "<think>", "A",
    "＜think＞", "﹤think﹥", "＼boxed{3}", "﹨text{2}", "＄", "答案：3",  # NFKC makes these <think>, \boxed, $
]), st.text(max_size=8)), max_size=20).map("".join)
_EDGY_TAILS = st.tuples(
    st.sampled_from(["", "\n", "\n\n", " \n", "\t"]),  # before the header
    st.sampled_from(["###", "##", "####", "### ", "###\t"]),
    st.sampled_from(["Answer", "answer", "Answers", "Final Answer", "Answer 1"]),
    st.sampled_from([":", " :", "：", ""]),
    st.sampled_from(["\n", " ", "", "\n\n", "\n \n", "\t"]),
    st.sampled_from(["1", "2", "4", "5", "0", "01", "10", "12", "A", "C", "E", "a", "Z", "1.", "(2)", "2 or 3", "１"]),
    st.sampled_from(["", "\n", " ", "\n\n", " \n\t", "\nmore", "\n### Thought:"]),
).map("".join)
_PROMPTS_TAILS = st.tuples(  # the prompt's own format: mostly read by the shortcut
    st.sampled_from(["\n", "\n\n", ""]), st.sampled_from(["### Answer:", "###Answer:", "### Answer :"]),
    st.sampled_from(["\n", " ", "\n\n"]), st.sampled_from(["1", "2", "3", "4", "9", "11", "A", "B", "D", "K"]),
    st.sampled_from(["", "\n", " "]),
).map("".join)
_TAILS = st.one_of(_PROMPTS_TAILS, _EDGY_TAILS)


@given(head=_HEADS, tail=_TAILS, count=st.integers(1, 12), style=st.sampled_from(["numbers", "letters"]),
       texts=st.booleans())
@hypothesis_settings(max_examples=4000, deadline=None)
def test_the_answer_alone_is_read_as_the_rules_read_it(head, tail, count, style, texts):
    """An output ending in an answer section of one label is read without the general rules; wherever that shortcut
    answers, the rules answer the same (outputs built to sit on its edges: other answer sections, marks that rewrite
    the text, labels out of range or of the other style, full-width and NFKC look-alikes, text after the label)."""
    output = head + tail
    options = [f"Option text {i}" for i in range(count)] if texts else count
    quick = answer_reading._answer_alone(output, count, style)
    if quick is not None:
        assert quick == answer_reading._read_by_rules(output, options, style), (output, count, style)
        assert parse_answer(output, options, labels=style) == quick


def test_the_answer_alone_takes_the_prompts_format_and_nothing_unsure():
    key = "### Key Information:\nThe door was locked from inside.\n\n"
    assert answer_reading._answer_alone(key + "### Answer:\n2", 4, "numbers") == answer_reading.ParsedAnswer(OK, 1, "2")
    assert answer_reading._answer_alone("### Answer: C", 4, "letters") == answer_reading.ParsedAnswer(OK, 2, "C")
    assert answer_reading._answer_alone(key + "### Answer:\n  3  \n", 4, "numbers").index == 2
    for unsure in (key + "### Answer:\n5", key + "### Answer:\n0", key + "### Answer:\nC", "### Answer:\n2 or 3",
                   "<think>### Answer:\n2", "### Answer:\r\n2", "\\boxed{3} ### Answer:\n2", "## Answer:\n2",
                   "### Answer:\n2\nbecause", "### Answer 2:\n2", "> ### Answer:\n2", "x ### Answer:\n2",
                   "＜think＞ hmm\n### Answer:\n2", "﹤think﹥ I think 3\n### Answer:\n2"):
        assert answer_reading._answer_alone(unsure, 4, "numbers") is None, unsure
    assert answer_reading._answer_alone("### Answer:\n2", 4, "letters") is None

"""Answer and key-information parsing on real-looking model outputs, including the shapes harnesses get wrong."""
import pytest

from evaluation.parsing import (
    AMBIGUOUS,
    MISSING,
    OK,
    parse_answer,
    parse_free_answer,
    parse_key_information,
)

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

import pytest

from annotation.item_facts import question_type, token_count, word_count


@pytest.mark.parametrize("question,expected", [
    ("Who killed the captain?", "who"),
    ("Based on the clues, what did the detective notice?", "what"),
    ("In the story, how did the thief escape?", "how"),
    ("The inspector asked which door was locked.", "which"),
    ("Calculate the time of death.", "other"),
    ("Whose footprints were on the stairs?", "who"),
    ("Why was the candle melted sideways?", "why"),
    ("When did the murder happen, and where?", "when"),
    ("Somewhere in the house, the key was hidden. Where?", "where"),
    ("Showhow is not a wh-word", "other"),
])
def test_question_type_uses_first_wh_word_anywhere(question, expected):
    assert question_type(question) == expected


def test_counts():
    assert word_count("It's 9 o'clock, Mr. Li.") == 5
    assert word_count("小王在海边") == 5
    assert token_count("Hi, Bob.") == 4

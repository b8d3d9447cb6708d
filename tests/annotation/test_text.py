"""annotation.text: the one definition of tokens, normalisation, CJK ranges and stop words."""
from __future__ import annotations

import json
import re

import pytest

from annotation import text
from annotation.keyinfo import keyinfo_score

# KeyInfo's tokens as the metric was first defined (the KeyInfo ROUGE-L scores must not move).
KEYINFO_REFERENCE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]|[a-z0-9]+")


def test_tokens_split_cjk_by_character_and_latin_by_word():
    assert text.tokens("The butler's 2 keys 门是锁着的") == ["the", "butler", "s", "2", "keys", "门", "是", "锁", "着", "的"]
    assert text.tokens("ひらがな 한국어") == ["ひ", "ら", "が", "な", "한", "국", "어"]
    assert text.tokens("snake_case") == ["snake", "case"]
    assert text.tokens(None) == []


def test_token_spans_point_into_the_original_text():
    sample = "Mud  on “his” boots, 雨"
    assert [sample[a:b] for a, b in text.token_spans(sample)] == ["Mud", "on", "his", "boots", "雨"]


def test_is_cjk_covers_kana_ideographs_and_hangul_only():
    assert all(text.is_cjk(ch) for ch in "あア门豈한")
    assert not any(text.is_cjk(ch) for ch in "aé1-β")


def test_normalize_and_node_key():
    assert text.normalize("  The  “Butler”\n’s  KEY ") == "the \"butler\" 's key"
    assert text.node_key(' "He left at 10." ') == "he left at 10"
    assert text.node_key("?!") == ""
    assert len(text.straight_quotes("“a’b”")) == 5


def test_stem_matches_translation_variants():
    assert text.stem("melted") == text.stem("melt")
    assert text.stem("sizes") == text.stem("size")
    assert text.stem("horizontally") == text.stem("horizontal")
    assert text.stem("cutting") == text.stem("cut") and text.stem("stopped") == text.stem("stop")
    assert text.stem("called") == "call" and text.stem("missed") == "miss"
    assert text.stems("Noticed") == [text.stem("notice")]


def test_content_words_drop_stop_words_unless_kept():
    assert text.content_words("The butler did not see the D") == {"butler", "see"}
    assert text.content_words("The butler did not see the D", keep={"not", "d"}) == {"butler", "not", "see", "d"}
    assert text.content_words("Therefore the answer is Tom", ignore={"therefore", "answer"}) == {"tom"}


def test_numbers_and_negation():
    assert text.numbers("at 10:30 he paid 1,000 for 2.5 kg, 11/12 of it") == ["1,000", "10:30", "11/12", "2.5"]
    assert text.has_negation("He didn't go") and text.has_negation("None of them")
    assert not text.has_negation("Nothing is known about the note")


def test_counts():
    assert text.word_count("Holmes's dog didn't bark. 管家") == 6
    assert text.token_count("Holmes's dog didn't bark. 管家") == 11
    assert text.word_count("Café naïve") == 2 and text.token_count("Café naïve") == 2
    assert text.word_count("") == text.token_count(None) == 0


def test_sentences():
    assert text.sentences("He ran. She hid!\nThen 3.5 km later? 完。好") == ["He ran.", "She hid!", "Then 3.5 km later?", "完。好"]


@pytest.mark.parametrize("sample", [
    "The butler's 2 keys", "门是锁着的，狗没有叫", "ÀÉÎ straße İstanbul", "ひらがな한국어 mixed_Text 3.14", "", "——",
])
def test_rouge_tokens_equal_the_keyinfo_reference(sample):
    assert text.rouge_tokens(sample) == KEYINFO_REFERENCE.findall(sample.lower())


def test_keyinfo_tokens_and_scores_unchanged_on_real_data(detectbench_dir):
    """Every context, evidence and reasoning text of v1.3 tokenizes as the reference did."""
    checked = 0
    for line in (detectbench_dir / "test.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        for sample in (record["context"], record["clue_graph"]["evidence"], record["clue_graph"]["multi_hop_reasoning"]):
            assert text.rouge_tokens(sample) == KEYINFO_REFERENCE.findall(sample.lower())
            checked += 1
    assert checked == 3 * 1196
    assert keyinfo_score("门是锁着的", "门是锁着的 狗没有叫") == pytest.approx(2 * 5 / (5 + 9))  # P = 1, R = 5/9

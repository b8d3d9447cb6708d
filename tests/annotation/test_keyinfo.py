"""annotation.keyinfo: ROUGE-L KeyInfo equals rouge-score's own scorer exactly (on random token sequences, on
texts with CJK and punctuation, and on every item of the real test split against its own context's sentences),
and a score imports nothing (rouge-score's scorer pulls nltk in: seconds a worker or a run's first row would pay)."""
from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from annotation.clue_graph import gold_key_information
from annotation.keyinfo import keyinfo_score
from annotation.text import rouge_tokens
from annotation.text import sentences as split_sentences
from tests.conftest import REPO_DIR


class KeyInfoTokenizer:
    """KeyInfo's tokens (annotation.text.rouge_tokens) for rouge-score's own scorer: the reference."""

    def tokenize(self, text: str) -> list[str]:
        return rouge_tokens(text)


REFERENCE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=KeyInfoTokenizer())


def reference(prediction: str, gold: str) -> float | None:
    if not rouge_tokens(gold):
        return None  # no gold key information: no score (not a 0 that averages would count)
    if not prediction.strip():
        return 0.0
    return float(REFERENCE.score(gold, prediction)["rougeL"].fmeasure)


def test_an_item_without_gold_key_information_has_no_score_and_averages_leave_it_out():
    from evaluation.statistics.metrics import RowScore, summarize

    assert keyinfo_score("the butler", "") is None and keyinfo_score("the butler", " ,; ") is None
    assert keyinfo_score("", "mud on the boots") == 0.0
    rows = [RowScore(item_id=1, correct=True, parse_status="ok", keyinfo=keyinfo_score("mud on the boots",
                                                                                        "mud on the boots"),
                     answer_first=False),
            RowScore(item_id=2, correct=True, parse_status="ok", keyinfo=keyinfo_score("mud", ""), answer_first=False)]
    assert summarize(rows).keyinfo == 1.0  # the item without gold is left out, not averaged in as 0


WORDS = st.lists(st.sampled_from(["the", "butler", "mud", "boots", "at", "9", "pm", "x", "窗", "户", "A"]),
                 max_size=120)


@settings(max_examples=600, deadline=None)
@given(prediction=WORDS, gold=WORDS, separators=st.sampled_from([" ", "\n", ", ", "", " -- "]))
def test_equals_rouge_scores_own_scorer_on_random_texts(prediction, gold, separators):
    p, g = separators.join(prediction), separators.join(gold)
    assert keyinfo_score(p, g) == reference(p, g)


@settings(max_examples=300, deadline=None)
@given(prediction=st.text(max_size=300), gold=st.text(max_size=300))
def test_equals_rouge_scores_own_scorer_on_any_text(prediction, gold):
    assert keyinfo_score(prediction, gold) == reference(prediction, gold)


def test_equals_rouge_scores_own_scorer_on_the_real_test_split(detectbench_dir):
    compared = 0
    with open(detectbench_dir / "test.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            gold = "\n".join(gold_key_information((record.get("clue_graph") or {}).get("evidence")))
            context = record.get("context") or ""
            for prediction in [*split_sentences(context)[:4], context, gold]:
                assert keyinfo_score(prediction, gold) == reference(prediction, gold), (record.get("id"), prediction)
                compared += 1
    assert compared > 5000


def test_a_score_imports_nothing_in_a_fresh_process():
    script = (
        "import sys; from annotation import keyinfo; before = set(sys.modules);"
        "print(round(keyinfo.keyinfo_score('the butler had mud on his boots', 'mud on the boots'), 4));"
        "print(sorted(m for m in set(sys.modules) - before))"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    score, new_modules = out.stdout.strip().splitlines()
    assert float(score) == round(reference("the butler had mud on his boots", "mud on the boots"), 4) > 0.5
    assert new_modules == "[]"

"""KeyInfo: ROUGE-L F1 between a text's key information and an item's gold key information.

No Django inside. Used for models (evaluation) and humans (studies) alike, so both
report the same number. Definition:

- gold = the left-hand clues of the item's evidence lines (clue_graph.gold_key_information),
  joined with newlines into one reference text;
- prediction = the model's `### Key Information:` section, or a participant's highlighted
  passages joined with newlines;
- score = ROUGE-L F1 (`rouge-score`, longest common subsequence over the whole text, no
  stemming) between the two token sequences;
- tokens: lowercased `[a-z0-9]+` words, and every CJK character is one token (rouge-score's
  default tokenizer drops non-Latin characters, which would score Chinese text 0);
- an empty prediction or an empty gold scores 0.0.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from annotation.text import rouge_tokens


class KeyInfoTokenizer:
    """Lowercased Latin words and single CJK characters (annotation.text.rouge_tokens)."""

    def tokenize(self, text: str) -> list[str]:
        return rouge_tokens(text)


@functools.cache
def _scorer():
    """One scorer per process, built at the first score (rouge-score imports nltk: about a second, which
    importing this module, at URL loading, does not pay)."""
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=KeyInfoTokenizer())


def warm_scorer() -> None:
    """Build the scorer now (a worker at its start), so that a run's first scored row does not hold the
    database thread for the seconds rouge-score's import takes (it pulls nltk in)."""
    _scorer()


def as_text(parts: str | Sequence[str]) -> str:
    if isinstance(parts, str):
        return parts
    return "\n".join(p for p in parts if p)


def keyinfo_score(prediction: str | Sequence[str], gold: str | Sequence[str]) -> float:
    """ROUGE-L F1 in [0, 1] between prediction and gold key information (see module docstring)."""
    prediction_text, gold_text = as_text(prediction), as_text(gold)
    if not prediction_text.strip() or not gold_text.strip():
        return 0.0
    return float(_scorer().score(gold_text, prediction_text)["rougeL"].fmeasure)

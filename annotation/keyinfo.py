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
- an empty prediction scores 0.0; an item without gold key information (no evidence line, or one with no word
  of its own) has no score (None): averages leave it out instead of counting a 0 nobody could have beaten.

The score is rouge-score's (its precision, recall and F-measure of the LCS length, rouge_scorer._score_lcs); the
length itself is computed bit-parallel (Crochemore et al. 2001: one big-integer step per prediction token instead of a Python
loop over every cell of the table, about 25 times faster on a row's texts), with the gold's token masks kept
per gold text. tests/annotation/test_keyinfo.py checks it equals rouge-score's own scorer exactly.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from annotation.text import rouge_tokens


def as_text(parts: str | Sequence[str]) -> str:
    if isinstance(parts, str):
        return parts
    return "\n".join(p for p in parts if p)


def keyinfo_score(prediction: str | Sequence[str], gold: str | Sequence[str]) -> float | None:
    """ROUGE-L F1 in [0, 1] between prediction and gold key information; None without gold (module docstring)."""
    prediction_text, gold_text = as_text(prediction), as_text(gold)
    if not gold_text.strip():
        return None
    gold_length, masks = _gold_masks(gold_text)
    if not gold_length:
        return None
    predicted = rouge_tokens(prediction_text) if prediction_text.strip() else []
    if not predicted:
        return 0.0
    lcs = lcs_length(masks, gold_length, predicted)
    return float(_fmeasure(lcs / len(predicted), lcs / gold_length))


def lcs_length(masks: dict[str, int], length: int, tokens: Sequence[str]) -> int:
    """Length of the longest common subsequence of a sequence (`length` tokens, `masks`: for each token the bits of
    its positions) and `tokens`: the bit-parallel recurrence V' = (V + U) | (V - U), U = V & mask (Crochemore,
    Iliopoulos, Pinzon and Reid, 2001); the LCS is the number of zero bits of V among its `length`."""
    full = (1 << length) - 1
    v = full
    for token in tokens:
        match = masks.get(token)
        if match:
            u = v & match
            v = ((v + u) | (v - u)) & full
    return length - v.bit_count()


@functools.lru_cache(maxsize=4096)
def _gold_masks(gold_text: str) -> tuple[int, dict[str, int]]:
    """(token count, {token: bits of its positions}) of a gold text: the same gold is scored for every sample."""
    masks: dict[str, int] = {}
    tokens = rouge_tokens(gold_text)
    for position, token in enumerate(tokens):
        masks[token] = masks.get(token, 0) | (1 << position)
    return len(tokens), masks


def _fmeasure(precision: float, recall: float) -> float:
    """rouge_score.scoring.fmeasure's expression (a score then imports nothing: rouge-score's scorer pulls nltk in,
    seconds that a worker's start or a run's first row would pay)."""
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

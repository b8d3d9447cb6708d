"""Derived facts about an item used for analysis (no Django inside)."""
from __future__ import annotations

import re

# Counted words and tokens are defined once, in annotation.text.
from annotation.text import token_count, word_count

__all__ = ["QUESTION_TYPES", "question_type", "token_count", "word_count"]

QUESTION_TYPES = ("how", "what", "which", "who", "why", "when", "where", "other")

# The first wh-word found anywhere in the question decides its type (paper Table 2);
# questions often start with "Based on ..." or "In ...", so scanning only the first
# word would misclassify them. "whom"/"whose" count as "who".
_WH_RE = re.compile(r"\b(how|what|which|who|whom|whose|why|when|where)\b", re.IGNORECASE)


def question_type(question: str) -> str:
    match = _WH_RE.search(question or "")
    if not match:
        return "other"
    word = match.group(1).lower()
    return "who" if word in {"whom", "whose"} else word


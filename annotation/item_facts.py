"""Derived facts about an item used for analysis (no Django inside)."""
from __future__ import annotations

import re

QUESTION_TYPES = ("how", "what", "which", "who", "why", "when", "where", "other")

# The first wh-word found anywhere in the question decides its type (paper Table 2);
# questions often start with "Based on ..." or "In ...", so scanning only the first
# word would misclassify them. "whom"/"whose" count as "who".
_WH_RE = re.compile(r"\b(how|what|which|who|whom|whose|why|when|where)\b", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
# Tokens: words, numbers, CJK characters and punctuation marks, each one token. A
# simple, deterministic and offline count (no tokenizer download at run time).
_TOKEN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[A-Za-z0-9]+|[^\sA-Za-z0-9]")
_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def question_type(question: str) -> str:
    match = _WH_RE.search(question or "")
    if not match:
        return "other"
    word = match.group(1).lower()
    return "who" if word in {"whom", "whose"} else word


def word_count(text: str) -> int:
    """Words in Latin text; each CJK character counts as one word."""
    return len(_WORD_RE.findall(text or "")) + len(_CJK_RE.findall(text or ""))


def token_count(text: str) -> int:
    return len(_TOKEN_RE.findall(text or ""))

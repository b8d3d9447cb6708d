"""When two texts of a clue graph name the same node (pure Python, no Django)."""
from __future__ import annotations

from difflib import SequenceMatcher

from ..text import has_negation, node_key, normalize, numbers, stems

#: Two clue/step texts whose token similarity reaches this count as the same
#: node of the graph (the data paraphrases its own nodes a little).
REFERENCE_MIN_SIMILARITY = 0.75


def same_node(a: str, b: str) -> bool:
    """Whether two node texts name the same statement (normalised or fuzzily equal).

    Fuzzy equality needs the same numbers and the same polarity: "x is 11/12
    of y" is not "x is less than y", "1984 is not ..." is not "6984 is ...".
    """
    na, nb = node_key(a), node_key(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    if numbers(na) != numbers(nb):
        return False
    if has_negation(na) != has_negation(nb):
        return False
    return similarity(a, b) >= REFERENCE_MIN_SIMILARITY


def similarity(a: str, b: str) -> float:
    """Token-level similarity of two node texts in [0, 1] (SequenceMatcher ratio)."""
    ta, tb = stems(a), stems(b)
    if not ta and not tb:
        return 1.0 if normalize(a) == normalize(b) else 0.0
    if not ta or not tb:
        return 0.0
    return SequenceMatcher(None, ta, tb, autojunk=False).ratio()


"""The nodes of a clue graph and what each step input refers to: one identity for checks and drawing.

Pure Python (no Django). The checks call a step input *dangling* exactly when
:func:`link_steps` finds no node for it, and the drawing draws an edge exactly
from the nodes :func:`link_steps` found, so the picture and the checks cannot
disagree.

Nodes: one per clue (``c1``, ``c2``, ...: its text and its implication are one
node) and one per distinct step conclusion (``s<n>``, n counting the steps of
the evidence and then of the reasoning). A text *refers to* a node when

1. their :func:`annotation.text.node_key` are equal, or
2. they state the same thing in other words (:func:`same_node`: the same
   numbers, the same polarity and a token similarity of at least
   ``REFERENCE_MIN_SIMILARITY``), or
3. the text is a part of the node, as when a step quotes an implication in
   short ("One known boy" for "It is known that one of the children is a
   boy"): every content word of the text (stems; stop words and words about
   the reasoning itself left out) is a content word of the node, its numbers
   are among the node's numbers and its polarity is the node's.

The best candidate wins (the tiers in that order, then the higher score, then
the earlier node; a part held whole by one text beats one spread over a node);
a text that several clues share exactly refers to all of them. Same statement
(tier 2) also needs the same certainty ("might be" / "is") and the same letters
and ordinals naming people.

A step input may only refer to clues and to the conclusions of earlier steps.
An input that is only talk about the reasoning ("All clues combined") refers to
every clue; one that the parser kept whole but joins known nodes with "+" or
"and" ('"A + B"' in quotes) refers to each.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

from annotation.clue_graph.data import ClueGraph, Step
from annotation.text import (
    CONTRACTION_PIECES,
    NEGATION_WORDS,
    PUNCTUATION_TRIM,
    REASONING_WORDS,
    STOPWORDS,
    has_negation,
    node_key,
    normalize,
    numbers,
    stem,
    stems,
)
from annotation.text import tokens as text_tokens

#: Two clue/step texts whose token similarity reaches this count as the same
#: node of the graph (the data paraphrases its own nodes a little).
REFERENCE_MIN_SIMILARITY = 0.75

# The pieces of contractions are dropped before tokenizing, so that a lone letter left is a name
# ("If D is honest"): only "a" and "i" stay stop words among the letters.
_IGNORED = (STOPWORDS - CONTRACTION_PIECES) | REASONING_WORDS | NEGATION_WORDS
_IGNORED_STEMS = frozenset(stem(word) for word in REASONING_WORDS)
_NOT_CONTRACTION = re.compile(r"n['’]t\b", re.IGNORECASE)
_CONTRACTION = re.compile(r"['’](?:s|t|d|ll|re|ve|m)\b", re.IGNORECASE)


_HEDGES = frozenset("might may could possibly possible perhaps probably likely maybe".split())
_ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth last".split())


def _distinguishing(words: set[str]) -> set[str]:
    """Words that tell two otherwise similar statements apart: a letter naming someone, an ordinal."""
    return {w for w in words if (len(w) == 1 and w not in "ai") or w in _ORDINALS}


def _opposite(wa: set[str], wb: set[str]) -> bool:
    """Whether ``wb`` holds the negated form of a word of ``wa`` (possible / impossible)."""
    return any(len(w) >= 5 and prefix + w in wb and prefix + w not in wa
               for w in wa for prefix in ("in", "un", "im"))


def same_node(a: str, b: str) -> bool:
    """Whether two node texts name the same statement (normalised or fuzzily equal).

    Fuzzy equality needs the same numbers, the same polarity and the same certainty,
    and no letter or ordinal naming someone else: "x is 11/12 of y" is not "x is less
    than y", "1984 is not ..." is not "6984 is ...", "Yao might be the murderer" is not
    "Yao is the murderer", "The driver can only be B" is not "... only be C", and
    "inconsistent" is not "consistent".
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
    wa, wb = set(text_tokens(na)), set(text_tokens(nb))
    if bool(wa & _HEDGES) != bool(wb & _HEDGES) or _distinguishing(wa) != _distinguishing(wb):
        return False
    if _opposite(wa, wb) or _opposite(wb, wa):
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


def content_stems(text: str) -> frozenset[str]:
    """The stems of a text's content words: no stop words, negations or words about the reasoning."""
    words = text_tokens(_CONTRACTION.sub("", _NOT_CONTRACTION.sub(" not", text or "")))
    found = (stem(word) for word in words if word not in _IGNORED)
    return frozenset(s for s in found if s not in _IGNORED_STEMS)


def is_talk(text: str) -> bool:
    """Whether a text says nothing about the story ("The answer is derived after correlating the above clues.")."""
    return bool(node_key(text)) and not content_stems(text)


@dataclass
class _Known:
    node_id: str
    texts: list[str]
    keys: set[str]
    content: set[str]
    numbers: Counter
    #: (content stems, negated) of each text.
    parts: list[tuple[frozenset[str], bool]]

    def containment(self, wanted: frozenset[str], wanted_numbers: Counter, negated: bool) -> tuple[int, float] | None:
        """Tier 3: every content word and number of a text is in this node, with the same polarity.

        Scored (1, share of the words of the tightest text) when one text of the node holds
        them all with the same polarity (a clue's implication, say), else (0, share of the
        node's words). A negation elsewhere in a longer text does not count against a short
        part of it ("Finding a method" in "... find a method ..., no more than 5 pieces"), but a
        text that is hardly more than the part must agree ("The dog barked" is not "The dog did
        not bark"). None when the text is not a part of this node.
        """
        if not wanted or not wanted <= self.content or wanted_numbers - self.numbers:
            return None
        whole = [len(wanted) / len(content) for content, text_negated in self.parts
                 if wanted <= content and text_negated == negated]
        if whole:
            return (1, max(whole))
        for content, text_negated in self.parts:
            if content & wanted and text_negated != negated and (negated or len(content) < len(wanted) + 2):
                return None
        return (0, len(wanted) / len(self.content))


class NodeIndex:
    """Known nodes, in the order they were added; resolves a text to the node it names."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Known] = {}

    def add(self, node_id: str, text: str) -> None:
        """Let ``text`` name node ``node_id`` (a node may have several texts: a clue and its implication)."""
        key = node_key(text)
        if not key:
            return
        node = self._nodes.setdefault(node_id, _Known(node_id, [], set(), set(), Counter(), []))
        content = content_stems(text)
        node.texts.append(text)
        node.keys.add(key)
        node.content |= content
        node.numbers |= Counter(numbers(text))
        node.parts.append((content, has_negation(text)))

    def ids(self) -> list[str]:
        return list(self._nodes)

    def find_same(self, text: str) -> str | None:
        """The first node one of whose texts states the same as ``text`` (tiers 1 and 2 only)."""
        key = node_key(text)
        if not key:
            return None
        for node in self._nodes.values():
            if key in node.keys:
                return node.node_id
        for node in self._nodes.values():
            if any(same_node(text, known) for known in node.texts):
                return node.node_id
        return None

    def resolve_all(self, text: str) -> tuple[str, ...]:
        """Every node one of whose texts is ``text`` exactly (several clues may share a text), else the
        node :meth:`resolve` finds; empty when there is none."""
        key = node_key(text)
        same = tuple(node.node_id for node in self._nodes.values() if key and key in node.keys)
        if same:
            return same
        found = self.resolve(text)
        return () if found is None else (found,)

    def resolve(self, text: str) -> str | None:
        """The node ``text`` refers to (see the module docstring), or None."""
        key = node_key(text)
        if not key:
            return None
        best: tuple[int, float] | None = None
        best_id = None
        wanted = content_stems(text)
        wanted_numbers = Counter(numbers(text))
        negated = has_negation(text)
        for node in self._nodes.values():
            if key in node.keys:
                return node.node_id
            score: tuple[int, float] | None = None
            fuzzy = [similarity(text, known) for known in node.texts if same_node(text, known)]
            if fuzzy:
                score = (2, max(fuzzy))
            else:
                score = node.containment(wanted, wanted_numbers, negated)
            if score is not None and (best is None or score > best):
                best, best_id = score, node.node_id
        return best_id


_COMPOUND = re.compile(r"\s+(?:\+|and)\s+")


def _resolve_parts(index: NodeIndex, text: str) -> tuple[str, ...] | None:
    """The nodes of a compound input that the parser kept whole ('"A + B"' in quotes, "x+2=3y and x-2=y")."""
    parts = [p for p in _COMPOUND.split(node_key(text)) if p.strip(PUNCTUATION_TRIM)]
    if len(parts) < 2:
        return None
    found = [index.resolve(part) for part in parts]
    if any(node is None for node in found):
        return None
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class StepLink:
    """One step with the nodes it connects.

    ``number``: 1-based over the evidence steps, then the reasoning steps;
    ``sources``: per input, the ids of the nodes it refers to (several for an
    input that refers to every clue), or None when it refers to nothing
    (a dangling reference); ``target``: the id of the node of the conclusion.
    """

    number: int
    section: str
    step: Step
    sources: tuple[tuple[str, ...] | None, ...]
    target: str


def clue_node_id(index: int) -> str:
    return f"c{index + 1}"


def link_steps(graph: ClueGraph) -> tuple[StepLink, ...]:
    """Resolve every step input of a graph to nodes and give every conclusion its node."""
    index = NodeIndex()
    clue_ids = []
    for clue in graph.clues:
        node_id = clue_node_id(clue.index)
        clue_ids.append(node_id)
        index.add(node_id, clue.text)
        index.add(node_id, clue.implication)
    conclusions: set[str] = set()
    links = []
    numbered = [("evidence", s) for s in graph.evidence_steps] + [("reasoning", s) for s in graph.steps]
    for number, (section, step) in enumerate(numbered, 1):
        sources: list[tuple[str, ...] | None] = []
        for given in step.inputs:
            # A "+" the parser did not split (inside quotes) still joins inputs: its parts come first.
            parts = _resolve_parts(index, given) if " + " in given else None
            found = index.resolve_all(given) if parts is None else ()
            if parts is not None:
                sources.append(parts)
            elif found:
                sources.append(found)
            elif is_talk(given) and clue_ids:
                sources.append(tuple(clue_ids))
            else:
                sources.append(_resolve_parts(index, given))
        used = {node for ids in sources if ids for node in ids}
        target = index.find_same(step.output) if step.output else None
        if target is None or target not in conclusions or target in used:
            target = f"s{number}"
            conclusions.add(target)
        index.add(target, step.output)
        links.append(StepLink(number, section, step, tuple(sources), target))
    return tuple(links)

"""Anchor clues in the context: the exact span, else the best fuzzy clause-level span (pure Python)."""
from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from annotation.clue_graph.data import Clue
from annotation.text import PUNCTUATION_TRIM, STOPWORDS, is_cjk, normalize, stem, straight_quotes, token_spans, tokens

#: Anchors whose best fuzzy score is below this are reported as unanchored.
#: Measured on v1.3: spans scoring 0.4-0.5 are mostly the right clause found
#: through a paraphrase; below 0.4 they are mostly fragments (a name, "the park").
ANCHOR_MIN_SCORE = 0.4


@dataclass(frozen=True)
class Anchor:
    """A span of the context: ``context[start:end] == text``.

    ``score`` is 1.0 for an exact match, else the token similarity in [0, 1].
    """

    clue_index: int
    start: int
    end: int
    text: str
    score: float
    exact: bool




_SENTENCE_END = re.compile(r"[.!?。！？…\n]")
_CLAUSE_END = re.compile(r"[,;:，；：、—()（）]")
_TRIM = PUNCTUATION_TRIM


class _ContextIndex:
    """Tokens, clause windows and a normalised copy of one context."""

    def __init__(self, context: str) -> None:
        self.context = context
        spans = list(token_spans(context))
        words = [context[s:e].lower() for s, e in spans]
        self.spans = spans
        self.words = words
        self.stems = [stem(w) for w in words]
        self.stop = [w in STOPWORDS for w in words]
        # Clause and sentence boundaries between consecutive tokens.
        clauses: list[tuple[int, int]] = []
        sentence_of: list[int] = []
        sentence = 0
        start = 0
        previous = -1
        for i in range(len(spans)):
            gap = context[spans[i][1]: spans[i + 1][0]] if i + 1 < len(spans) else "."
            # "3.5" and "1,000" have no space in the gap: not a boundary.
            spaced = (not gap) or any(ch.isspace() for ch in gap) or not gap.isascii() or i + 1 == len(spans)
            ends_sentence = bool(_SENTENCE_END.search(gap)) and spaced
            ends_clause = ends_sentence or (bool(_CLAUSE_END.search(gap)) and spaced)
            if ends_clause:
                clauses.append((start, i + 1))
                sentence_of.append(sentence)
                start = i + 1
                if ends_sentence:
                    sentence += 1
        # Candidate windows: runs of 1-3 clauses inside a sentence, and runs of
        # 1-3 whole sentences.
        sentences: list[list[tuple[int, int]]] = []
        for clause, k in zip(clauses, sentence_of):
            if not sentences or k != previous:
                sentences.append([])
            sentences[-1].append(clause)
            previous = k
        windows: set[tuple[int, int]] = set()
        for members in sentences:
            for a in range(len(members)):
                for b in range(a, min(a + 3, len(members))):
                    windows.add((members[a][0], members[b][1]))
        for a in range(len(sentences)):
            for b in range(a, min(a + 3, len(sentences))):
                windows.add((sentences[a][0][0], sentences[b][-1][1]))
        self.windows = sorted(windows)
        # Normalised context with a map back to original offsets.
        chars: list[str] = []
        offsets: list[int] = []
        previous_space = True
        for i, ch in enumerate(straight_quotes(context)):
            if ch.isspace():
                if previous_space:
                    continue
                ch = " "
                previous_space = True
            else:
                previous_space = False
            chars.append(ch.lower() if len(ch.lower()) == 1 else ch)
            offsets.append(i)
        self.normalized = "".join(chars)
        self.offsets = offsets


@functools.lru_cache(maxsize=16)
def _index(context: str) -> _ContextIndex:
    return _ContextIndex(context)


def _wordish(ch: str) -> bool:
    return ch.isalnum() and not is_cjk(ch)


def _boundary_ok(text: str, start: int, end: int) -> bool:
    """A match must not cut a word at either end (CJK text has no word boundaries)."""
    if start > 0 and _wordish(text[start - 1]) and _wordish(text[start]):
        return False
    if end < len(text) and _wordish(text[end - 1]) and _wordish(text[end]):
        return False
    return True


def _find_word(haystack: str, needle: str) -> int:
    position = haystack.find(needle)
    while position != -1:
        if _boundary_ok(haystack, position, position + len(needle)):
            return position
        position = haystack.find(needle, position + 1)
    return -1


def _exact(needle: str, index: _ContextIndex) -> tuple[int, int] | None:
    context = index.context
    start = _find_word(context, needle)
    if start != -1:
        return start, start + len(needle)
    wanted = normalize(needle)
    if not wanted:
        return None
    start = _find_word(index.normalized, wanted)
    if start == -1:
        return None
    end = start + len(wanted) - 1
    return index.offsets[start], index.offsets[end] + 1


#: Share of the order-free word overlap in the anchor score (the rest rewards
#: the same word order); translations reorder a lot, so order counts little.
_BAG_WEIGHT = 0.8
#: Recall weight of the anchor score: covering the clue matters more than a tight span.
_BETA2 = 4.0


def _f_beta(overlap: float, needle_length: int, span_length: int) -> float:
    """F-beta (beta=2) of a span: precision over the span, recall over the needle."""
    if overlap <= 0 or needle_length <= 0 or span_length <= 0:
        return 0.0
    precision = overlap / span_length
    recall = overlap / needle_length
    return (1 + _BETA2) * precision * recall / (_BETA2 * precision + recall)


def _fuzzy(needle: str, index: _ContextIndex) -> tuple[int, int, float] | None:
    words = tokens(needle)
    if not words or not index.spans:
        return None
    stems = [stem(w) for w in words]
    content_stems = [s for s, w in zip(stems, words) if w not in STOPWORDS]
    use_stopwords = not content_stems
    if use_stopwords:
        content_stems = stems
    wanted = Counter(content_stems)
    n = len(content_stems)
    index_stems = index.stems
    index_stop = index.stop
    counted = [use_stopwords or not stop for stop in index_stop]
    hit = [counted[i] and index_stems[i] in wanted for i in range(len(index_stems))]

    best: list[tuple[float, int, int]] = []
    seen: set[tuple[int, int]] = set()
    for a, b in index.windows:
        # Trim the window to its first and last matching token.
        while a < b and not hit[a]:
            a += 1
        while b > a and not hit[b - 1]:
            b -= 1
        if a >= b or (a, b) in seen:
            continue
        seen.add((a, b))
        found: Counter = Counter()
        length = 0
        for i in range(a, b):
            if counted[i]:
                length += 1
                if hit[i]:
                    found[index_stems[i]] += 1
        overlap = sum(min(c, wanted[k]) for k, c in found.items())
        best.append((_f_beta(overlap, n, length), a, b))
    if not best:
        return None
    best.sort(key=lambda t: (-t[0], t[2] - t[1]))
    # Re-rank the few best bags of words by word order (LCS-like ratio).
    ranked = []
    for bag, a, b in best[:5]:
        window = [index_stems[i] for i in range(a, b) if counted[i]]
        matcher = SequenceMatcher(None, content_stems, window, autojunk=False)
        in_order = sum(block.size for block in matcher.get_matching_blocks())
        ranked.append((_BAG_WEIGHT * bag + (1 - _BAG_WEIGHT) * _f_beta(in_order, n, len(window)), -(b - a), a, b))
    score, _, a, b = max(ranked)
    # Give back a leading article etc. that the clue also has ("the boat ...").
    needle_words = set(words)
    while a > 0 and index_stop[a - 1] and index.words[a - 1] in needle_words and _same_clause(index, a - 1, a):
        a -= 1
    # 1.0 is reserved for exact matches.
    return index.spans[a][0], index.spans[b - 1][1], min(0.99, max(0.0, score))


def _same_clause(index: _ContextIndex, i: int, j: int) -> bool:
    gap = index.context[index.spans[i][1]: index.spans[j][0]]
    return not (_SENTENCE_END.search(gap) or _CLAUSE_END.search(gap))


def _locate(needle: str, index: _ContextIndex, clue_index: int) -> Anchor | None:
    text = (needle or "").strip().strip(_TRIM).strip()
    if not text or not index.context:
        return None
    exact = _exact(text, index)
    if exact is not None:
        start, end = exact
        return Anchor(clue_index, start, end, index.context[start:end], 1.0, True)
    fuzzy = _fuzzy(text, index)
    if fuzzy is None:
        return None
    start, end, score = fuzzy
    return Anchor(clue_index, start, end, index.context[start:end], round(score, 4), False)


def locate_span(needle: str, context: str) -> Anchor | None:
    """Find the span of ``context`` that best matches ``needle``.

    First an exact match of the needle (surrounding quotes and punctuation
    trimmed; case-sensitive, then case-insensitive with whitespace and quotes
    normalised; whole words only) gives ``score=1.0, exact=True``.  Otherwise
    the candidates are clause-level windows of the context (every sentence and
    every run of 1-3 consecutive clauses, clauses ending at , ; : and sentence
    punctuation), each trimmed to its first and last word shared with the
    needle.  Each is scored on lowercased, lightly stemmed word tokens without
    stop words (every CJK character is a token): 0.8 x the bag-of-words
    F-beta (beta=2: recall of the clue's words counts more than precision)
    plus 0.2 x the same F-beta over the words matched in order
    (SequenceMatcher blocks).  The best candidate is returned with that score,
    capped at 0.99 (``exact=False``), or None when no word is shared.
    ``clue_index`` is -1.
    """
    return _locate(needle, _index(context or ""), -1)


def anchor_clues(
    clues: Sequence[Clue] | Sequence[str],
    context: str,
    *,
    min_score: float = ANCHOR_MIN_SCORE,
) -> list[Anchor | None]:
    """Anchor each clue (its ``text``) in the context; None when the best score < min_score."""
    index = _index(context or "")
    anchors: list[Anchor | None] = []
    for i, clue in enumerate(clues):
        text = clue.text if isinstance(clue, Clue) else str(clue)
        clue_index = clue.index if isinstance(clue, Clue) else i
        anchor = _locate(text, index, clue_index)
        if anchor is not None and anchor.score < min_score:
            anchor = None
        anchors.append(anchor)
    return anchors


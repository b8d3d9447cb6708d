"""Parse, check, anchor and re-render DetectBench clue graphs.

Pure Python (standard library only, no Django) so that it can be imported and
tested alone.

A DetectBench record carries two texts:

``clue_graph.evidence``
    Primary evidence lines ``clue -> implication`` (sometimes numbered
    ``1. ...``).  About a third of the records then have a header line such as
    ``After correlating these clues:`` followed by combined lines
    ``A + B -> C`` (and sometimes a free-text conclusion).

``clue_graph.multi_hop_reasoning``
    Usually a header (``After correlating the clues:``) and steps
    ``A + B -> C``, the last one reaching the answer.  Often it first restates
    the evidence under its own header (``From the clues provided in the
    context:``) and then continues with a second header and the combined steps.

Line grammar used by the parser (per line, after stripping whitespace):

* blank lines are skipped;
* an optional numbering prefix is split off and kept: ``1. ``, ``2) ``,
  ``(3) ``, ``4、``, ``- ``, ``* ``, ``• ``, ``Clue 5: ``, ``Step 6: ``;
* a line containing ``->`` is a clue (evidence, before the first header) or a
  step (evidence after the header, and the whole reasoning).  The first ``->``
  separates a clue from its implication (the implication may itself contain
  ``->``).  A step line ``A + B -> C -> D`` becomes the steps ``A + B -> C``
  and ``C -> D`` (the second one has ``continues=True``); inputs are split on
  `` + `` unless that would cut a formula (a part of one or two characters, or
  a ``+`` inside brackets or quotes);
* a line without ``->`` whose last character is ``:`` is a header;
* anything else is an *unparsed line* (free-text conclusions such as
  ``Therefore, the answer is "56".``, or evidence written with ``-`` or
  ``leads to`` instead of an arrow).

Nothing here raises on any input string.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Iterable, Sequence

from .text import (
    PUNCTUATION_TRIM,
    STOPWORDS,
    has_negation,
    is_cjk,
    node_key,
    normalize,
    numbers,
    stem,
    stems,
    straight_quotes,
    token_spans,
    tokens,
)

__all__ = [
    "ANCHOR_MIN_SCORE",
    "ARROW",
    "Anchor",
    "Clue",
    "ClueGraph",
    "DEFAULT_EVIDENCE_HEADER",
    "DEFAULT_REASONING_HEADER",
    "ISSUE_KINDS",
    "Issue",
    "REFERENCE_MIN_SIMILARITY",
    "Step",
    "anchor_clues",
    "check_graph",
    "gold_key_information",
    "locate_span",
    "normalize_text",
    "parse_clue_graph",
    "parse_evidence",
    "parse_reasoning",
    "render_evidence",
    "render_reasoning",
]

ARROW = "->"
DEFAULT_EVIDENCE_HEADER = "After correlating these clues:"
DEFAULT_REASONING_HEADER = "After correlating the clues we get:"

#: Anchors whose best fuzzy score is below this are reported as unanchored.
#: Measured on v1.3: spans scoring 0.4-0.5 are mostly the right clause found
#: through a paraphrase; below 0.4 they are mostly fragments (a name, "the park").
ANCHOR_MIN_SCORE = 0.4
#: Two clue/step texts whose token similarity reaches this count as the same
#: node of the graph (the data paraphrases its own nodes a little).
REFERENCE_MIN_SIMILARITY = 0.75

ISSUE_KINDS = (
    "unanchored_clue",
    "fuzzy_clue",
    "dangling_reference",
    "repeated_step",
    "redundant_step",
    "unused_clue",
    "no_conclusion",
    "unparsed_line",
)


# --------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Clue:
    """One primary evidence line ``text -> implication``.

    ``index`` is the 0-based position among the graph's clues, ``line_no`` the
    1-based line of the evidence text, ``prefix`` the numbering written before
    the clue (``"1. "``), kept so that the text can be re-rendered unchanged.
    """

    index: int
    text: str
    implication: str
    line_no: int
    prefix: str = ""


@dataclass(frozen=True)
class Step:
    """One reasoning step ``A + B -> C``.

    ``header`` is a header line written directly before this step inside its
    section (e.g. the ``After correlating the clues:`` that follows a restated
    list of clues); ``continues`` marks the second and later steps of a chained
    line ``A -> B -> C`` (rendered on the same line as the previous step).
    """

    inputs: tuple[str, ...]
    output: str
    line_no: int
    prefix: str = ""
    header: str | None = None
    continues: bool = False


@dataclass(frozen=True)
class ClueGraph:
    """A parsed clue graph.

    ``clues``: primary evidence lines (before the evidence header).
    ``steps``: every step of the reasoning text, in order.
    ``evidence_header``: the header that ends the primary evidence lines.
    ``reasoning_header``: the header on the first line of the reasoning.
    ``unparsed_lines``: ``(section, line_no, text)`` with section
    ``"evidence"`` or ``"reasoning"``.
    ``evidence_steps``: combined ``A + B -> C`` lines found in the evidence
    after its header.
    """

    clues: tuple[Clue, ...]
    steps: tuple[Step, ...]
    evidence_header: str | None
    reasoning_header: str | None
    unparsed_lines: tuple[tuple[str, int, str], ...]
    evidence_steps: tuple[Step, ...] = ()

    @property
    def all_steps(self) -> tuple[Step, ...]:
        return self.evidence_steps + self.steps


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


@dataclass(frozen=True)
class Issue:
    """A problem found by :func:`check_graph` (``kind`` is one of ISSUE_KINDS)."""

    kind: str
    message: str
    line_no: int | None = None
    clue_index: int | None = None
    section: str | None = None


# --------------------------------------------------------------------------
# Parsing

_NUMBERING = re.compile(
    r"""^(?:
        \d{1,3}\s*[.)、．](?=\s|$)      # 1.  2)  3、
      | \d{1,3}、                        # 4、 (no space needed)
      | \(\d{1,3}\)                     # (5)
      | [-*•·](?=\s)                    # bullets
      | (?:clue|step|evidence)\s*\d{1,3}\s*[:.：]   # Clue 1:
    )\s*""",
    re.IGNORECASE | re.VERBOSE,
)


def _split_prefix(line: str) -> tuple[str, str]:
    match = _NUMBERING.match(line)
    if not match or match.end() >= len(line):
        return "", line
    return match.group(0), line[match.end():]


def _is_header(body: str) -> bool:
    return ARROW not in body and body.rstrip().endswith((":", "："))


def _lines(text: str | None) -> list[tuple[int, str]]:
    """Non-blank stripped lines with their 1-based line numbers."""
    if not text:
        return []
    out = []
    for line_no, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        line = raw.strip()
        if line:
            out.append((line_no, line))
    return out


def _split_inputs(left: str) -> tuple[str, ...]:
    left = left.strip()
    if " + " not in left:
        return (left,) if left else ()
    # Do not split a `+` inside brackets or quotes.
    parts: list[str] = []
    depth = 0
    in_quote = False
    start = 0
    # A whole line wrapped in quotes ('"A + B -> C"') leaves an unmatched
    # opening quote here: it does not protect the `+`.
    i = 1 if left.startswith('"') and left.count('"') % 2 == 1 else 0
    while i < len(left):
        ch = left[i]
        if ch in "([{（【":
            depth += 1
        elif ch in ")]}）】":
            depth = max(0, depth - 1)
        elif ch in '"“”':
            in_quote = not in_quote if ch == '"' else (ch == "“")
        elif left.startswith(" + ", i) and depth == 0 and not in_quote:
            parts.append(left[start:i])
            start = i + 3
            i += 3
            continue
        i += 1
    parts.append(left[start:])
    parts = [p.strip() for p in parts]
    # A formula such as `x + y = 144` is one input, not three.
    if len(parts) < 2 or any(len(p) <= 2 for p in parts):
        return (left,)
    return tuple(parts)


def _parse_step_line(body: str, line_no: int, prefix: str, header: str | None) -> list[Step]:
    segments = [s.strip() for s in body.split(ARROW)]
    steps = []
    inputs = _split_inputs(segments[0])
    for k, output in enumerate(segments[1:]):
        steps.append(
            Step(
                inputs=inputs,
                output=output,
                line_no=line_no,
                prefix=prefix if k == 0 else "",
                header=header if k == 0 else None,
                continues=k > 0,
            )
        )
        inputs = (output,) if output else ()
    return steps


def parse_evidence(evidence: str | None) -> tuple[tuple[Clue, ...], str | None, tuple[Step, ...], tuple[tuple[str, int, str], ...]]:
    """Parse an evidence text into (clues, header, combined steps, unparsed lines)."""
    clues: list[Clue] = []
    steps: list[Step] = []
    unparsed: list[tuple[str, int, str]] = []
    header: str | None = None
    pending: tuple[int, str] | None = None  # a later header, waiting for its step
    for line_no, line in _lines(evidence):
        prefix, body = _split_prefix(line)
        if _is_header(line):
            if header is None and clues:
                header = line
            elif header is not None and pending is None:
                pending = (line_no, line)
            else:
                unparsed.append(("evidence", line_no, line))
            continue
        if ARROW not in body:
            unparsed.append(("evidence", line_no, line))
            continue
        if header is None:
            text, _, implication = body.partition(ARROW)
            clues.append(Clue(len(clues), text.strip(), implication.strip(), line_no, prefix))
        else:
            steps.extend(_parse_step_line(body, line_no, prefix, pending[1] if pending else None))
            pending = None
    if pending is not None:
        unparsed.append(("evidence", *pending))
    unparsed.sort(key=lambda u: u[1])
    return tuple(clues), header, tuple(steps), tuple(unparsed)


def parse_reasoning(reasoning: str | None) -> tuple[tuple[Step, ...], str | None, tuple[tuple[str, int, str], ...]]:
    """Parse a multi-hop reasoning text into (steps, opening header, unparsed lines)."""
    steps: list[Step] = []
    unparsed: list[tuple[str, int, str]] = []
    header: str | None = None
    pending: tuple[int, str] | None = None  # a later header, waiting for its step
    for position, (line_no, line) in enumerate(_lines(reasoning)):
        prefix, body = _split_prefix(line)
        if _is_header(line):
            if position == 0:
                header = line
            elif pending is None:
                pending = (line_no, line)
            else:
                unparsed.append(("reasoning", line_no, line))
            continue
        if ARROW not in body:
            unparsed.append(("reasoning", line_no, line))
            continue
        steps.extend(_parse_step_line(body, line_no, prefix, pending[1] if pending else None))
        pending = None
    if pending is not None:
        unparsed.append(("reasoning", *pending))
    unparsed.sort(key=lambda u: u[1])
    return tuple(steps), header, tuple(unparsed)


def parse_clue_graph(evidence: str | None, reasoning: str | None) -> ClueGraph:
    """Parse the two clue-graph texts of a record (never raises)."""
    clues, evidence_header, evidence_steps, evidence_unparsed = parse_evidence(evidence)
    steps, reasoning_header, reasoning_unparsed = parse_reasoning(reasoning)
    return ClueGraph(
        clues=clues,
        steps=steps,
        evidence_header=evidence_header,
        reasoning_header=reasoning_header,
        unparsed_lines=evidence_unparsed + reasoning_unparsed,
        evidence_steps=evidence_steps,
    )


def gold_key_information(evidence: str | None) -> list[str]:
    """The gold key information of a record, as used by the KeyInfo ROUGE-L metric.

    Definition: the left-hand sides (text before the first ``->``) of the
    *primary* evidence lines, i.e. the arrow lines that come before the first
    header line (a line without ``->`` ending in ``:``, such as ``After
    correlating these clues:``), in order, with any numbering prefix (``1.``,
    ``2)``, ``(3)``, ``- ``, ``Clue 4:``) and surrounding whitespace removed;
    empty left-hand sides are dropped.  Combined ``A + B -> C`` lines after the
    header, the header itself and free-text lines are not key information.
    Fallback: if the evidence has no arrow line at all (a plain numbered list
    of clues, 11 of 1,563 records in v1.3), every non-header line, with its
    numbering removed, is one piece of key information.
    """
    clues, _, _, unparsed = parse_evidence(evidence)
    if clues:
        return [c.text for c in clues if c.text]
    if any(ARROW in line for _, line in _lines(evidence)):
        return []
    out = []
    for _, _, line in unparsed:
        if _is_header(line):
            continue
        text = _split_prefix(line)[1].strip()
        if text:
            out.append(text)
    return out


# --------------------------------------------------------------------------
# Rendering


def render_evidence(
    clues: Sequence[Clue] | Sequence[tuple[str, str]],
    header: str | None = DEFAULT_EVIDENCE_HEADER,
    steps: Sequence[Step] | Sequence[tuple[Sequence[str] | str, str]] = (),
    *,
    numbering: bool | None = None,
) -> str:
    """Write evidence back in the official format: ``clue -> implication`` per line.

    ``clues`` are :class:`Clue` objects or ``(text, implication)`` pairs.  If
    ``steps`` (combined lines) are given they follow the ``header`` line.
    ``numbering``: ``None`` keeps each Clue's own prefix, ``True`` numbers the
    clues ``1. 2. ...``, ``False`` writes no numbering.

    Round trip: ``render_evidence(g.clues, g.evidence_header, g.evidence_steps)``
    reproduces the evidence text when it had no unparsed lines, except that
    blank lines and leading/trailing whitespace on lines are dropped and a
    chained line's arrows are written as `` -> ``.
    """
    lines = []
    for i, clue in enumerate(clues):
        if isinstance(clue, Clue):
            text, implication, prefix = clue.text, clue.implication, clue.prefix
        else:
            text, implication = clue
            prefix = ""
        if numbering is True:
            prefix = f"{i + 1}. "
        elif numbering is False:
            prefix = ""
        lines.append(_arrow_line(prefix + text.strip(), implication.strip()))
    if steps:
        if header:
            lines.append(header.strip())
        lines.extend(_render_steps(steps, numbering=numbering))
    return "\n".join(lines)


def render_reasoning(
    steps: Sequence[Step] | Sequence[tuple[Sequence[str] | str, str]],
    header: str | None = DEFAULT_REASONING_HEADER,
    *,
    numbering: bool | None = None,
) -> str:
    """Write reasoning back in the official format: header, then ``A + B -> C`` lines.

    ``steps`` are :class:`Step` objects or ``(inputs, output)`` pairs.  A Step's
    own ``header`` is written before it and a step with ``continues=True`` is
    appended to the previous line (``A -> B -> C``).

    Round trip: ``render_reasoning(g.steps, g.reasoning_header)`` reproduces
    the reasoning text when it had no unparsed lines (same caveats as
    :func:`render_evidence`).
    """
    lines = [header.strip()] if header else []
    lines.extend(_render_steps(steps, numbering=numbering))
    return "\n".join(lines)


def _arrow_line(left: str, right: str) -> str:
    return f"{left} {ARROW} {right}" if right else f"{left} {ARROW}"


def _render_steps(steps: Iterable, *, numbering: bool | None) -> list[str]:
    lines: list[str] = []
    number = 0
    for step in steps:
        if isinstance(step, Step):
            inputs, output, prefix, header, continues = (
                step.inputs, step.output, step.prefix, step.header, step.continues,
            )
        else:
            inputs, output = step
            prefix, header, continues = "", None, False
        if isinstance(inputs, str):
            inputs = (inputs,)
        left = " + ".join(s.strip() for s in inputs)
        if continues and lines:
            lines[-1] = _arrow_line(lines[-1], output.strip())
            continue
        number += 1
        if numbering is True:
            prefix = f"{number}. "
        elif numbering is False:
            prefix = ""
        if header:
            lines.append(header.strip())
        lines.append(_arrow_line(prefix + left, output.strip()))
    return lines


# --------------------------------------------------------------------------
# Text normalisation and tokens (annotation.text)

#: Kept as a name of this module for callers; see annotation.text.normalize.
normalize_text = normalize


def _same_node(a: str, b: str) -> bool:
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
    return _similarity(a, b) >= REFERENCE_MIN_SIMILARITY


def _similarity(a: str, b: str) -> float:
    """Token-level similarity of two node texts in [0, 1] (SequenceMatcher ratio)."""
    ta, tb = stems(a), stems(b)
    if not ta and not tb:
        return 1.0 if normalize_text(a) == normalize_text(b) else 0.0
    if not ta or not tb:
        return 0.0
    return SequenceMatcher(None, ta, tb, autojunk=False).ratio()


# --------------------------------------------------------------------------
# Anchoring

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
    wanted = normalize_text(needle)
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


# --------------------------------------------------------------------------
# Checking


class _Nodes:
    """Known node texts of a graph, compared after normalisation with a fuzzy threshold."""

    def __init__(self) -> None:
        self.exact: set[str] = set()
        self.texts: list[str] = []

    def add(self, text: str) -> None:
        key = node_key(text)
        if key and key not in self.exact:
            self.exact.add(key)
            self.texts.append(text)

    def __contains__(self, text: str) -> bool:
        key = node_key(text)
        if not key:
            return False
        if key in self.exact:
            return True
        return any(_same_node(text, known) for known in self.texts)


def _is_restatement(step: Step, clues: Sequence[Clue]) -> bool:
    """A single-input step that repeats an evidence line (reasoning often lists them first)."""
    if len(step.inputs) != 1:
        return False
    given = node_key(step.inputs[0])
    output = node_key(step.output)
    for clue in clues:
        if node_key(clue.text) == given and node_key(clue.implication) == output:
            return True
    return False


def _step_key(step: Step) -> tuple[frozenset[str], str]:
    return (
        frozenset(node_key(s) for s in step.inputs),
        node_key(step.output),
    )


def _check_steps(
    steps: Sequence[Step],
    clues: Sequence[Clue],
    known: _Nodes,
    section: str,
    issues: list[Issue],
    *,
    earlier: Sequence[Step] = (),
) -> None:
    """Check one section's steps; ``earlier`` are steps it may legitimately repeat."""
    derived = _Nodes()
    seen: dict[tuple[frozenset[str], str], int] = {}
    earlier_keys = {_step_key(step) for step in earlier}
    for step in steps:
        key = _step_key(step)
        restated = _is_restatement(step, clues) or key in earlier_keys
        for given in step.inputs:
            if given not in known and given not in derived:
                issues.append(
                    Issue(
                        "dangling_reference",
                        f"step input {given!r} is neither a clue, an implication nor an earlier step's output",
                        step.line_no,
                        section=section,
                    )
                )
        if key in seen:
            issues.append(
                Issue("repeated_step", f"step repeats line {seen[key]}: {step.output!r}", step.line_no, section=section)
            )
        elif not restated and step.output and (step.output in derived or step.output in known):
            issues.append(
                Issue("redundant_step", f"output {step.output!r} was already derived", step.line_no, section=section)
            )
        seen.setdefault(key, step.line_no)
        if step.output:
            derived.add(step.output)
    for text in derived.texts:
        known.add(text)


def check_graph(graph: ClueGraph, context: str, *, min_score: float = ANCHOR_MIN_SCORE) -> list[Issue]:
    """List the problems of a clue graph against its context.

    * ``unanchored_clue`` / ``fuzzy_clue``: a clue not found in the context
      (best score < ``min_score``) / found only approximately;
    * ``unparsed_line``: a line that is neither a clue, a step nor a header;
    * ``dangling_reference``: a step input that is not a clue text, an
      implication, or the output of an earlier step (evidence steps come before
      the reasoning); texts are compared lowercased with whitespace and quotes
      normalised, and count as equal from a token similarity of
      ``REFERENCE_MIN_SIMILARITY``;
    * ``repeated_step``: the same inputs and output twice in one section;
    * ``redundant_step``: a step whose output was already derived or is already
      an implication (a step that merely restates an evidence line is fine);
    * ``unused_clue``: a clue whose text and implication are never an input of
      a step (only when the graph has steps);
    * ``no_conclusion``: the graph has no steps, or its last step has no output.
    """
    issues: list[Issue] = []
    for clue, anchor in zip(graph.clues, anchor_clues(graph.clues, context, min_score=0.0)):
        if anchor is None or anchor.score < min_score:
            score = 0.0 if anchor is None else anchor.score
            issues.append(
                Issue("unanchored_clue", f"clue {clue.index + 1} not found in the context (best score {score:.2f})",
                      clue.line_no, clue.index, "evidence")
            )
        elif not anchor.exact:
            issues.append(
                Issue("fuzzy_clue", f"clue {clue.index + 1} matches the context only approximately (score {anchor.score:.2f}): {anchor.text!r}",
                      clue.line_no, clue.index, "evidence")
            )
    for section, line_no, text in graph.unparsed_lines:
        issues.append(Issue("unparsed_line", f"cannot parse {text!r}", line_no, section=section))

    known = _Nodes()
    for clue in graph.clues:
        known.add(clue.text)
        known.add(clue.implication)
    _check_steps(graph.evidence_steps, graph.clues, known, "evidence", issues)
    _check_steps(graph.steps, graph.clues, known, "reasoning", issues, earlier=graph.evidence_steps)

    all_steps = graph.all_steps
    if all_steps:
        used = _Nodes()
        for step in all_steps:
            if not _is_restatement(step, graph.clues):
                for given in step.inputs:
                    used.add(given)
        for clue in graph.clues:
            if clue.text not in used and clue.implication not in used:
                issues.append(
                    Issue("unused_clue", f"clue {clue.index + 1} is not used by any step", clue.line_no, clue.index, "evidence")
                )
    final = graph.steps[-1] if graph.steps else (graph.evidence_steps[-1] if graph.evidence_steps else None)
    if final is None:
        issues.append(Issue("no_conclusion", "the clue graph has no reasoning steps", section="reasoning"))
    elif not final.output.strip():
        issues.append(Issue("no_conclusion", "the last step has no conclusion", final.line_no, section="reasoning"))
    return issues

"""Tokens, normalisation, CJK ranges and stop words: the one text vocabulary of the project.

Pure Python (standard library only, no Django). Every module that compares,
counts or scores text uses these definitions, so that a "word", a "CJK
character" or a "stop word" means the same thing in the clue-graph checks,
the anchoring, the item facts, the KeyInfo metric and the offline baselines.

* CJK: Japanese kana, CJK unified ideographs (with extension A), CJK
  compatibility ideographs and Hangul syllables (:data:`CJK_RANGES`). These
  scripts do not separate words by spaces, so each character is one token.
* :func:`tokens`: lowercased matching tokens, each CJK character alone and
  every other run of letters and digits (no underscore) as one token; an
  apostrophe splits (``don't`` -> ``don``, ``t``).
* :func:`rouge_tokens`: the KeyInfo tokens, ``rouge-score``'s default
  ``[a-z0-9]+`` words plus single CJK characters (rouge-score alone would
  drop Chinese text).
* :func:`word_count` / :func:`token_count`: the offline counts stored with an
  item and reported for built-in models.
* :func:`normalize` / :func:`node_key`: lowercase, straight quotes, collapsed
  whitespace (and, for a node key, surrounding punctuation trimmed).
* :data:`STOPWORDS`: English function words ignored when texts are compared
  by content; :data:`REASONING_WORDS`: the words of talk about the reasoning
  itself ("correlating the above clues leads to the answer").
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

__all__ = [
    "CJK_RANGES",
    "CONTRACTION_PIECES",
    "NEGATION_WORDS",
    "QUANTIFIER_WORDS",
    "REASONING_WORDS",
    "PUNCTUATION_TRIM",
    "STOPWORDS",
    "content_words",
    "has_negation",
    "is_cjk",
    "node_key",
    "normalize",
    "numbers",
    "rouge_tokens",
    "sentences",
    "stem",
    "stems",
    "straight_quotes",
    "token_count",
    "token_spans",
    "tokens",
    "word_count",
    "word_key",
]

#: Character ranges (for a regex character class) of scripts written without spaces.
CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
_TOKEN = re.compile(rf"[{CJK_RANGES}]|[^\W_{CJK_RANGES}]+")
_ROUGE_TOKEN = re.compile(rf"[{CJK_RANGES}]|[a-z0-9]+")
# A counted word: letters and digits with an apostrophe part ("don't", "Holmes's").
_COUNTED_WORD = re.compile(rf"[^\W_{CJK_RANGES}]+(?:['’][^\W\d_{CJK_RANGES}]+)*")
# A counted token: a CJK character, a run of letters/digits, or any other visible character.
_COUNTED_TOKEN = re.compile(rf"[{CJK_RANGES}]|[^\W_{CJK_RANGES}]+|[^\s]")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "`": "'"})
_NUMBER = re.compile(r"\d+(?:[.,/:]\d+)*")
#: Words that turn a statement into its opposite ("n't" is matched as well).
NEGATION_WORDS = frozenset("not no never none neither nor cannot".split())
#: Stop words that still tell two statements apart ("all of them" / "some of them").
QUANTIFIER_WORDS = frozenset("all any some".split())
_NEGATION = re.compile(rf"\b(?:{'|'.join(sorted(NEGATION_WORDS))})\b|n't", re.IGNORECASE)

#: Characters trimmed from both ends of a text before it is compared as a whole.
PUNCTUATION_TRIM = " \t\r\n\"'“”‘’`.,;:!?。，；：！？"

#: The pieces an apostrophe leaves behind ("Tom's" -> tom, s; "don't" -> don, t).
CONTRACTION_PIECES = frozenset("s t d ll re ve m".split())
#: English function words ignored when texts are compared by content.
STOPWORDS = frozenset(
    """a an the of to in on at by for with from and or but is are was were be been being
    it its this that these those he she they them his her their him i you we us our your
    as so if then than there here has have had do does did not no into up out about
    which who whom what when where while also very just all any some""".split()
) | CONTRACTION_PIECES

#: Words about the reasoning itself, not about the story ("Linking the above clues leads to the
#: answer."): a line made only of these and stop words says nothing.
REASONING_WORDS = frozenset(
    """answer answers clue clues above after through together deduce deduced deducing deduction derive derived
    deriving correlate correlated correlating correlation combine combined combining link linked linking
    associate associated associating connect connected connecting conclusion conclusions conclude
    concluded final finally ultimately lead leads leading led arrive arrived arriving reasoning reason
    logic logical logically analysis analyze analyzing analyse analysing compare comparing information
    given based following result results therefore thus hence consequently can get obtain obtained find
    determine determined infer inferred draw drawn assume assuming assumed suppose supposing consider
    considering""".split()
)

_SUFFIXES = ("ingly", "edly", "ing", "ed", "ly", "s")
_UNDOUBLE_AFTER = ("ingly", "edly", "ing", "ed")


def is_cjk(char: str) -> bool:
    """Whether ``char`` is a character of a script written without spaces (see CJK_RANGES)."""
    return bool(_CJK_CHAR.match(char))


def straight_quotes(text: str | None) -> str:
    """Curly quotes and backticks replaced by ' and " (same length: offsets stay valid)."""
    return (text or "").translate(_QUOTES)


def normalize(text: str | None) -> str:
    """Lowercase, straight quotes, whitespace collapsed to single spaces."""
    return " ".join((text or "").translate(_QUOTES).lower().split())


def node_key(text: str | None) -> str:
    """:func:`normalize` with surrounding quotes and punctuation trimmed: equal keys, equal statements."""
    return normalize(text).strip(PUNCTUATION_TRIM)


def word_key(text: str | None) -> str:
    """The :func:`tokens` joined by single spaces: equal keys, equal wording (case and punctuation aside)."""
    return " ".join(tokens(text))


def token_spans(text: str | None) -> Iterator[tuple[int, int]]:
    """(start, end) offsets of the tokens of :func:`tokens`, in the original text."""
    return ((m.start(), m.end()) for m in _TOKEN.finditer(text or ""))


def tokens(text: str | None) -> list[str]:
    """Lowercased tokens: each CJK character, each other run of letters and digits."""
    return [m.group(0).lower() for m in _TOKEN.finditer(text or "")]


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stemmer: drop one inflection suffix and a final e, keep 6 characters.

    Enough to match translation variants (melted/melt, sizes/size,
    horizontally/horizontal, noticed/notice, cutting/cut) without a dependency.
    """
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    else:
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
                word = word[: -len(suffix)]
                if suffix in _UNDOUBLE_AFTER and word[-1] == word[-2] and word[-1] not in "aeioulsz":
                    word = word[:-1]  # cutting -> cut, stopped -> stop
                break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word[:6]


def stems(text: str | None) -> list[str]:
    """The stems of :func:`tokens`."""
    return [stem(token) for token in tokens(text)]


def content_words(text: str | None, *, ignore: Iterable[str] = (), keep: Iterable[str] = ()) -> set[str]:
    """The set of :func:`tokens` that are not stop words (nor in ``ignore``); ``keep`` are stop words kept."""
    ignored = STOPWORDS.difference(keep).union(ignore)
    return {token for token in tokens(text) if token not in ignored}


def rouge_tokens(text: str | None) -> list[str]:
    """KeyInfo's ROUGE-L tokens: lowercased ``[a-z0-9]+`` words and single CJK characters."""
    return _ROUGE_TOKEN.findall((text or "").lower())


def word_count(text: str | None) -> int:
    """Words (an apostrophe does not split one); each CJK character counts as one word."""
    text = text or ""
    return len(_COUNTED_WORD.findall(text)) + len(_CJK_CHAR.findall(text))


def token_count(text: str | None) -> int:
    """A deterministic offline token count: words, numbers, CJK characters and punctuation marks."""
    return len(_COUNTED_TOKEN.findall(text or ""))


def sentences(text: str | None) -> list[str]:
    """The sentences of a text: split after . ! ? (and their CJK forms) followed by space, and at line breaks."""
    return [s.strip() for s in _SENTENCE_BREAK.split(text or "") if s.strip()]


def numbers(text: str | None) -> list[str]:
    """The numbers written in a text, sorted ("3.5", "1,000", "11/12", "10:30")."""
    return sorted(_NUMBER.findall(text or ""))


def has_negation(text: str | None) -> bool:
    """Whether a text contains a negation (not, no, never, none, neither, nor, cannot, n't)."""
    return bool(_NEGATION.search(text or ""))

"""Read a model's answer and key information out of its raw output (no Django inside).

The prompts ask for ``### Key Information: ...`` and ``### Answer: N``. Real outputs
vary: markdown (``**Answer:** **2**``), lowercase or bold headers without ``#``,
full-width colons, ``Option 2`` / ``(2)`` / ``2.`` / a letter when letters were
shown, the answer header echoed inside the reasoning before the final one, the
template's ``1/2/3/4`` copied verbatim. Rules:

- sections start at a header line: ``#``-prefixed (any name), or a known name
  (answer, final answer, key information, thought, ...) followed by a colon;
- the *last* answer section that contains an answer wins;
- inside it the leading label decides (``2``, ``Option 2``, ``(2)``, ``**2**``,
  ``B`` with letters); otherwise exactly one distinct in-range label anywhere in
  it, or the exact text of exactly one option;
- several different labels (``1/2/3/4``, ``2 or 3``) make the answer ``ambiguous``;
  no answer at all is ``missing``; so is a final answer that names a number outside
  ``1..N`` (``5``, ``0``, ``-1``, ``2.5``): an earlier answer does not stand in for it;
- a lowercase ``a`` / ``i`` starting a sentence is a word, not a letter label;
- without any answer header, a trailing ``the answer is N`` is accepted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

OK, AMBIGUOUS, MISSING = "ok", "ambiguous", "missing"
PARSE_STATUSES = (OK, AMBIGUOUS, MISSING)

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_KNOWN = (
    r"final\s+answers?|answers?|key\s+information|key\s+info|thoughts?|clues|connections?|summary|summari[sz]e"
    r"|chain\s+of\s+thought|reasoning|plan"
)
_HEADER = re.compile(
    rf"""^[ \t>]*
    (?:(?P<hashes>\#{{1,6}})[ \t]*)?
    (?:\*\*|__|\*)?[ \t]*
    (?P<name>{_KNOWN}|[A-Za-z][A-Za-z ]{{0,38}}?)\b
    [ \t]*(?:\*\*|__|\*)?[ \t]*
    (?P<colon>[:：])?
    [ \t]*(?:\*\*|__|\*)?[ \t]*
    (?P<rest>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_KNOWN_RE = re.compile(rf"^(?:{_KNOWN})$", re.IGNORECASE)
# `... so the answer is 2. ### Answer: 2` on one line: start a new line before `###`.
_INLINE_HEADER = re.compile(r"(?<=[^\s#])[ \t]*(?=#{2,6}[ \t]*(?:\*\*)?[ \t]*[A-Za-z])")
_MARKDOWN = re.compile(r"[*_`~]+")
_MULTI = re.compile(r"^\s*[\[(]?\s*(\w{1,2})\s*[\])]?\s*(?:[/,|、&]|\bor\b|\band\b)\s*[\[(]?\s*(\w{1,2})\b", re.IGNORECASE)
_LEADING = re.compile(
    r"""^\s*(?:(?:the\s+)?(?:correct\s+|final\s+)?answer\s+is\s*[:：]?\s*)?
    (?:(?:option|choice|number|no\.?)\s*)?[#:：]?\s*
    (?P<open>[\[(])?\s*(?P<label>\d{1,2}|[A-Za-z])\s*[\])]?
    (?=$|[\s,:;：。)\]!]|\.(?!\d))""",
    re.IGNORECASE | re.VERBOSE,
)
_NUMBER = re.compile(r"(?<![\w.])(?<![^\w\s]-)(?<!\s-)(?<!^-)(\d{1,2})(?![\w]|\.\d)")
_LETTER = re.compile(r"(?:(?<=option )|(?<=choice )|(?<=\()|\b)([A-Z])(?=\)|\b)")
_ANSWER_IS = re.compile(
    r"answer\s+(?:is|would\s+be|:)\s*[:：]?\s*(?:option\s*)?[\[(]?\s*(\d{1,2})\b", re.IGNORECASE
)
_PLACEHOLDER = re.compile(r"^x{3,}$", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedAnswer:
    """``index`` is 0-based in the order the options were *shown*; None unless status is ok."""

    status: str
    index: int | None = None
    label: str = ""


@dataclass(frozen=True)
class Section:
    name: str  # normalised: "answer", "key information", "thought", ...
    text: str


def option_labels(count: int, style: str = "numbers") -> list[str]:
    """Labels shown before the options: ``1..N`` (the default) or ``A..``."""
    if style == "letters":
        return list(LETTERS[:count])
    return [str(i + 1) for i in range(count)]


def _normalise_name(name: str) -> str:
    name = " ".join(name.lower().split())
    if name in {"answers", "final answer", "final answers"}:
        return "answer"
    if name in {"key info"}:
        return "key information"
    if name in {"thoughts"}:
        return "thought"
    if name in {"summary", "summarise"}:
        return "summarize"
    return name


def split_sections(text: str) -> list[Section]:
    """Split an output into header sections (text before the first header is dropped)."""
    text = _INLINE_HEADER.sub("\n", (text or "").replace("\r\n", "\n"))
    sections: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        match = _HEADER.match(line)
        is_header = False
        if match:
            name = match.group("name").strip()
            if match.group("hashes"):
                is_header = True
            elif match.group("colon") and _KNOWN_RE.match(name):
                is_header = True
        if is_header:
            sections.append((_normalise_name(match.group("name")), [match.group("rest")]))
        elif sections:
            sections[-1][1].append(line)
    return [Section(name, "\n".join(lines).strip()) for name, lines in sections]


def _label_to_index(label: str, count: int, style: str) -> int | None:
    label = label.strip()
    if label.isdigit():
        index = int(label) - 1
        if style == "letters":
            return None
        return index if 0 <= index < count else None
    if len(label) == 1 and label.isalpha():
        if style != "letters":
            return None
        index = LETTERS.index(label.upper())
        return index if index < count else None
    return None


def _is_article(leading: re.Match, clean: str) -> bool:
    """A bare lowercase ``a`` / ``i`` starting a sentence (``a stranger did it``) is a word, not option A."""
    label = leading.group("label")
    if not (label.isalpha() and label.islower()) or leading.group("open"):
        return False
    if re.search(r"(?:option|choice|number|no\.?)\s*[#:：]?\s*$", clean[: leading.start("label")], re.IGNORECASE):
        return False
    return bool(re.search(r"\w", clean[leading.end():]))


def _norm_text(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _answer_from_section(text: str, options: int | Sequence[str], style: str) -> ParsedAnswer | None:
    """The answer inside one answer section, or None when it names no option at all."""
    count = options if isinstance(options, int) else len(options)
    clean = _MARKDOWN.sub("", text).strip()
    if not clean:
        return None
    multi = _MULTI.match(clean)
    if multi:
        first, second = (_label_to_index(g, count, style) for g in multi.groups())
        if first is not None and second is not None and first != second:
            return ParsedAnswer(AMBIGUOUS)
    leading = _LEADING.match(clean)
    if leading and _is_article(leading, clean):
        leading = None
    if leading:
        label = leading.group("label")
        index = _label_to_index(label, count, style)
        if index is not None:
            return ParsedAnswer(OK, index, label)
        if label.isdigit() and style == "numbers":
            return ParsedAnswer(MISSING)  # an explicit number outside 1..N: no earlier answer may stand in
    if style == "letters":
        found = {m.group(1) for m in _LETTER.finditer(clean) if _label_to_index(m.group(1), count, style) is not None}
    else:
        found = {m.group(1) for m in _NUMBER.finditer(clean) if _label_to_index(m.group(1), count, style) is not None}
    if len(found) == 1:
        label = found.pop()
        return ParsedAnswer(OK, _label_to_index(label, count, style), label)
    if len(found) > 1:
        return ParsedAnswer(AMBIGUOUS)
    if not isinstance(options, int):
        wanted = _norm_text(clean)
        matches = [i for i, option in enumerate(options) if _norm_text(option) and _norm_text(option) in wanted]
        if len(matches) == 1:
            return ParsedAnswer(OK, matches[0], option_labels(count, style)[matches[0]])
        if len(matches) > 1:
            return ParsedAnswer(AMBIGUOUS)
    return None


def parse_answer(text: str, options: int | Sequence[str], *, labels: str = "numbers") -> ParsedAnswer:
    """The chosen option of a multiple-choice output (see the module docstring for the rules).

    ``options`` is the number of options shown, or the shown option texts (which also
    lets an answer written out as the option's text count).
    """
    answers = [s for s in split_sections(text) if s.name == "answer"]
    for section in reversed(answers):
        parsed = _answer_from_section(section.text, options, labels)
        if parsed is not None:
            return parsed
    if not answers and labels == "numbers":
        count = options if isinstance(options, int) else len(options)
        matches = list(_ANSWER_IS.finditer(_MARKDOWN.sub("", text or "")))
        if matches:
            label = matches[-1].group(1)
            index = _label_to_index(label, count, labels)
            if index is not None:
                return ParsedAnswer(OK, index, label)
    return ParsedAnswer(MISSING)


def section_text(text: str, name: str) -> str:
    """The last non-empty section called ``name`` (placeholders such as ``xxxxx`` count as empty)."""
    for section in reversed(split_sections(text)):
        if section.name == name:
            body = section.text.strip()
            if body and not _PLACEHOLDER.match(body):
                return body
    return ""


def parse_key_information(text: str) -> str:
    """The model's ``### Key Information:`` section (the last one), or ''."""
    return section_text(text, "key information")


def parse_free_answer(text: str) -> str:
    """The free-text answer: the last ``### Answer:`` section, else the whole output."""
    return section_text(text, "answer") or (text or "").strip()

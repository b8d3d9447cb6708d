"""Read a model's answer and key information out of its raw output, as a careful grader would (no Django).

The last answer section that says anything decides (``### Answer:``, ``**Final Answer:**``, ``答案：``); without
one, "the answer is X" / ``\\boxed{X}`` anywhere, else a bare label as the first or last line. Template echoes
(``1/2/3/4``, ``xxxxx``, a copied list of options, ``Answer 1:`` ... ``Answer 4:``) are never answers; a reading
naming several options is ``ambiguous``, no answer is ``missing``: never a guess. A number alone where the prompt
asks for the serial number (the output, a line, an answer section) is that serial number, even where an option's
text is that number; elsewhere such a clash is ``ambiguous``. The rules, and the agreement with a person's reading
of real outputs: tests/evaluation/corpus/ (README.md, answers.jsonl)."""
from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.prompting.answer_sections import (  # noqa: F401 - the section readers are read from here too
    _INLINE_HEADER,
    Section,
    parse_free_answer,
    parse_key_information,
    section_text,
    split_sections,
)

OK, AMBIGUOUS, MISSING = "ok", "ambiguous", "missing"
PARSE_STATUSES = (OK, AMBIGUOUS, MISSING)

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|texttt)\s*\{([^{}]*)\}")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{([^{}]*)\}")
_LATEX_MARK = re.compile(r"\$+|\\[()\[\]]")
_MARKDOWN = re.compile(r"[*_`~]+")
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])x{3,}(?![A-Za-z])", re.IGNORECASE)
_PLACEHOLDER_ONLY = re.compile(r"^[\s\W]*(?:x{3,}|n/?a)?[\s\W]*$", re.IGNORECASE)
_NB, _NA = r"(?<![A-Za-z0-9.\-])", r"(?![A-Za-z0-9]|[.,]\d)"  # a label token's boundaries (ASCII: 答案是B)
_TOKEN = r"(?:\d{1,2}|[A-Za-z])"
_OPEN, _CLOSE = r"[\[(（{<]?", r"[\])）}>]?"
_PREFIX = r"(?:(?:option|choice|number|no\.?|选项|选)\s*[#:]?\s*)?"
# A label at the very start of an answer, after "the answer is" / "option" and markdown have gone.
_LEADING = re.compile(
    rf"^\s*(?:(?:the\s+|my\s+)?(?:correct\s+|final\s+|right\s+)?answer\s+is\s*:?\s*|答案(?:是|为))?"
    rf"{_PREFIX}(?P<open>{_OPEN})\s*(?P<label>{_TOKEN}){_NA}\s*{_CLOSE}(?=$|[\s,:;。，)\]!?/|、&+]|\.(?!\d))",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(rf"^\s*{_CLOSE}\s*(?:[/|,、&+;]|\bor\b|\band\b|或)\s*{_PREFIX}{_OPEN}\s*({_TOKEN}){_NA}",
                        re.IGNORECASE)
# Stated anywhere: "the answer is 3", "The answer to the question is 4", "correct option: C", 答案是B.
_STATED = re.compile(
    r"(?:(?:correct|final|right|best)\s+(?:answer|option|choice)\s*(?:is|:)"
    r"|(?<![A-Za-z])answer(?:\s+to\s+(?:the|this)\s+(?:question|problem|puzzle)(?:\s+above)?)?"
    r"\s*(?:is|(?:would|should|will|must|might|could|may)\s+be)"
    r"|(?:^[ \t]*|(?<=[\"'{]))answer[\"']?\s*[:=])\s*:?\s*"  # "answer:" only as a line or a key
    r"(?:(?:therefore|thus|clearly|likely|probably|most\s+likely)\s+)?"
    r"|(?<![A-Za-z])(?:i\s*(?:would|'d|will|'ll)?\s*(?:go\s+with|choose|pick|select)|my\s+(?:choice|pick)\s+is)\s*"
    r"|(?:正确)?(?:答案|选项)\s*(?:是|为|应该是|应为|:)\s*|故选|应选|我选择?",
    re.IGNORECASE | re.MULTILINE,
)
_STATED_AFTER = re.compile(  # "Option 2 is correct", "B is the correct answer"
    rf"(?:(?:option|choice)\s*{_OPEN}\s*(?P<a>{_TOKEN}){_NA}|(?:^|(?<=[.;:!?,]\s))(?P<b>\d{{1,2}}|[A-Z]){_NA})"
    rf"{_CLOSE}\s+is\s+"
    rf"(?:the\s+)?(?:correct|right|true)(?:\s+(?:answer|option|choice|one))?(?![\w-])",
    re.IGNORECASE | re.MULTILINE,
)
_CONTEXT = re.compile(  # a label in context, inside an answer section only
    rf"(?:option|choice|选项|选)\s*{_OPEN}\s*(?P<a>{_TOKEN}){_NA}"
    rf"|(?:it'?s|it\s+is|is|be|choose|chose|select|pick|go\s+with|so|thus|therefore|hence)\s+(?:option\s+)?"
    rf"{_OPEN}(?P<b>{_TOKEN}){_NA}{_CLOSE}\s*(?:[.!。]|$)"
    rf"|(?P<c>{_TOKEN}){_NA}{_CLOSE}\s+is\s+(?:the\s+)?(?:correct|right|best|answer|most\s+likely)",
    re.IGNORECASE,
)
_WORDS = {w: i for i, ws in enumerate([("one", "first", "一"), ("two", "second", "二"), ("three", "third", "三"),
                                        ("four", "fourth", "四"), ("five", "fifth", "五"), ("six", "sixth", "六")])
          for w in ws}
_ORDINAL = re.compile(
    r"(?:option|choice)\s+(?P<a>one|two|three|four|five|six)(?![\w-])"
    r"|(?<![\w-])(?:the\s+)?(?P<b>first|second|third|fourth|fifth|sixth)\s+(?:option|choice)(?![\w-])"
    r"|第(?P<c>[一二三四五六])(?:个)?(?:选项|项)", re.IGNORECASE,
)
_LABEL_LINE = re.compile(rf"{_OPEN}\s*{_TOKEN}\s*{_CLOSE}(?:\s*(?:[/|,、&]|or|and)\s*{_OPEN}\s*{_TOKEN}\s*{_CLOSE})+",
                         re.IGNORECASE)
_SLASHED = re.compile(rf"{_NB}{_TOKEN}(?:\s*[/|]\s*{_TOKEN}{_NA}){{2,}}")  # 1/2/3/4, not a fraction
_TOKENS = re.compile(rf"{_NB}({_TOKEN}){_NA}")
_PUNCTUATION = re.compile(r"(?!-\d)[^\w\s]")
_BULLET = re.compile(r"^(?:[-•·>]\s+)+")
_NUMBER = re.compile(rf"{_NB}(\d{{1,2}}){_NA}")
_LETTER = re.compile(rf"(?:(?<=option )|(?<=choice )|(?<=\()|{_NB})([A-Z])(?![A-Za-z0-9])")


@dataclass(frozen=True)
class ParsedAnswer:
    """``index`` is 0-based in the order the options were *shown*; None unless status is ok."""

    status: str
    index: int | None = None
    label: str = ""


def option_labels(count: int, style: str = "numbers") -> list[str]:
    """Labels shown before the options: ``1..N`` (the default) or ``A..``."""
    return list(LETTERS[:count]) if style == "letters" else [str(i + 1) for i in range(count)]


def _prepare(text: str) -> str:
    """NFKC-normalised (full-width digits, colons); reasoning blocks, LaTeX wrappers removed (where their mark is)."""
    text = unicodedata.normalize("NFKC", (text or "").replace("\r\n", "\n"))
    text = _THINK.sub("", text).replace("</think>", "") if "<" in text else text
    if "\\" in text:
        for _ in range(3):
            text = _LATEX_WRAP.sub(r"\1", text)
        text = _BOXED.sub(r" the answer is \1. ", text)  # a boxed value is the answer, wherever it stands
    return _LATEX_MARK.sub("", text) if "\\" in text or "$" in text else text


class _Reader:
    """One output's options and label style; each reading returns a ParsedAnswer, or None when nothing is said."""

    def __init__(self, options: int | Sequence[str], style: str):
        self.count, self.style = options if isinstance(options, int) else len(options), style
        self.texts = [] if isinstance(options, int) else [_norm_text(o) for o in options]
        self.labels = option_labels(self.count, style)

    def index(self, label: str) -> int | None:
        if label.isdigit():
            number = int(label) - 1
            return number if self.style != "letters" and 0 <= number < self.count else None
        if len(label) == 1 and label.isascii() and label.isalpha() and self.style == "letters":
            number = LETTERS.index(label.upper())
            return number if number < self.count else None
        return None

    def answer(self, indexes) -> ParsedAnswer | None:
        indexes = set(indexes)
        if len(indexes) == 1:
            index = indexes.pop()
            return ParsedAnswer(OK, index, self.labels[index])
        return ParsedAnswer(AMBIGUOUS) if indexes else None

    def options_in(self, text: str, *, start: bool = False) -> set[int]:
        """Options whose whole text is in ``text`` (or starts it); one inside another matched one does not count."""
        wanted = f" {_norm_text(text)} "
        found = {i for i, option in enumerate(self.texts)
                 if option and (wanted.startswith(f" {option} ") if start else f" {option} " in wanted)}
        return {i for i in found if not any(self.texts[i] != self.texts[j] and self.texts[i] in self.texts[j]
                                            for j in found)}

    def spelled(self, text: str) -> str:
        """``option three`` / ``the third option`` / ``第三个选项`` written as ``option <its label>``."""
        def label(match: re.Match) -> str:
            index = _WORDS[next(g for g in match.groups() if g).lower()]
            return f"option {self.labels[index]}" if index < self.count else match.group(0)
        return _ORDINAL.sub(label, text)

    def valued(self, number: str, text: str = "") -> ParsedAnswer | None:
        """An out-of-range number that is an option's value (options ``50 yuan``, ``866``), alone on its line."""
        found = {i for i, option in enumerate(self.texts) if option == number or option.startswith(number + " ")}
        return self.answer(found | self.options_in(text.split("\n")[0]) if found else found)

    def named(self, text: str) -> ParsedAnswer | None:
        """The option written out: the one the text starts with (``The butler, because ...``), else every one in it."""
        first = self.options_in(text, start=True)
        rest = f"{_norm_text(text)} "[len(self.texts[min(first)]) + 1:] if len(first) == 1 else ""
        if len(first) == 1 and not re.match(r"(?:or|and)\b", rest):
            return self.answer(first)
        return self.answer(self.options_in(text))

    def leading(self, text: str) -> tuple[str, str] | None:
        """``(label, rest)`` when ``text`` starts with a label: ``2``, ``(2)``, ``Option 2: ...``, ``2. ...``."""
        text = _BULLET.sub("", text.strip())
        match = _LEADING.match(text)
        if not match or _is_word(match, text):
            return None
        return match.group("label"), text[match.end():]

    def label_reading(self, label: str, rest: str, *, serial: bool = False) -> ParsedAnswer | None:
        """A label followed by ``rest``: another label right after it, or another option's text, makes it unsure.
        ``serial`` (an answer section's start, a line of its own): a number alone there is the serial number."""
        index = self.index(label)
        if index is None:
            return None
        following = _SEPARATOR.match(rest)
        if following and not (following.group(1).islower() and self.style == "letters"):
            other = following.group(1)
            if (other.isdigit() or self.index(other) is not None) and other.upper() != label.upper():
                return ParsedAnswer(AMBIGUOUS)
        line = rest.split("\n")[0].strip(" .:)-")
        named = self.options_in(line, start=True) or self.resembling(line)
        if not named and label.isdigit() and not (serial and not rest.strip(" \n.。!")):
            named = {i for i, option in enumerate(self.texts) if option == label}  # options "-1", "2", "4"
        if named and index not in named:
            return ParsedAnswer(AMBIGUOUS)
        return ParsedAnswer(OK, index, self.labels[index])

    def resembling(self, text: str) -> set[int]:
        """Options a text is a garbled copy of (most of its words, and most of theirs, in common)."""
        words = set(_norm_text(text).split())
        return {i for i, option in enumerate(self.texts) if len(words) >= 3
                and 2 * len(words & set(option.split())) >= 0.6 * (len(words) + len(set(option.split())))}

    def stated(self, text: str) -> ParsedAnswer | None:
        """Every "the answer is ..." in ``text``: one option named (by label or text) is the answer."""
        readings = [self.answer([i]) for m in _STATED_AFTER.finditer(text)
                    if (i := self.index(m.group("a") or m.group("b"))) is not None]
        for match in _STATED.finditer(text):
            rest = text[match.end():]
            leading = self.leading(rest)
            reading = (self.label_reading(*leading) or (self.valued(leading[0]) if leading[0].isdigit() else None)
                       if leading else None)
            reading = reading or self.answer(self.options_in(re.split(r"[.!?。\n]", rest.strip(), maxsplit=1)[0]))
            readings += [reading] if reading else []
        if any(r.status == AMBIGUOUS for r in readings):
            return ParsedAnswer(AMBIGUOUS)
        return self.answer(r.index for r in readings)

    def listed(self, lines: Sequence[str]) -> set[int]:
        """The options named at the start of the first lines (a copied list of the options, ``1\n2\n3``)."""
        found = set()
        for line in (line for line in lines if line.strip()):
            leading = self.leading(line)
            if not leading or self.index(leading[0]) is None:
                break
            found.add(self.index(leading[0]))
        return found

    def bare(self, line: str, neighbours: Sequence[str]) -> ParsedAnswer | None:
        """A line that is a label alone, or a label and its own option text not inside a list."""
        leading = self.leading(line.strip().rstrip(".。!"))
        if not leading:
            return None
        reading, rest = self.label_reading(*leading, serial=True), leading[1].strip(" .:)-")
        if not rest or reading is None:
            return reading
        if any(self.leading(n) for n in neighbours):
            return None  # an item of a list
        own = self.options_in(rest, start=True) | self.resembling(rest) | self.prefixed(line)  # 2:10:54 (and 6/11 s)
        return reading if reading.status == AMBIGUOUS or reading.index in own else None

    def prefixed(self, text: str) -> set[int]:
        """Options whose text starts with all of ``text`` (a value cut short: ``2:10:54`` of ``2:10:54 and 6/11 s``)."""
        wanted = _norm_text(text)
        return {i for i, option in enumerate(self.texts) if len(wanted) >= 4 and f"{option} ".startswith(f"{wanted} ")}

    def section(self, text: str) -> ParsedAnswer | None:
        """The answer inside one answer section."""
        clean = _MARKDOWN.sub("", text).strip()
        if _PLACEHOLDER_ONLY.match(clean):
            return None
        if len(self.listed(clean.split("\n"))) > 1:
            return ParsedAnswer(AMBIGUOUS)  # a copied list of the options, or one label per line
        placeholder = bool(_PLACEHOLDER.search(clean))
        leading = self.leading(clean)
        if leading:
            reading = self.label_reading(*leading, serial=True)
            if reading is not None:
                return ParsedAnswer(AMBIGUOUS) if placeholder else reading
            if leading[0].isdigit() and self.style == "numbers":  # out of range: no earlier answer stands in
                return self.valued(leading[0], clean) or ParsedAnswer(MISSING)
        for read in (self.stated, self.in_context, self.named, self.any_label):
            reading = read(clean)
            if reading is not None:
                return ParsedAnswer(AMBIGUOUS) if placeholder else reading
        return None

    def in_context(self, text: str) -> ParsedAnswer | None:
        found = [self.index(next(g for g in m.groups() if g)) for m in _CONTEXT.finditer(text)]
        return self.answer(i for i in found if i is not None)

    def any_label(self, text: str) -> ParsedAnswer | None:
        """A label standing alone in prose: unsure unless the section is a few words around it."""
        pattern = _LETTER if self.style == "letters" else _NUMBER
        found = {i for m in pattern.finditer(text) if (i := self.index(m.group(1))) is not None
                 and not (m.group(1) in "AI" and re.match(r"\s+[a-z]", text[m.end():]))}
        if not found:
            return None
        return self.answer(found) if len(found) == 1 and len(text.split()) <= 6 else ParsedAnswer(AMBIGUOUS)

    def unheaded(self, text: str, sections: Sequence[Section]) -> ParsedAnswer | None:
        """No answer section: a line of labels (``### A/B/C/D``) or ``1/2/3/4`` anywhere names several; a bare
        label as the first or last line is the answer (not an item of a list); so is a short sentence's option."""
        raw = [line.strip(" >\t") for line in _MARKDOWN.sub("", text).split("\n") if line.strip(" #>\t")]
        lines = [line.lstrip("# ") for line in raw]
        alone = set()  # lines that are one label each (``C\nD``), a line of labels, 1/2/3/4 anywhere
        for line in lines:
            runs = [line] if _LABEL_LINE.fullmatch(line.strip(" .。")) else _SLASHED.findall(line)
            if any(len({i for t in _TOKENS.findall(run) if (i := self.index(t)) is not None}) > 1 for run in runs):
                return ParsedAnswer(AMBIGUOUS)
            leading = self.leading(line.rstrip(".。!"))
            alone |= {self.index(leading[0])} - {None} if leading and not leading[1].strip() else set()
        if len(alone) > 1:
            return ParsedAnswer(AMBIGUOUS)
        readings = [self.bare(lines[p], lines[max(0, p - 1):p] + lines[p + 1:p + 2])  # not a heading (### 1)
                    for p in sorted({0, len(lines) - 1}) if lines and (len(lines) == 1 or raw[p][:1] != "#")]
        readings = [r for r in readings if r is not None]
        if readings:
            return self.answer(r.index for r in readings) if all(r.status == OK for r in readings) else readings[0]
        if len(lines) == 1 and not sections and len(lines[0].split()) <= 25:  # "The butler did it."
            return self.named(lines[0])
        return None


def _is_word(leading: re.Match, clean: str) -> bool:
    """``a stranger did it`` / ``A man lied`` / ``I think``: an article or pronoun, not a letter label."""
    label = leading.group("label")
    if not label.isalpha() or leading.group("open"):
        return False
    if re.search(r"(?:option|choice|选项|选)\s*[#:]?\s*$", clean[: leading.start("label")], re.IGNORECASE):
        return False
    rest = clean[leading.end():]
    if label.islower():
        return bool(re.search(r"\w", rest))
    return label in "AI" and bool(re.match(r"\s+[a-z]", rest))


@functools.lru_cache(maxsize=4096)  # option texts come back with every output of an item
def _norm_text(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", _MARKDOWN.sub(" ", text).lower()).split())


# The prompt's own format, ending in an answer section that is one label alone (``...\n### Answer:\n2``): what a
# model that follows the prompt writes, read without the general rules (20 us of the event loop's ~150 per request
# at concurrency 256). Only where those rules could not read it otherwise: ASCII from the header on (the normalising
# leaves it as it is), no mark that rewrites the text before it (``<think>``, LaTeX, ``\r``; looked for after NFKC,
# as the rules look: ``＜think＞`` is ``<think>``); the label in range.
# tests/evaluation/prompting/test_answer_reading.py checks it against the general rules on generated outputs.
_LAST_ANSWER = re.compile(r"[ \t]*###[ \t]*Answer[ \t]*:[ \t\n]*(?:(\d{1,2})|([A-Z]))[ \t\n]*\Z", re.ASCII)


def _answer_alone(text: str, count: int, style: str) -> ParsedAnswer | None:
    """The reading of an output that ends in an answer section holding one label, else None (read by the rules)."""
    header = text.rfind("###")
    if header < 0 or "\r" in text:
        return None
    marks = text if text.isascii() else unicodedata.normalize("NFKC", text)  # as the rules see it: ＜think＞ is <think>
    if "<" in marks or "\\" in marks:
        return None
    start = text.rfind("\n", 0, header) + 1  # the header's line
    match = _LAST_ANSWER.match(text, start)
    if match is None:
        return None
    number, letter = match.groups()
    if number is not None:
        index = int(number) - 1
        if style == "letters" or not 0 <= index < count:
            return None
    else:
        index = ord(letter) - 65
        if style != "letters" or index >= count:
            return None
    return ParsedAnswer(OK, index, option_labels(count, style)[index])


def parse_answer(text: str, options: int | Sequence[str], *, labels: str = "numbers") -> ParsedAnswer:
    """The chosen option of a multiple-choice output (see the module docstring for the rules).

    ``options`` is the number of options shown, or the shown option texts (which also
    lets an answer written out as the option's text count).
    """
    if text and (fast := _answer_alone(text, options if isinstance(options, int) else len(options), labels)):
        return fast
    return _read_by_rules(text, options, labels)


def _read_by_rules(text: str, options: int | Sequence[str], labels: str) -> ParsedAnswer:
    reader = _Reader(options, labels)
    text = reader.spelled(_prepare(text))
    sections = split_sections(text)
    answers = [s for s in sections if s.name == "answer"]
    echo = len({s.number for s in answers if s.number is not None}) > 1  # ``### Answer 1:`` ... ``Answer 4:``
    for section in reversed(answers):
        if section.number is not None and echo:
            continue
        reading = reader.section(f"{section.number} {section.text}" if section.number is not None else section.text)
        if reading is not None:
            return reading
    if echo:
        return ParsedAnswer(AMBIGUOUS)
    return reader.stated(_MARKDOWN.sub("", text)) or reader.unheaded(text, sections) or ParsedAnswer(MISSING)

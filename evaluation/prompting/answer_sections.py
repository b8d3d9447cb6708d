"""The header sections of a model's output (``### Key Information:``, ``**Final Answer:**``, ``答案：``) and the texts
read from them: the key information, the free-text answer (no Django). The answer among the options is read by
evaluation.prompting.answer_reading, which splits an output here."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_KNOWN = (
    r"final\s+answers?|correct\s+answers?|answers?|key\s+information|key\s+info|thoughts?|clues|connections?"
    r"|summary|summari[sz]e|chain\s+of\s+thought|reasoning|plan|最终答案|正确答案|答案|关键信息|思考|思路|推理|线索|总结"
)
_HEADER = re.compile(
    rf"""^[ \t>]*
    (?:(?P<hashes>\#{{1,6}})[ \t]*)?
    (?:\*\*|__|\*)?[ \t]*
    (?P<name>{_KNOWN}|[A-Za-z][A-Za-z ]{{0,38}}?)(?![A-Za-z])
    (?:[ \t]*(?P<number>\d{{1,2}})(?=[ \t]*(?:\*\*|__|\*)?[ \t]*(?:[:：]|$)))?
    [ \t]*(?:\*\*|__|\*)?[ \t]*
    (?P<colon>[:：])?
    [ \t]*(?:\*\*|__|\*)?[ \t]*
    (?P<rest>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_KNOWN_RE = re.compile(rf"^(?:{_KNOWN})$", re.IGNORECASE)
_NAMES = {"answers": "answer", "final answer": "answer", "final answers": "answer", "correct answer": "answer",
          "correct answers": "answer", "最终答案": "answer", "正确答案": "answer", "答案": "answer",
          "key info": "key information", "关键信息": "key information", "thoughts": "thought", "思考": "thought",
          "思路": "thought", "推理": "thought", "线索": "clues", "summary": "summarize", "summarise": "summarize",
          "总结": "summarize"}
# `... so the answer is 2. ### Answer: 2` on one line: start a new line before `###`.
_INLINE_HEADER = re.compile(r"(?<=[^\s#])[ \t]*(?=#{2,6}[ \t]*(?:\*\*)?[ \t]*[A-Za-z])")


@dataclass(frozen=True)
class Section:
    name: str  # normalised: "answer", "key information", "thought", ...
    text: str
    number: int | None = None  # ``### Answer 2:`` -> 2


@functools.lru_cache(maxsize=512)  # an output is split twice (answer, key information) when reading leaves it as is
def split_sections(text: str) -> tuple[Section, ...]:
    """Split an output into header sections (text before the first header is dropped)."""
    text = (text or "").replace("\r\n", "\n")
    text = _INLINE_HEADER.sub("\n", text) if "##" in text else text
    sections: list[tuple[str, int | None, list[str]]] = []
    for line in text.split("\n"):
        match = _HEADER.match(line)
        if match and (match.group("hashes") or (match.group("colon") and _KNOWN_RE.match(match.group("name").strip()))):
            number = match.group("number")
            name = " ".join(match.group("name").lower().split())
            sections.append((_NAMES.get(name, name), int(number) if number else None, [match.group("rest")]))
        elif sections:
            sections[-1][2].append(line)
    return tuple(Section(name, "\n".join(lines).strip(), number) for name, number, lines in sections)


def section_text(text: str, name: str) -> str:
    """The last non-empty section called ``name`` (placeholders such as ``xxxxx`` count as empty)."""
    for section in reversed(split_sections(text)):
        if section.name == name:
            body = section.text.strip()
            if body and not re.fullmatch(r"x{3,}", body, re.IGNORECASE):
                return body
    return ""


def parse_key_information(text: str) -> str:
    """The model's ``### Key Information:`` section (the last one), or ''."""
    return section_text(text, "key information")


def parse_free_answer(text: str) -> str:
    """The free-text answer: the last ``### Answer:`` section, else the whole output."""
    return section_text(text, "answer") or (text or "").strip()

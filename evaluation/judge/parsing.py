"""The judge's reply: one strict JSON object, read with the position of every value (no Django inside).

Strict means: the reply is exactly one JSON object (RFC 8259: no comments, no trailing
commas, no single quotes, no NaN, no duplicate keys), with only whitespace around it,
or inside one Markdown code fence (```json ... ```) and nothing else. Anything else
(prose around the object, a truncated reply, two objects) is refused with a reason:
the label is then stored as *unscored* with the raw text, never guessed.

Positions (character offsets into the raw reply) let the belief be read from the
token log-probabilities at the verdict's own tokens (see :mod:`beliefs`).

:func:`read_verdicts` checks a parsed reply against the verdicts a task allows: each
aspect's verdict must be one of its choices (case-insensitive) and a stated
``confidence`` must be a number in [0, 1].
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Path = tuple[str | int, ...]

_WHITESPACE = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_FENCE = re.compile(r"\A\s*```[A-Za-z]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)
_CONSTANTS = {"true": True, "false": False, "null": None}


class ReplyInvalid(ValueError):
    """The reply is not one strict JSON object (or not of the shape the task asks for)."""


@dataclass(frozen=True)
class ParsedReply:
    """The object of a reply and, per path of keys/indices, the (start, end) offsets of each value in the raw text.

    A string value's span includes its quotes."""

    value: dict
    spans: dict[Path, tuple[int, int]]

    def get(self, path: Path, default: Any = None) -> Any:
        node: Any = self.value
        for key in path:
            if isinstance(key, int):
                if not isinstance(node, list) or not -len(node) <= key < len(node):
                    return default
            elif not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node


class _Parser:
    def __init__(self, text: str, start: int, end: int):
        self.text, self.pos, self.end = text, start, end
        self._bounded = text if end == len(text) else text[:end]  # strings may not run past the end
        self.spans: dict[Path, tuple[int, int]] = {}

    def fail(self, why: str) -> ReplyInvalid:
        return ReplyInvalid(f"{why} at character {self.pos}")

    def skip(self) -> None:
        while self.pos < self.end and self.text[self.pos] in _WHITESPACE:
            self.pos += 1

    def value(self, path: Path) -> Any:
        self.skip()
        if self.pos >= self.end:
            raise self.fail("the reply ends before a value (truncated?)")
        start = self.pos
        char = self.text[start]
        if char == "{":
            result: Any = self.object(path)
        elif char == "[":
            result = self.array(path)
        elif char == '"':
            result = self.string()
        elif (match := _NUMBER.match(self.text, start, self.end)) is not None:
            self.pos = match.end()
            number = match.group()
            result = float(number) if any(c in number for c in ".eE") else int(number)
        else:
            for word, constant in _CONSTANTS.items():
                if self.text.startswith(word, start, self.end):
                    self.pos = start + len(word)
                    result = constant
                    break
            else:
                raise self.fail(f"unexpected {char!r}")
        self.spans[path] = (start, self.pos)
        return result

    def string(self) -> str:
        try:
            text, after = json.decoder.scanstring(self._bounded, self.pos + 1, True)
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated"):
                raise self.fail("the reply ends inside a string (truncated?)") from None
            raise self.fail(f"bad string ({exc.msg})") from None
        self.pos = after
        return text

    def expect(self, char: str, what: str) -> None:
        self.skip()
        if self.pos >= self.end:
            raise self.fail(f"the reply ends before {what} (truncated?)")
        if self.text[self.pos] != char:
            raise self.fail(f"expected {what}, found {self.text[self.pos]!r}")
        self.pos += 1

    def object(self, path: Path) -> dict:
        self.pos += 1
        result: dict = {}
        self.skip()
        if self.pos < self.end and self.text[self.pos] == "}":
            self.pos += 1
            return result
        while True:
            self.skip()
            if self.pos >= self.end or self.text[self.pos] != '"':
                raise self.fail("expected a key in double quotes" if self.pos < self.end else
                                "the reply ends inside an object (truncated?)")
            key = self.string()
            if key in result:
                raise self.fail(f"duplicate key {key!r}")
            self.expect(":", "':'")
            result[key] = self.value((*path, key))
            self.skip()
            if self.pos >= self.end:
                raise self.fail("the reply ends inside an object (truncated?)")
            char = self.text[self.pos]
            self.pos += 1
            if char == "}":
                return result
            if char != ",":
                self.pos -= 1
                raise self.fail("expected ',' or '}'")

    def array(self, path: Path) -> list:
        self.pos += 1
        result: list = []
        self.skip()
        if self.pos < self.end and self.text[self.pos] == "]":
            self.pos += 1
            return result
        while True:
            result.append(self.value((*path, len(result))))
            self.skip()
            if self.pos >= self.end:
                raise self.fail("the reply ends inside a list (truncated?)")
            char = self.text[self.pos]
            self.pos += 1
            if char == "]":
                return result
            if char != ",":
                self.pos -= 1
                raise self.fail("expected ',' or ']'")


def parse_reply(text: str | None) -> ParsedReply:
    """The one JSON object of a reply with the spans of its values; ReplyInvalid otherwise."""
    text = text or ""
    start, end = 0, len(text)
    fence = _FENCE.match(text)
    if fence is not None:
        start, end = fence.span("body")
    parser = _Parser(text, start, end)
    parser.skip()
    if parser.pos >= end:
        raise ReplyInvalid("empty reply")
    if text[parser.pos] != "{":
        raise parser.fail("the reply does not start with a JSON object")
    value = parser.value(())
    parser.skip()
    if parser.pos != end:
        raise parser.fail("text after the JSON object")
    return ParsedReply(value=value, spans=parser.spans)


@dataclass(frozen=True)
class AspectSpec:
    """Where one aspect's verdict (and its stated confidence) sits in the reply, and the verdicts allowed."""

    aspect: str
    choices: tuple[str, ...]
    verdict_path: Path
    confidence_path: Path


@dataclass(frozen=True)
class Verdict:
    aspect: str
    label: str
    confidence: float | None
    span: tuple[int, int]  # the verdict string in the raw reply, quotes included


@dataclass
class ReadReply:
    verdicts: list[Verdict]
    rationale: str = ""
    reply: ParsedReply | None = None
    extra: dict = field(default_factory=dict)


def _confidence(reply: ParsedReply, path: Path, *, required: bool) -> float | None:
    value = reply.get(path)
    if value is None:
        if required:
            raise ReplyInvalid(f"no confidence at {'/'.join(map(str, path))}")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ReplyInvalid(f"the confidence at {'/'.join(map(str, path))} is not a number from 0 to 1")
    return float(value)


def read_verdicts(text: str | None, aspects: Sequence[AspectSpec], *, confidence_required: bool = False) -> ReadReply:
    """Every aspect's verdict from a strict JSON reply; ReplyInvalid when one is missing or not allowed."""
    reply = parse_reply(text)
    verdicts = []
    for spec in aspects:
        value = reply.get(spec.verdict_path)
        label = value.strip().lower() if isinstance(value, str) else None
        if label not in spec.choices:
            raise ReplyInvalid(f"the verdict for {spec.aspect} is {value!r}, not one of {', '.join(spec.choices)}")
        confidence = _confidence(reply, spec.confidence_path, required=confidence_required)
        verdicts.append(Verdict(spec.aspect, label, confidence, reply.spans[spec.verdict_path]))
    rationale = reply.get(("rationale",), "")
    return ReadReply(verdicts=verdicts, rationale=rationale if isinstance(rationale, str) else "", reply=reply)

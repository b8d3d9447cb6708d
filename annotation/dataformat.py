"""Reading and validating the official DetectBench JSONL schema (no Django inside).

Every problem is reported with the file, the 1-based line number and the field, so
that a researcher can open the file at the right place.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from foundation.words import gettext

MAX_LINE_BYTES = 1_000_000  # a DetectBench record is ~2 kB; anything near 1 MB is not a record
MAX_NESTING = 32  # a record nests 2 levels (clue_graph); extra fields may nest a little more, never this much
MAX_INTEGER_DIGITS = 100
# Text that is not a character at all: a lone UTF-16 surrogate (PostgreSQL cannot store a NUL either).
_SURROGATE = re.compile("[\ud800-\udfff]")
REQUIRED_FIELDS = ("id", "context", "question", "options", "answer", "clue_graph")
CLUE_GRAPH_FIELDS = ("evidence", "multi_hop_reasoning")


@dataclass(frozen=True)
class Limits:
    """The declared bounds of an imported file and its records (a real DetectBench record has 4 options, at most
    ~2,000 characters of context and ~1,200 of question, option or clue graph). The web app takes them from the
    ITEM_IMPORT_* settings (`annotation.services.items.import_limits`); these are the settings' defaults."""

    max_options: int = 26
    max_context_chars: int = 50_000
    max_question_chars: int = 5_000
    max_option_chars: int = 2_000
    max_clue_graph_chars: int = 50_000  # evidence and multi_hop_reasoning, each
    max_file_bytes: int = 50 * 1024 * 1024


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class RecordError:
    file: str
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass
class ParsedRecord:
    line: int
    external_id: str
    external_id_is_int: bool
    context: str
    question: str
    options: list[str]
    answer_index: int
    evidence: str
    reasoning: str
    extra: dict = field(default_factory=dict)


@dataclass
class ParseResult:
    records: list[ParsedRecord]
    errors: list[RecordError]
    too_large: bool = False  # over Limits.max_file_bytes: refused whole, whatever else the file holds


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_record(obj, *, file: str, line: int,
                    limits: Limits = DEFAULT_LIMITS) -> tuple[ParsedRecord | None, list[RecordError]]:
    """Check one decoded JSON value against the schema and the declared limits."""
    errors: list[RecordError] = []

    def err(field_name: str | None, message: str) -> None:
        errors.append(RecordError(file, line, field_name, message))

    if not isinstance(obj, dict):
        err(None, gettext("expected a JSON object, got %(type)s", type=type(obj).__name__))
        return None, errors
    for name in REQUIRED_FIELDS:
        if name not in obj:
            err(name, gettext("missing field"))
    if errors:
        return None, errors

    raw_id = obj["id"]
    if _is_int(raw_id):
        external_id, id_is_int = str(raw_id), True
    elif isinstance(raw_id, str) and raw_id.strip() and len(raw_id) <= 100:
        external_id, id_is_int = raw_id, False
    else:
        err("id", gettext("must be an integer or a non-empty string of at most 100 characters"))
        external_id, id_is_int = "", False
    for name, limit in (("context", limits.max_context_chars), ("question", limits.max_question_chars)):
        value = obj[name]
        if not isinstance(value, str):
            err(name, gettext("must be a string, got %(type)s", type=type(value).__name__))
        elif not value.strip():
            err(name, gettext("must not be empty"))
        elif len(value) > limit:
            err(name, _too_long(value, limit))
    options = obj["options"]
    if not isinstance(options, list):
        err("options", gettext("must be a list, got %(type)s", type=type(options).__name__))
    elif len(options) < 2:
        err("options", gettext("must hold at least 2 options, got %(n)s", n=len(options)))
    elif len(options) > limits.max_options:
        err("options", gettext("%(n)s options: an item may have at most %(limit)s", n=f"{len(options):,}",
                                limit=limits.max_options))
    else:
        for i, option in enumerate(options):
            if not isinstance(option, str) or not option.strip():
                err(f"options[{i}]", gettext("must be a non-empty string"))
            elif len(option) > limits.max_option_chars:
                err(f"options[{i}]", _too_long(option, limits.max_option_chars))
    answer = obj["answer"]
    if not _is_int(answer):
        err("answer", gettext("must be an integer index, got %(type)s", type=type(answer).__name__))
    elif isinstance(options, list) and 2 <= len(options) <= limits.max_options and not 0 <= answer < len(options):
        err("answer", gettext("index %(answer)s is out of range for %(n)s options (0..%(last)s)", answer=answer,
                              n=len(options), last=len(options) - 1))
    elif not 0 <= answer < limits.max_options:
        err("answer", gettext("index %(answer)s is out of range: an item has at most %(n)s options (0..%(last)s)",
                              answer=f"{answer:,}", n=limits.max_options, last=limits.max_options - 1))
    graph = obj["clue_graph"]
    if not isinstance(graph, dict):
        err("clue_graph", gettext("must be an object, got %(type)s", type=type(graph).__name__))
    else:
        for name in CLUE_GRAPH_FIELDS:
            if name not in graph:
                err(f"clue_graph.{name}", gettext("missing field"))
            elif not isinstance(graph[name], str):
                err(f"clue_graph.{name}", gettext("must be a string, got %(type)s", type=type(graph[name]).__name__))
            elif len(graph[name]) > limits.max_clue_graph_chars:
                err(f"clue_graph.{name}", _too_long(graph[name], limits.max_clue_graph_chars))
        unknown = set(graph) - set(CLUE_GRAPH_FIELDS)
        if unknown:
            err("clue_graph", gettext("unknown fields: %(names)s", names=", ".join(sorted(unknown))))
    if errors:
        return None, errors
    extra = {k: v for k, v in obj.items() if k not in REQUIRED_FIELDS}
    return (
        ParsedRecord(
            line=line,
            external_id=external_id,
            external_id_is_int=id_is_int,
            context=obj["context"],
            question=obj["question"],
            options=list(options),
            answer_index=answer,
            evidence=graph["evidence"],
            reasoning=graph["multi_hop_reasoning"],
            extra=extra,
        ),
        [],
    )


def _too_long(text: str, limit: int) -> str:
    return gettext("%(n)s characters: at most %(limit)s", n=f"{len(text):,}", limit=f"{limit:,}")


def _bad_text(text: str) -> str | None:
    """Why a decoded string cannot be stored, or None."""
    if "\x00" in text:
        return gettext("holds a NUL character (\\u0000), which cannot be stored")
    if not text.isascii() and _SURROGATE.search(text):
        return gettext("holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not a character")
    return None


def _child(path: str, key) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def unstorable_value(obj, *, check_text: bool = True) -> tuple[str | None, str] | None:
    """The first place in a decoded JSON value that cannot be stored: (field path or None, why); else None.

    Walks iteratively (no recursion) through every key and value: NUL characters, lone
    surrogates and nesting deeper than MAX_NESTING are refused. Nesting is reported on
    the top-level field it starts from. `check_text=False` checks the nesting only (for
    JSON decoded from UTF-8 without a \\u escape, whose strings can hold neither).
    """
    if isinstance(obj, str):
        why = check_text and _bad_text(obj)
        return (None, why) if why else None
    stack: list[tuple[dict | list, str, str, int]] = [(obj, "", "", 0)] if isinstance(obj, (dict, list)) else []
    while stack:
        container, path, top, depth = stack.pop()
        if depth >= MAX_NESTING:
            return top or None, gettext("nested deeper than %(n)s levels", n=MAX_NESTING)
        for key, value in (container.items() if isinstance(container, dict) else enumerate(container)):
            if check_text and isinstance(key, str):
                why = _bad_text(key)
                if why:
                    return path or None, gettext("a key %(why)s", why=why)
            if isinstance(value, str):
                why = check_text and _bad_text(value)
                if why:
                    return _child(path, key), why
            elif isinstance(value, (dict, list)):
                child = _child(path, key)
                stack.append((value, child, top or child, depth + 1))
    return None


def unstorable_json(obj) -> str | None:
    """Why a decoded value cannot be stored as JSON, or None: what `unstorable_value` refuses, and a number that
    JSON has not (NaN, Infinity, -Infinity: PostgreSQL refuses them) anywhere in it, its place in the value named
    first (``notes[1]: NaN is not a JSON number``)."""
    found = unstorable_value(obj)
    if found is not None:
        return f"{found[0]}: {found[1]}" if found[0] else found[1]
    for path, value in _places(obj):
        if isinstance(value, float) and not math.isfinite(value):
            why = gettext("%(name)s is not a JSON number",
                          name="NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
            return f"{path}: {why}" if path else why
    return None


def _places(obj) -> Iterator[tuple[str, object]]:
    """(path, value) of a decoded value and of every value in it, in the order of its text (no recursion)."""
    stack: list[tuple[str, object]] = [("", obj)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((_child(path, key), child) for key, child in reversed(list(items)))


def _json_type(value) -> str:
    kinds = ((bool, "boolean"), ((int, float), "number"), (str, "string"), (list, "array"), (dict, "object"))
    return "null" if value is None else next((kind for t, kind in kinds if isinstance(value, t)), type(value).__name__)


def json_field_problems(values: dict, shapes: dict[str, type]) -> dict[str, list[str]]:
    """Why each field of `values` named in `shapes` (field -> list or dict) cannot be stored as it is: not of its
    shape (null included: such columns hold no null), or what `unstorable_json` refuses; field -> [message]."""
    problems = {}
    for name, shape in shapes.items():
        if name not in values:
            continue
        value = values[name]
        if isinstance(value, shape):
            why = unstorable_json(value)
        elif shape is list:
            why = gettext("must be a list, got %(type)s", type=_json_type(value))
        else:
            why = gettext("must be an object, got %(type)s", type=_json_type(value))
        if why:
            problems[name] = [why]
    return problems


def _refuse_constant(name: str):
    raise ValueError(gettext("%(name)s is not a JSON number", name=name))


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(gettext("the number %(text)s... is not finite", text=text[:20]))
    return number


def _bounded_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INTEGER_DIGITS:
        raise ValueError(gettext("an integer with %(n)s digits (at most %(limit)s)", n=f"{digits:,}", limit=MAX_INTEGER_DIGITS))
    return int(text)


class _Duplicated(dict):
    """A decoded object that held a key more than once (`duplicate`, its first such key; the last value kept)."""

    duplicate: str


def _object(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        obj = _Duplicated(obj)
        obj.duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
    return obj


def duplicate_key(obj) -> str | None:
    """The place of the first key that an object of a decoded value holds twice (``clue_graph.evidence``), else
    None: JSON keeps the last silently, which is never what a record meant."""
    return next((_child(path, value.duplicate) for path, value in _places(obj) if isinstance(value, _Duplicated)), None)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int,
                            object_pairs_hook=_object)


def decode_json(text: str):
    """Strict JSON: no NaN/Infinity, only finite numbers, no integers too long to be one; raises ValueError.

    Over-deep input raises ValueError too (not RecursionError).
    """
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError(gettext("nested deeper than %(n)s levels", n=MAX_NESTING)) from None


def _lines(stream: BinaryIO) -> Iterator[tuple[int, bytes, int]]:
    """(number, bytes, length) of each line; a line over MAX_LINE_BYTES is read in pieces and not kept whole
    (its bytes are cut, its length is the whole line's)."""
    number = 0
    while raw := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        length = len(raw)
        while length > MAX_LINE_BYTES and not raw.endswith(b"\n") and (raw := stream.readline(1 << 20)):
            length += len(raw)
        yield number, raw, length


def parse_jsonl(stream: BinaryIO, *, file: str, limits: Limits = DEFAULT_LIMITS) -> ParseResult:
    """Parse and validate a whole JSONL byte stream; collects every error, never raises on bad input.

    A file over `limits.max_file_bytes` is refused at the line that crosses the limit, and nothing after it is read.
    """
    records: list[ParsedRecord] = []
    errors: list[RecordError] = []
    seen: dict[str, int] = {}
    size = 0
    for number, raw, length in _lines(stream):
        size += length
        if size > limits.max_file_bytes:
            errors.append(RecordError(file, number, None, gettext(
                "the file is over the %(limit)s-byte limit of an import (split it, or raise ITEM_IMPORT_MAX_FILE_BYTES)",
                limit=f"{limits.max_file_bytes:,}")))
            return ParseResult(records=records, errors=errors, too_large=True)
        if length > MAX_LINE_BYTES:
            errors.append(RecordError(file, number, None, gettext(
                "line is %(n)s bytes, over the %(limit)s-byte limit for one record", n=f"{length:,}",
                limit=f"{MAX_LINE_BYTES:,}")))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(RecordError(file, number, None, gettext("invalid UTF-8 at byte %(n)s", n=exc.start)))
            continue
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        if not text.strip():
            continue
        try:
            obj = decode_json(text)
        except json.JSONDecodeError as exc:
            why = exc.msg.removesuffix(" at")  # "Invalid control character at", "Unterminated string starting at"
            errors.append(RecordError(file, number, None, gettext("invalid JSON: %(why)s at column %(n)s",
                                                                      why=why, n=exc.colno)))
            continue
        except ValueError as exc:
            errors.append(RecordError(file, number, None, gettext("invalid JSON: %(why)s", why=exc)))
            continue
        # A NUL or a lone surrogate can only come from a \u escape: a line without one needs no text check.
        unstorable = unstorable_value(obj, check_text="\\u" in text)
        if unstorable is not None:
            errors.append(RecordError(file, number, *unstorable))
            continue
        duplicate = duplicate_key(obj)
        if duplicate is not None:
            errors.append(RecordError(file, number, duplicate, gettext("duplicate key")))  # keys checked printable above
            continue
        record, record_errors = validate_record(obj, file=file, line=number, limits=limits)
        if record_errors:
            errors.extend(record_errors)
            continue
        assert record is not None
        if record.external_id in seen:
            errors.append(RecordError(file, number, "id", gettext(
                "duplicate id %(id)s (first seen on line %(line)s)", id=repr(record.external_id),
                line=seen[record.external_id])))
            continue
        seen[record.external_id] = number
        records.append(record)
    if not records and not errors:
        errors.append(RecordError(file, 1, None, gettext("no records: the file is empty or holds only blank lines")))
    return ParseResult(records=records, errors=errors)

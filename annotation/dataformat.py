"""Reading and validating the official DetectBench JSONL schema (no Django inside).

Every problem is reported with the file, the 1-based line number and the field, so
that a researcher can open the file at the right place.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

MAX_LINE_BYTES = 1_000_000  # a DetectBench record is ~2 kB; anything near 1 MB is not a record
REQUIRED_FIELDS = ("id", "context", "question", "options", "answer", "clue_graph")
CLUE_GRAPH_FIELDS = ("evidence", "multi_hop_reasoning")


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


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_record(obj, *, file: str, line: int) -> tuple[ParsedRecord | None, list[RecordError]]:
    """Check one decoded JSON value against the schema."""
    errors: list[RecordError] = []

    def err(field_name: str | None, message: str) -> None:
        errors.append(RecordError(file, line, field_name, message))

    if not isinstance(obj, dict):
        err(None, f"expected a JSON object, got {type(obj).__name__}")
        return None, errors
    for name in REQUIRED_FIELDS:
        if name not in obj:
            err(name, "missing field")
    if errors:
        return None, errors

    raw_id = obj["id"]
    if _is_int(raw_id):
        external_id, id_is_int = str(raw_id), True
    elif isinstance(raw_id, str) and raw_id.strip() and len(raw_id) <= 100:
        external_id, id_is_int = raw_id, False
    else:
        err("id", "must be an integer or a non-empty string of at most 100 characters")
        external_id, id_is_int = "", False
    for name in ("context", "question"):
        value = obj[name]
        if not isinstance(value, str):
            err(name, f"must be a string, got {type(value).__name__}")
        elif not value.strip():
            err(name, "must not be empty")
    options = obj["options"]
    if not isinstance(options, list):
        err("options", f"must be a list, got {type(options).__name__}")
    elif len(options) < 2:
        err("options", f"must hold at least 2 options, got {len(options)}")
    else:
        for i, option in enumerate(options):
            if not isinstance(option, str) or not option.strip():
                err(f"options[{i}]", "must be a non-empty string")
    answer = obj["answer"]
    if not _is_int(answer):
        err("answer", f"must be an integer index, got {type(answer).__name__}")
    elif isinstance(options, list) and len(options) >= 2 and not 0 <= answer < len(options):
        err("answer", f"index {answer} is out of range for {len(options)} options (0..{len(options) - 1})")
    graph = obj["clue_graph"]
    if not isinstance(graph, dict):
        err("clue_graph", f"must be an object, got {type(graph).__name__}")
    else:
        for name in CLUE_GRAPH_FIELDS:
            if name not in graph:
                err(f"clue_graph.{name}", "missing field")
            elif not isinstance(graph[name], str):
                err(f"clue_graph.{name}", f"must be a string, got {type(graph[name]).__name__}")
        unknown = set(graph) - set(CLUE_GRAPH_FIELDS)
        if unknown:
            err("clue_graph", f"unknown fields: {', '.join(sorted(unknown))}")
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


def _lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(stream, start=1):
        yield number, raw


def parse_jsonl(stream: BinaryIO, *, file: str) -> ParseResult:
    """Parse and validate a whole JSONL byte stream; collects every error, never raises on bad input."""
    records: list[ParsedRecord] = []
    errors: list[RecordError] = []
    seen: dict[str, int] = {}
    for number, raw in _lines(stream):
        if len(raw) > MAX_LINE_BYTES:
            errors.append(RecordError(file, number, None, f"line is {len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit for one record"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(RecordError(file, number, None, f"invalid UTF-8 at byte {exc.start}"))
            continue
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append(RecordError(file, number, None, f"invalid JSON: {exc.msg} at column {exc.colno}"))
            continue
        record, record_errors = validate_record(obj, file=file, line=number)
        if record_errors:
            errors.extend(record_errors)
            continue
        assert record is not None
        if record.external_id in seen:
            errors.append(RecordError(file, number, "id", f"duplicate id {record.external_id!r} (first seen on line {seen[record.external_id]})"))
            continue
        seen[record.external_id] = number
        records.append(record)
    return ParseResult(records=records, errors=errors)

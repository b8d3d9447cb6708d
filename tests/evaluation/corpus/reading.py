"""The answer corpus (answers.jsonl): raw model outputs with a person's reading, and the reader's agreement.

Each row names the options it was answered against: ``options`` (hand-written rows with invented
options), or ``item_id`` + ``order`` into the real DetectBench test split (the texts are read from the
shared data, never copied here). See README.md beside this file for how the rows were labelled.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.prompting.answer_reading import OK, PARSE_STATUSES, parse_answer

CORPUS = Path(__file__).resolve().parent / "answers.jsonl"


def load_rows(path: Path = CORPUS) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_items(data_dir: Path) -> dict[int, list[str]]:
    with (data_dir / "test.jsonl").open(encoding="utf-8") as handle:
        return {record["id"]: record["options"] for record in map(json.loads, handle)}


def shown_options(row: dict, items: dict[int, list[str]]) -> list[str]:
    if row.get("options"):
        return row["options"]
    options = items[row["item_id"]]
    return [options[i] for i in row.get("order") or range(len(options))]


@dataclass
class Agreement:
    """How the reader's readings compare with a person's, over a set of rows."""

    rows: int = 0
    agreed: int = 0
    false_answers: list[str] = field(default_factory=list)  # read as an option the person did not read
    echo_rows: int = 0
    echo_false_answers: list[str] = field(default_factory=list)
    confusion: Counter = field(default_factory=Counter)  # (person, reader) -> rows
    by_source: dict[str, Counter] = field(default_factory=dict)
    disagreements: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agreed / self.rows if self.rows else 0.0


def person(row: dict) -> str:
    """The person's reading as a comparable value: the shown label when ok, else the status."""
    return row["answer"] if row["reading"] == OK else row["reading"]


def measure(rows: list[dict], items: dict[int, list[str]]) -> Agreement:
    result = Agreement()
    for row in rows:
        assert row["reading"] in PARSE_STATUSES, row["id"]
        parsed = parse_answer(row["output"], shown_options(row, items), labels=row["labels"])
        read = parsed.label if parsed.status == OK else parsed.status
        wanted = person(row)
        echo = bool(row.get("echo"))
        result.rows += 1
        result.echo_rows += echo
        result.confusion[(row["reading"], parsed.status)] += 1
        source = result.by_source.setdefault(row["source"], Counter())
        source["rows"] += 1
        if read == wanted:
            result.agreed += 1
            source["agreed"] += 1
            continue
        result.disagreements.append((row["id"], wanted, read))
        if parsed.status == OK:
            result.false_answers.append(row["id"])
            source["false_answers"] += 1
            if echo:
                result.echo_false_answers.append(row["id"])
    return result

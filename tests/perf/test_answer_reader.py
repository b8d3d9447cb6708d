"""Benchmark: the answer reader against a person's reading of real model outputs (tests/evaluation/corpus).

Prints the agreement (exact: same label or same status), the agreement on "is there one answer, and
which" (ambiguous and missing counted as one), false answers (an option read where the person read
another one, or none) overall and on template echoes, the confusion between the person's status and
the reader's, the figures per source and per method, every row on which they differ, and the reading
speed. Asserts only what the corpus test asserts.

    make bench   # or: pytest tests/perf/test_answer_reader.py -m perf -s
"""
from __future__ import annotations

import time
from collections import Counter

import pytest

from evaluation.prompting.answer_reading import OK, PARSE_STATUSES, parse_answer
from tests.evaluation.corpus import reading

pytestmark = pytest.mark.perf


def test_answer_reader_agreement(detectbench_dir):
    rows = reading.load_rows()
    items = reading.load_items(detectbench_dir)
    result = reading.measure(rows, items)
    unread = {status for status in PARSE_STATUSES if status != OK}
    loose = sum(1 for _, wanted, read in result.disagreements if wanted in unread and read in unread)
    print(f"\nanswer reader vs a person, {result.rows} outputs ({reading.CORPUS.name}):")
    print(f"  exact agreement            {result.agreed}/{result.rows} = {result.rate:.1%}")
    print(f"  one-answer agreement       {result.agreed + loose}/{result.rows} = "
          f"{(result.agreed + loose) / result.rows:.1%}  (ambiguous and missing taken as one)")
    print(f"  false answers              {len(result.false_answers)}  {result.false_answers}")
    print(f"  template echoes            {result.echo_rows} rows, false answers {len(result.echo_false_answers)}")
    print("  confusion (person -> reader):")
    print("    " + " " * 10 + "".join(f"{status:>11}" for status in PARSE_STATUSES))
    for wanted in PARSE_STATUSES:
        print(f"    {wanted:<10}" + "".join(f"{result.confusion[(wanted, read)]:>11}" for read in PARSE_STATUSES))
    print("  per source:")
    for source, counts in sorted(result.by_source.items()):
        print(f"    {counts['agreed']:>4}/{counts['rows']:<4} {counts['agreed'] / counts['rows']:.1%}  "
              f"false answers {counts['false_answers']}  {source}")
    print("  per method (model rows):")
    by_method = Counter()
    for row in rows:
        if row.get("method"):
            by_method[(row["method"], "rows")] += 1
    wrong = {row_id for row_id, _, _ in result.disagreements}
    for row in rows:
        if row.get("method") and row["id"] not in wrong:
            by_method[(row["method"], "agreed")] += 1
    for method in sorted({m for m, _ in by_method}):
        print(f"    {by_method[(method, 'agreed')]:>4}/{by_method[(method, 'rows')]:<4} {method}")
    print("  readings by the person:", dict(Counter(row["reading"] for row in rows)))
    for row_id, wanted, read in result.disagreements:
        print(f"  differs: {row_id}: person {wanted!r}, reader {read!r}")

    started = time.perf_counter()
    repeats = 5
    for _ in range(repeats):
        for row in rows:
            parse_answer(row["output"], reading.shown_options(row, items), labels=row["labels"])
    per_output = (time.perf_counter() - started) / (repeats * len(rows))
    print(f"  reading speed              {per_output * 1e6:.0f} µs per output")
    assert result.false_answers == []
    assert result.rate >= 0.98

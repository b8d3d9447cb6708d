"""CSV that a spreadsheet opens as data, never as formulas (CSV / formula injection, issue 11).

A drop-in for `csv.writer` / `csv.DictWriter` in every CSV export. The escaping is defusedcsv's
(a cell starting with = + - @ | % gets a leading apostrophe, `|` is escaped; numbers, including
negative ones like -1.5, stay numbers), plus a cell starting with a tab, a carriage return or a
line feed, which spreadsheets strip before reading a formula. Parsing (`csv.reader`) is unchanged.

This is the one module of the apps that may import `csv` or `defusedcsv` (tests/project/test_csv_exports.py
checks it): every CSV the app writes goes through `writer` or `DictWriter` here.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from numbers import Number
from typing import Any

from defusedcsv import csv as defused_csv

LEADING_WHITESPACE = ("\t", "\r", "\n")


def _pre_escape(value: Any) -> Any:
    if value is None or isinstance(value, Number):
        return value
    text = str(value)  # also a lazy translation or any other object a cell is written as
    return "'" + text if text.startswith(LEADING_WHITESPACE) else text


class _SafeWriter:
    """Neutralises each cell, then writes with defusedcsv (which escapes the formula starters)."""

    def __init__(self, inner):
        self._inner = inner

    def writerow(self, row: Iterable[Any]):
        return self._inner.writerow([_pre_escape(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]):
        return self._inner.writerows([_pre_escape(cell) for cell in row] for row in rows)

    @property
    def dialect(self):
        return self._inner.dialect


def writer(csvfile, dialect: str | type[csv.Dialect] = "excel", **fmtparams) -> _SafeWriter:
    """Like `csv.writer`, with every cell neutralised; `writerow` returns what the file's write returned."""
    return _SafeWriter(defused_csv.writer(csvfile, dialect, **fmtparams))


class DictWriter(csv.DictWriter):
    """Like `csv.DictWriter`, with every cell neutralised (the header row too)."""

    def __init__(self, f, fieldnames, restval="", extrasaction="raise", dialect="excel", *args, **kwds):
        super().__init__(f, fieldnames, restval, extrasaction, dialect, *args, **kwds)
        self.writer = writer(f, dialect, *args, **kwds)


def safe_cell(value: Any) -> str:
    """The text a cell is written as (the same rule as `writer`), e.g. for a preview."""
    buffer = io.StringIO()
    writer(buffer).writerow([value])
    return next(csv.reader(io.StringIO(buffer.getvalue())), [""])[0]


__all__ = ["DictWriter", "safe_cell", "writer"]

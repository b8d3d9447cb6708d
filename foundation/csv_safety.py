r"""CSV that a spreadsheet opens as data, never as formulas (CSV / formula injection, issue 11).

A drop-in for `csv.writer` / `csv.DictWriter` in every CSV export. The escaping is defusedcsv's
(a cell starting with = + - @ | % gets a leading apostrophe and each `|` in it becomes `\|`; numbers,
including negative ones like -1.5, stay numbers), plus a leading apostrophe (and nothing else changed) on a
cell that starts with
- a tab, a carriage return or a line feed, which spreadsheets strip before reading a formula;
- any other whitespace (a space, a no-break or an ideographic space, a byte order mark, ...) or invisible
  character (zero-width, bidirectional marks, soft hyphen: `INVISIBLE`) followed by one of those characters or
  by a full-width ＝ ＋ － ＠, which an import that trims them reads as a formula;
- a full-width ＝ ＋ － ＠ itself;
- an apostrophe: so that every escaped cell can be told from a value that began with one, and
  `unescape_cell` gives back exactly the value written (a cell that starts with an apostrophe loses it, and
  when the rest starts with = + - @ % or `\|`, each `\|` in it is `|` again). Parsing (`csv.reader`) is unchanged.

This is the one module of the apps that may import `csv` or `defusedcsv` (tests/project/test_csv_exports.py
checks it): every CSV the app writes goes through `writer` or `DictWriter` here.
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from numbers import Number
from typing import Any

from defusedcsv import csv as defused_csv

LEADING_WHITESPACE = ("\t", "\r", "\n")
#: What defusedcsv escapes at the start of a cell (its own rule: then each `|` of the cell is written `\|`).
DEFUSED_STARTS = ("=", "+", "-", "@", "|", "%")
FULL_WIDTH_STARTS = ("\uff1d", "\uff0b", "\uff0d", "\uff20")  # ＝ ＋ － ＠
#: Invisible characters an import may drop before the first visible one: whitespace, the byte order mark, the
#: zero-width and word-joiner characters, the bidirectional marks and isolates, the soft hyphen, the Mongolian
#: vowel separator.
INVISIBLE = "\\s\\ufeff\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\u061c\\u00ad\\u180e"
_SPACES_THEN_FORMULA = re.compile(f"[{INVISIBLE}]+[=+\\-@|%\\uff1d\\uff0b\\uff0d\\uff20]")


def _pre_escape(value: Any) -> Any:
    if value is None or isinstance(value, Number):
        return value
    text = str(value)  # also a lazy translation or any other object a cell is written as
    if text.startswith(("'", *LEADING_WHITESPACE, *FULL_WIDTH_STARTS)) or _SPACES_THEN_FORMULA.match(text):
        return "'" + text
    return text


def unescape_cell(cell: str) -> str:
    """The value a cell of this writer was written from (as text): the inverse of the escaping."""
    if not cell.startswith("'"):
        return cell
    rest = cell[1:]
    # defusedcsv's escape, undone: its cells start with one of DEFUSED_STARTS, or with `\|` (a `|` escaped).
    return rest.replace("\\|", "|") if rest.startswith((*DEFUSED_STARTS, "\\|")) else rest


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


__all__ = ["DictWriter", "safe_cell", "unescape_cell", "writer"]

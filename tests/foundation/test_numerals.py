"""foundation.numerals: numbers typed with ASCII digits only."""
import pytest

from foundation.numerals import is_number, number_or_none


@pytest.mark.parametrize("text", ["²", "①", "٣", "１", "", " 1", "1 ", "-1", "+1", "1.0", "0x1", "1_000"])
def test_only_ascii_digits_are_a_number(text):
    assert not is_number(text) and number_or_none(text) is None


@pytest.mark.parametrize(("text", "most", "expected"), [("0", None, 0), ("42", 2, 42), ("123", 2, None),
                                                         ("000123", None, 123), ("9" * 30, None, int("9" * 30))])
def test_ascii_digits_read_as_their_number_within_the_digits_allowed(text, most, expected):
    assert number_or_none(text, most_digits=most) == expected
    assert is_number(text, most_digits=most) is (expected is not None)

"""Whole numbers as people type them into a field, a query string or a command: ASCII digits only.

``str.isdigit()`` is true for "²", "①" and other characters that ``int()`` cannot read (a 500 on every route that
checked an id so) and for digits of other scripts that it reads as numbers ("٣" is 3). Every check of a typed number
goes through here (tests/project/test_hostile_requests.py sends such digits to every route)."""
from __future__ import annotations


def is_number(text: str, *, most_digits: int | None = None) -> bool:
    """Whether ``text`` is a whole number written with ASCII digits (at most ``most_digits`` of them)."""
    return bool(text) and text.isascii() and text.isdigit() and (most_digits is None or len(text) <= most_digits)


def number_or_none(text: str, *, most_digits: int | None = None) -> int | None:
    """The whole number ``text`` writes in ASCII digits, else None."""
    return int(text) if is_number(text, most_digits=most_digits) else None

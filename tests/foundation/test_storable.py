"""foundation.storable: whatever text or JSON comes in, PostgreSQL keeps what it returns (text and jsonb), and text
that needs nothing is returned untouched."""
import json
import math

import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from foundation.fast_json import dumps_text
from foundation.storable import storable, storable_text

pytestmark = pytest.mark.django_db

# Every code point, surrogates and NUL included, with the troublesome ones made common.
_TEXT = st.text(alphabet=st.one_of(st.characters(codec=None), st.sampled_from("\x00\ud800\udfff\udc80a")), max_size=40)
_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(), _TEXT),
                     lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
                     max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_TEXT)
def test_postgresql_keeps_every_storable_text(text):
    kept = storable_text(text)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::text", [kept])
        assert cursor.fetchone()[0] == kept
    assert len(kept) == len(text)  # one character for one: positions in the text stay where they were
    assert all(k == t or (k == "\ufffd" and (t == "\x00" or 0xD800 <= ord(t) <= 0xDFFF)) for k, t in zip(kept, text))
    if not any(c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert kept is text


@settings(max_examples=150, deadline=None)
@given(_JSON)
def test_postgresql_keeps_every_storable_json(value):
    kept = storable(value)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb", [dumps_text(kept)])
        assert cursor.fetchone()[0] is not None or kept is None


def test_non_finite_numbers_are_kept_as_their_names_and_deep_nesting_is_cut():
    assert storable([math.nan, math.inf, -math.inf, 1.5]) == ["NaN", "Infinity", "-Infinity", 1.5]
    deep = []
    for _ in range(20):
        deep = [deep]
    assert json.dumps(storable(deep)).count("[") == 10

"""foundation.fast_json: orjson where it can, the standard library for the rest; the same values either way."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foundation import fast_json

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_dumps_is_json_the_standard_library_reads_back_as_the_same_value(value):
    encoded = fast_json.dumps(value)
    assert isinstance(encoded, bytes)
    assert json.loads(encoded) == value
    assert fast_json.loads(encoded) == value
    assert fast_json.dumps_text(value) == encoded.decode()


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_loads_reads_what_the_standard_library_writes(value):
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=2)):
        assert fast_json.loads(text) == value
        assert fast_json.loads(text.encode()) == value
        assert fast_json.loads(memoryview(text.encode())) == value


def test_strings_are_written_unescaped_and_compact_as_the_request_bodies_were():
    body = {"model": "m", "messages": [{"role": "user", "content": "谁是凶手? \"quoted\" \\ \n\t \u2028"}],
            "temperature": 0.7, "max_tokens": 512}
    assert fast_json.dumps(body) == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize("value", [{1: "int key"}, {"big": 2**70}, {True: 1}])
def test_what_orjson_refuses_to_encode_the_standard_library_encodes(value):
    assert fast_json.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_what_orjson_refuses_to_decode_the_standard_library_decides():
    assert math.isnan(fast_json.loads(b'{"x": NaN}')["x"])
    assert fast_json.loads(b'[Infinity]') == [math.inf]
    assert fast_json.loads('{"a": 1}'.encode("utf-16")) == {"a": 1}  # not UTF-8: the standard library detects it
    for bad in (b"", b"{", b'{"a": }', b"\xff\xfe\xfa", b"not json"):
        with pytest.raises(ValueError):
            fast_json.loads(bad)


def test_an_object_neither_encodes_is_the_standard_library_s_type_error():
    with pytest.raises(TypeError, match="not JSON serializable"):
        fast_json.dumps({"x": object()})


def test_where_orjson_and_the_standard_library_differ_is_as_documented():
    assert fast_json.dumps([math.nan, math.inf]) == b"[null,null]"
    assert fast_json.loads(b"[123456789012345678901234567890]") == [1.2345678901234568e29]

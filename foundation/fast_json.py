"""JSON on the hot paths of a model run (request bodies, responses, the rows' JSON columns) through orjson, with
the standard library as the fallback (no Django).

orjson encodes a chat request about 20x faster than ``json.dumps`` and decodes a response several times faster;
on a large run these were a fifth of the event loop's CPU. Every value the standard library accepts is still
accepted: what orjson refuses (dict keys that are not strings, integers beyond 64 bits, other types; NaN or
Infinity in a body to decode; text that is not UTF-8) goes to the standard library, which encodes it or raises
its own error. The encoded text is compact and not ASCII-escaped, as ``json.dumps(..., ensure_ascii=False,
separators=(",", ":"))`` writes it; a float may be spelled differently (``0.00001`` for ``1e-05``), the same
number.

Where the two differ (none of it in a chat request, a chat response or a row today): orjson writes NaN and the
infinities as ``null`` (the standard library writes ``NaN``, which is not JSON and which PostgreSQL refuses);
it writes dates, times, UUIDs and dataclasses (the standard library raises ``TypeError``); it reads an integer
beyond 64 bits as a float. Nothing that hashes or compares JSON text uses this module (the response cache's key
is the standard library's, ``evaluation.model_calls.engine.cache_key``).
"""
from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def dumps_text(value: Any) -> str:
    """``dumps`` as text."""
    return dumps(value).decode()


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """The value of a JSON document; the standard library's ``ValueError`` (``json.JSONDecodeError``) if it is not one."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)

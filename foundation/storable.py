"""Text and JSON as PostgreSQL can keep them (no Django).

PostgreSQL's text and jsonb refuse a NUL character and a lone surrogate (Python's JSON parser reads both from
``\\u0000`` and ``\\ud800``; a model's reply, an endpoint's error body or a participant's form can carry them), and
jsonb refuses NaN and the infinities. Whatever comes from outside and is kept for the record passes through here:
those characters become U+FFFD (the replacement character, visibly not the original), a non-finite number its
name. Kept text is never otherwise changed.
"""
from __future__ import annotations

import math
import re
from typing import Any

_UNSTORABLE_CHARS = re.compile("[\x00\ud800-\udfff]")
MAX_KEPT_DEPTH = 10


def storable_text(text: str) -> str:
    """`text` with each NUL and lone surrogate replaced by U+FFFD (the same object when it has none)."""
    return _UNSTORABLE_CHARS.sub("\ufffd", text) if _UNSTORABLE_CHARS.search(text) else text


def storable(value: Any, depth: int = 0) -> Any:
    """`value` (JSON-like: what a form or a model sent) as PostgreSQL's jsonb can keep it, for the record.

    Strings as `storable_text`; non-finite numbers kept as their names ("NaN", "Infinity", "-Infinity"); anything
    nested deeper than MAX_KEPT_DEPTH as "..."; keys as strings; any other object as its text.
    """
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value, "NaN")
    if depth >= MAX_KEPT_DEPTH:
        return "..."
    if isinstance(value, dict):
        return {storable(str(key)): storable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(item, depth + 1) for item in value]
    return storable(str(value))

"""The file name a download is saved under: one rule for every file the app hands out.

A name is built from the app's own words and from values researchers and imports choose (a split, a queue's or a
judge configuration's name, a study's slug), so it may hold quotes, semicolons, line breaks, angle brackets or
other scripts. Set by hand, a quote ended the header's file name early (a name ending in ``.html`` saved a page
that ran script), a line break was a 500, and a Chinese split garbled the whole header. Here each run of
characters other than letters, digits (any script), ``.``, ``_`` and ``-`` becomes one ``-``, and Django writes
the header (``content_disposition_header``: a quoted ASCII name, else RFC 6266's ``filename*`` in UTF-8).
"""
from __future__ import annotations

import re

from django.http import HttpResponseBase
from django.utils.http import content_disposition_header

_NOT_IN_A_NAME = re.compile(r"[^\w.-]+")
MAX_STEM = 120


def download_name(stem: str, extension: str) -> str:
    """`stem.extension` with only letters, digits, ``.``, ``_`` and ``-`` in the stem (never empty, never hidden,
    at most MAX_STEM characters); `extension` is the app's own (csv, json, svg, ...)."""
    cleaned = _NOT_IN_A_NAME.sub("-", stem).strip(".-")[:MAX_STEM].strip(".-") or "download"
    return f"{cleaned}.{extension}"


def attach(response: HttpResponseBase, stem: str, extension: str) -> HttpResponseBase:
    """Mark `response` as a download saved as `download_name(stem, extension)`; returns it."""
    response["Content-Disposition"] = content_disposition_header(True, download_name(stem, extension))
    return response

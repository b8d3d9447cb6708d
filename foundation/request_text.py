"""Text no view can use: a NUL character or a lone surrogate anywhere in a request is a 400, never a 500.

PostgreSQL cannot store or even compare a NUL (``?status=%00`` reached a query and answered 500), and a
lone UTF-16 surrogate (``%ED%A0%80`` in a query string or a form, ``"\\ud800"`` in a JSON body) is not a
character at all. `RequestTextMiddleware` looks at everything a view reads as text before any view runs:

* the path;
* every query parameter, name and value, both as sent (the percent-decoded bytes, where a surrogate is
  still visible before Django replaces it with U+FFFD) and as decoded;
* every form field of a urlencoded or multipart body, and the names of uploaded files;
* every key and string of a JSON body (``application/json`` or ``...+json``).

The answer says which parameter or field holds what, as JSON under ``/api/`` (``{"code": "invalid_text",
"detail": ..., "field": ...}``) and as the site's error page elsewhere. A JSON body that does not parse is
left to the view (which says so itself).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext, gettext_noop

from foundation.error_mapping import error_page
from foundation.errors import Invalid

#: A UTF-16 surrogate code point encoded as UTF-8 bytes (ED A0..BF xx): what `%ED%A0%80` decodes to.
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
MAX_JSON_DEPTH = 200  # walked without recursion; deeper bodies are the view's to refuse
#: Where a problem is (said in the reader's language: "The %(where)s ...").
QUERY_PARAMETER, FORM_FIELD = gettext_noop("query parameter"), gettext_noop("form field")


class UnusableText(Invalid):
    code = "invalid_text"


def text_problem(value: str) -> str | None:
    """Why a decoded string cannot be used, or None."""
    if "\x00" in value:
        return gettext("holds a NUL character (\\u0000)")
    if not value.isascii() and _SURROGATE.search(value):
        return gettext("holds a lone surrogate (\\ud800-\\udfff), which is not a character")
    return None


def bytes_problem(raw: bytes) -> str | None:
    """Why percent-decoded bytes cannot be used as text, or None."""
    if b"\x00" in raw:
        return gettext("holds a NUL character (%00)")
    if _SURROGATE_BYTES.search(raw):
        return gettext("holds a lone surrogate (bytes ED A0..BF), which is not a character")
    return None


def _field(name: str) -> str:
    """A parameter's name as the answer names it: a NUL or a surrogate in it written as an escape."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", name.replace("\x00", "\\u0000"))[:60]


def _shown(name: str) -> str:
    return f"'{_field(name)}'"


def _urlencoded_problem(raw: bytes, where: str) -> UnusableText | None:
    """The first unusable name or value of `a=1&b=2` as sent (before Django decodes it)."""
    for part in re.split(rb"[&;]", raw):
        if not part:
            continue
        name, _, value = part.partition(b"=")
        name_bytes = unquote_to_bytes(name.replace(b"+", b" "))
        name_text = name_bytes.decode("utf-8", "replace")
        why = bytes_problem(name_bytes)
        if why:
            return UnusableText(gettext("The name of a %(where)s %(why)s.") % {"where": gettext(where), "why": why},
                                field=_field(name_text))
        why = bytes_problem(unquote_to_bytes(value.replace(b"+", b" ")))
        if why:
            return UnusableText(gettext("The %(where)s %(name)s %(why)s.") % {
                "where": gettext(where), "name": _shown(name_text), "why": why}, field=_field(name_text))
    return None


def _urlencoded_clean(raw: bytes) -> bool:
    """Whether no name or value of `a=1&b=2` can hold a NUL or a surrogate, looking at the whole at once: its parts are
    substrings of the decoded whole ('&', ';' and '=' are single ASCII bytes, kept by the decoding), so a whole
    without either has none in any part, and Django's decoding (UTF-8, errors replaced) makes no surrogate of its
    own. The common case costs one decoding; only a body that fails it is looked at part by part, to say where."""
    decoded = unquote_to_bytes(raw.replace(b"+", b" "))
    return b"\x00" not in decoded and not (not decoded.isascii() and _SURROGATE_BYTES.search(decoded))


def _pairs_problem(pairs: Iterable[tuple[str, list]], where: str) -> UnusableText | None:
    for name, values in pairs:
        why = text_problem(name)
        if why:
            return UnusableText(gettext("The name of a %(where)s %(why)s.") % {"where": gettext(where), "why": why},
                                field=_field(name))
        for value in values:
            text = value if isinstance(value, str) else getattr(value, "name", "") or ""
            why = text_problem(text)
            if why:
                what = where if isinstance(value, str) else gettext_noop("uploaded file's name in field")
                return UnusableText(gettext("The %(where)s %(name)s %(why)s.") % {
                    "where": gettext(what), "name": _shown(name), "why": why}, field=_field(name))
    return None


def _json_strings(value) -> Iterator[tuple[str, str]]:
    """(path, text) of every key and string of a decoded JSON value, without recursion."""
    stack = [("", value, 0)]
    while stack:
        path, node, depth = stack.pop()
        if isinstance(node, str):
            yield path or "body", node
        elif depth < MAX_JSON_DEPTH and isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{path}.{key}" if path else str(key)
                yield child_path, key
                stack.append((child_path, child, depth + 1))
        elif depth < MAX_JSON_DEPTH and isinstance(node, list):
            stack.extend((f"{path}[{i}]", child, depth + 1) for i, child in enumerate(node))


def _json_problem(body: bytes) -> UnusableText | None:
    try:
        decoded = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return None  # not JSON: the view refuses it in its own words
    for path, text in _json_strings(decoded):
        why = text_problem(text)
        if why:
            return UnusableText(gettext("The JSON field %(name)s %(why)s.") % {"name": _shown(path), "why": why},
                                field=_field(path))
    return None


def request_problem(request: HttpRequest) -> UnusableText | None:
    """The first thing in the request no view can use as text, or None."""
    why = text_problem(request.path)
    if why:
        return UnusableText(gettext("The address %(why)s.") % {"why": why})
    query = request.META.get("QUERY_STRING", "").encode("latin-1", "replace")
    if query and not _urlencoded_clean(query):
        problem = (_urlencoded_problem(query, QUERY_PARAMETER)
                   or _pairs_problem(request.GET.lists(), QUERY_PARAMETER))
        if problem:
            return problem
    if request.method in ("GET", "HEAD", "OPTIONS", "TRACE"):
        return None
    content_type = (request.content_type or "").lower()
    if content_type == "application/x-www-form-urlencoded":
        body = request.body
        if _urlencoded_clean(body):
            return None  # its fields are its parts (no files): nothing to look at part by part
        problem = _urlencoded_problem(body, FORM_FIELD)
        if problem:
            return problem
    if content_type in FORM_TYPES and request.method == "POST":
        return (_pairs_problem(request.POST.lists(), FORM_FIELD)
                or _pairs_problem(request.FILES.lists(), FORM_FIELD))
    if content_type == "application/json" or content_type.endswith("+json"):
        return _json_problem(request.body)
    return None


class RequestTextMiddleware:
    """A NUL or a lone surrogate in the path, a query parameter, a form field or a JSON string: 400, saying where."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = request_problem(request)
        if problem is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse(problem.as_dict(), status=problem.http_status)
        return error_page(request, problem)


__all__ = ["RequestTextMiddleware", "UnusableText", "bytes_problem", "request_problem", "text_problem"]

"""Text no view can use: a NUL character or a lone surrogate anywhere in a request is a 400, never a 500.

PostgreSQL cannot store or even compare a NUL (``?status=%00`` reached a query and answered 500), and a
lone UTF-16 surrogate (``%ED%A0%80`` in a query string or a form, ``"\\ud800"`` in a JSON body) is not a
character at all. `RequestTextMiddleware` looks at everything a view reads as text before any view runs:

* every header (RFC 9110 5.5 lets a server refuse a NUL in one; gunicorn does, `manage.py runserver` does not, and
  the User-Agent and Authorization headers reach queries);
* every cookie: one holding a NUL or a surrogate (a quoted ``"a\\000b"``, which Python's cookie parser turns into a
  NUL) is dropped, as if the browser had not sent it, and the request goes on (the session cookie too: the request
  gets a new empty session). A browser's stale cookie is no fault of the person using it, and every cookie the app
  reads is one it can do without (a session, a participant's attempt, a CSRF token) and sets again when it needs it;
* the charset: Django decodes the query and the form, and DRF a JSON body, with the charset the Content-Type names.
  Any other than UTF-8 (or ASCII, a part of it) is refused (415): JSON is UTF-8 (RFC 8259 8.1), our pages' forms
  are sent in UTF-8, and the others hide a NUL from a look at the bytes (UTF-16, UTF-7's ``+AAA-``) or fail in
  Django's own decoding (``undefined``, non-text codecs such as ``hex_codec``);
* the path;
* every query parameter, name and value, both as sent (the percent-decoded bytes, where a surrogate is
  still visible before Django replaces it with U+FFFD) and as decoded;
* every form field of a urlencoded or multipart body (whatever the method: DRF parses PUT and PATCH forms), and the
  names of uploaded files;
* every key and string of any other body that is JSON, read as ``json.loads`` reads bytes: UTF-8 as DRF reads it,
  and UTF-16 or UTF-32 as a view's own ``json.loads(request.body)`` does (the Prolific webhook, whatever the
  Content-Type). JSON nested more than `MAX_JSON_DEPTH` levels is refused (400): Python's decoder raises
  RecursionError on deep JSON, at a depth that depends on how deep the stack of its caller already is.

The answer says which parameter or field holds what, as JSON under ``/api/`` (``{"code": "invalid_text",
"detail": ..., "field": ...}``) and as the site's error page elsewhere. A JSON body that does not parse is
left to the view (which says so itself).
"""
from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.files.uploadhandler import load_handler
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.http.multipartparser import MultiPartParser, MultiPartParserError
from django.utils.datastructures import MultiValueDict
from django.utils.translation import gettext, gettext_noop

from foundation.error_mapping import MAX_JSON_DEPTH, NestedTooDeeply, error_page, nested_too_deeply
from foundation.errors import Invalid

#: A UTF-16 surrogate code point encoded as UTF-8 bytes (ED A0..BF xx): what `%ED%A0%80` decodes to.
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
#: The charsets (as `codecs` names them) a request may be sent in: UTF-8 and ASCII, a part of it.
CHARSETS = frozenset({"utf-8", "ascii"})
#: Where a problem is (said in the reader's language: "The %(where)s ...").
QUERY_PARAMETER, FORM_FIELD, HEADER = gettext_noop("query parameter"), gettext_noop("form field"), gettext_noop("header")


class UnusableText(Invalid):
    code = "invalid_text"


class UnsupportedCharset(Invalid):
    code = "unsupported_charset"
    http_status = 415


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
    """(path, text) of every key and string of a decoded JSON value, without recursion; raises NestedTooDeeply at a
    list or an object nested more than MAX_JSON_DEPTH levels deep."""
    stack = [("", value, 0)]  # the number of lists and objects around each node
    while stack:
        path, node, depth = stack.pop()
        if isinstance(node, str):
            yield path or "body", node
        elif isinstance(node, dict | list) and depth >= MAX_JSON_DEPTH:
            raise nested_too_deeply()
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{path}.{key}" if path else str(key)
                yield child_path, key
                stack.append((child_path, child, depth + 1))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", child, depth + 1) for i, child in enumerate(node))


def _json_problem(body: bytes) -> Invalid | None:
    """What no view can use in a JSON body, read as `json.loads` reads bytes (UTF-8, or UTF-16/32 when the bytes say
    so); None when the body is no JSON."""
    try:
        decoded = json.loads(body)
    except RecursionError:
        return nested_too_deeply()
    except ValueError:
        return None  # not JSON: the view refuses it in its own words
    try:
        for path, text in _json_strings(decoded):
            why = text_problem(text)
            if why:
                return UnusableText(gettext("The JSON field %(name)s %(why)s.") % {"name": _shown(path), "why": why},
                                    field=_field(path))
    except NestedTooDeeply as too_deep:
        return too_deep
    return None


def _usable(values: list[str]) -> bool:
    """Whether none of these strings holds a NUL or a lone surrogate: one look over them all (every request's
    headers and cookies pass here; the one at fault is looked for only when there is one)."""
    joined = "".join(values)
    return "\x00" not in joined and (joined.isascii() or not _SURROGATE.search(joined))


def _header_problem(request: HttpRequest) -> UnusableText | None:
    headers = [(key, value) for key, value in request.META.items()
               if (key.startswith("HTTP_") or key in ("CONTENT_TYPE", "CONTENT_LENGTH")) and isinstance(value, str)]
    if _usable([value for _, value in headers]):
        return None
    for key, value in headers:
        why = text_problem(value)
        if why:
            name = key.removeprefix("HTTP_").replace("_", "-").title()
            return UnusableText(gettext("The %(where)s %(name)s %(why)s.") % {
                "where": gettext(HEADER), "name": _shown(name), "why": why}, field=name)
    return None


def _charset_problem(request: HttpRequest) -> UnsupportedCharset | None:
    """A Content-Type charset other than UTF-8. Django keeps one that `codecs` knows as `request.encoding` (and
    ignores any other): the query and the form are decoded with it, and DRF decodes a JSON body with it."""
    if request.encoding is None:
        return None
    try:
        if codecs.lookup(request.encoding).name in CHARSETS:
            return None
    except LookupError:
        pass
    return UnsupportedCharset(gettext("The charset %(charset)s is not supported: send UTF-8.") % {
        "charset": _shown(request.encoding)})


def drop_unusable_cookies(request: HttpRequest) -> list[str]:
    """Drop every cookie whose name or value holds a NUL or a lone surrogate, as if it had not been sent (a session
    cookie's session too: the request gets a new, empty one); the names dropped."""
    cookies = request.COOKIES
    if _usable([*cookies, *cookies.values()]):
        return []
    dropped = [name for name, value in cookies.items() if text_problem(name) or text_problem(value)]
    for name in dropped:
        del request.COOKIES[name]
    session = getattr(request, "session", None)
    if settings.SESSION_COOKIE_NAME in dropped and session is not None:
        request.session = type(session)()  # SessionMiddleware's store, keyed on the cookie: not read yet
    return dropped


def _form_fields(request: HttpRequest, content_type: str) -> tuple[QueryDict, MultiValueDict] | None:
    """The fields and files of a form body as the view reads them: Django's request.POST and FILES for a POST, DRF's
    parsing (Django's parsers, the same encoding) for a PUT or a PATCH; None when it is no form."""
    if request.method == "POST":
        return request.POST, request.FILES
    if content_type == "application/x-www-form-urlencoded":
        return QueryDict(request.body, encoding=request.encoding), MultiValueDict()
    handlers = [load_handler(handler, request) for handler in settings.FILE_UPLOAD_HANDLERS]
    try:
        return MultiPartParser(request.META, io.BytesIO(request.body), handlers, request.encoding).parse()
    except MultiPartParserError:
        return None  # DRF refuses it itself (a parse error)


def request_problem(request: HttpRequest) -> Invalid | None:
    """The first thing in the request no view can use as text, or None."""
    problem = _header_problem(request) or _charset_problem(request)
    if problem:
        return problem
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
    if content_type in FORM_TYPES:
        fields = _form_fields(request, content_type)
        if fields is None:
            return None
        return _pairs_problem(fields[0].lists(), FORM_FIELD) or _pairs_problem(fields[1].lists(), FORM_FIELD)
    return _json_problem(request.body)  # any other body: a view may read it as JSON whatever its Content-Type


class RequestTextMiddleware:
    """A NUL or a lone surrogate in a header, the path, a query parameter, a form field or a JSON string: 400, saying
    where (in a cookie: the cookie is dropped); a charset other than UTF-8: 415; JSON nested too deeply: 400."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        drop_unusable_cookies(request)  # first: the refusal's page reads the session
        problem = request_problem(request)
        if problem is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse(problem.as_dict(), status=problem.http_status)
        return error_page(request, problem)


__all__ = ["MAX_JSON_DEPTH", "RequestTextMiddleware", "UnsupportedCharset", "UnusableText", "bytes_problem",
           "drop_unusable_cookies", "request_problem", "text_problem"]

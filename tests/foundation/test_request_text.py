"""The quick look at a whole urlencoded body (one decoding) never passes a body in which the look part by part finds
a NUL or a surrogate: a property checked over generated bodies made of the pieces that matter (escapes of NUL,
surrogate and other UTF-8 bytes, '+', the separators). No reader of a body the check lets through finds a NUL or a
surrogate in it, whatever its charset, Content-Type or depth; a NUL in a header is refused, in a cookie dropped."""
from __future__ import annotations

import contextlib
import encodings.aliases
import io
import json
from urllib.parse import parse_qsl

from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import BadRequest
from django.test import RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ParseError
from rest_framework.parsers import FormParser, JSONParser

from foundation.request_text import (
    MAX_JSON_DEPTH,
    _urlencoded_clean,
    _urlencoded_problem,
    drop_unusable_cookies,
    request_problem,
    text_problem,
)

PIECES = ["a", "Z", "9", "+", "=", "&", ";", "%00", "%ED%A0%80", "%ED%BF%BF", "%ED", "%A0", "%80", "%E4%BD%A0",
          "%FF", "%25", "%26", "%3D", "%", "%2", "\u00ed", "\u00e9"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_a_body_the_quick_look_passes_has_no_unusable_part(pieces):
    raw = "".join(pieces).encode("latin-1")
    if _urlencoded_clean(raw):
        assert _urlencoded_problem(raw, "form field") is None
        # and what Django decodes from it (UTF-8, errors replaced) holds nothing unusable either
        for name, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True, encoding="utf-8",
                                     errors="replace"):
            assert text_problem(name) is None and text_problem(value) is None
    if _urlencoded_problem(raw, "form field") is not None:
        assert not _urlencoded_clean(raw)


def test_the_quick_look_sees_a_nul_and_a_surrogate_anywhere():
    assert _urlencoded_clean(b"position=1&highlights=%5B%7B%22start%22%3A0%7D%5D&chosen_option=2")
    assert not _urlencoded_clean(b"a=1&b=x%00y")
    assert not _urlencoded_clean(b"a%ED%A0%80=1")
    assert not _urlencoded_clean(b"a=1;b=%ed%bf%bf")
    assert _urlencoded_clean(b"a=%E4%BD%A0%E5%A5%BD&b=%FF")  # Chinese, and a byte Django replaces


# ---- what a reader decodes: the charset, json.loads' own detection, DRF's parsers, the depth

#: Every codec Python names, and those that turn harmless-looking bytes into a NUL (UTF-7 `+AAA-`, `\x00` escapes).
CODECS = sorted({*encodings.aliases.aliases.values(), "utf_7", "unicode_escape", "raw_unicode_escape", "idna",
                 "punycode", "undefined", "utf_8_sig", "utf-8", "UTF8", "us-ascii"})
UNUSABLE = ("\x00", "\ud800", "\udfff")


def _holds_unusable(value) -> bool:
    if isinstance(value, str):
        return any(c in value for c in UNUSABLE)
    if isinstance(value, dict):
        return any(_holds_unusable(k) or _holds_unusable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_unusable(v) for v in value)
    return False


def _post(body: bytes, content_type: str, method: str = "POST"):
    return RequestFactory().generic(method, "/api/x/", body, content_type=content_type)  # the bytes as they are


def test_a_form_the_check_lets_through_is_decoded_by_django_without_a_nul_whatever_its_charset():
    """Django decodes the query, and DRF a PUT or PATCH form, with the Content-Type's charset: UTF-7 makes `+AAA-` a
    NUL, unicode_escape `\\x00`, and `hex_codec` or `undefined` raise. Only UTF-8 and ASCII are let through (Django
    refuses a POST form in any charset but "utf-8" itself, BadRequest: a 400)."""
    body = b"a=+AAA-&b=\\x00&c=%ED%9F%BF&d=%C3%A9"
    let_through = []
    for name in CODECS:
        for method in ("POST", "PATCH"):
            request = _post(body, f"application/x-www-form-urlencoded; charset={name}", method)
            problem = request_problem(request)
            if problem is not None:
                assert problem.http_status == 415 and problem.code == "unsupported_charset", name
                continue
            let_through.append(name)
            with contextlib.suppress(BadRequest):
                assert not any(_holds_unusable(v) for v in request.POST.lists()), name
            drf = FormParser().parse(io.BytesIO(body), parser_context={"encoding": request.encoding or "utf-8"})
            assert not any(_holds_unusable(v) for v in drf.lists()), name
    assert {"utf-8", "UTF8", "us-ascii"} <= set(let_through) and "utf_7" not in let_through


@settings(max_examples=600, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(["a", "\u00e9", "\u591a", "\U0001f600", *UNUSABLE]), max_size=5),
       encoding=st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-7", "unicode_escape"]),
       ensure_ascii=st.booleans(), content_type=st.sampled_from(["application/json", "text/plain", ""]),
       charset=st.sampled_from(["", "utf-8", "as encoded"]))
def test_no_reader_finds_a_nul_or_a_surrogate_in_a_json_body_the_check_lets_through(
        text, encoding, ensure_ascii, content_type, charset):
    """Readers of a body: DRF's JSONParser (application/json, decoded with the charset) and a view's own
    json.loads(request.body) (the Prolific webhook: UTF-8, UTF-16 or UTF-32 as the bytes say, any Content-Type)."""
    body = json.dumps({"k": text, text: [text]}, ensure_ascii=ensure_ascii).encode(encoding, "surrogatepass")
    if content_type and charset:
        content_type += f"; charset={encoding if charset == 'as encoded' else charset}"
    request = _post(body, content_type)
    if request_problem(request) is not None:
        return
    seen = []
    if request.content_type == "application/json":
        with contextlib.suppress(ParseError):
            seen.append(JSONParser().parse(io.BytesIO(body), "application/json",
                                           {"encoding": request.encoding or "utf-8"}))
    with contextlib.suppress(ValueError):
        seen.append(json.loads(body))
    assert not any(_holds_unusable(value) for value in seen), (body, content_type)


def _nested(depth: int, shape: str) -> str:
    opening = "".join('{"a":' if shape[i % len(shape)] == "{" else "[" for i in range(depth))
    return opening + "1" + "".join("}" if c == "{" else "]" for c in reversed(opening.replace('"a":', "")))


@settings(max_examples=300, deadline=None)
@given(depth=st.integers(1, 3000), shape=st.sampled_from(["[", "{", "[{", "{[["]),
       content_type=st.sampled_from(["application/json", "text/plain"]))
def test_json_is_refused_exactly_when_nested_more_than_the_limit(depth, shape, content_type):
    """Python's decoder raises RecursionError at a depth that depends on its caller's stack; the check refuses
    every body deeper than MAX_JSON_DEPTH and none within it, whatever reads it later."""
    problem = request_problem(_post(_nested(depth, shape).encode(), content_type))
    if depth > MAX_JSON_DEPTH:
        assert problem is not None and problem.code == "nested_too_deeply" and problem.http_status == 400
    else:
        assert problem is None


def test_a_nul_in_a_header_is_refused_naming_it_and_a_cookie_holding_one_is_dropped():
    problem = request_problem(RequestFactory().get("/x/", HTTP_USER_AGENT="Mozilla\x00"))
    assert problem.field == "User-Agent" and "'User-Agent'" in problem.message and problem.http_status == 400
    assert request_problem(RequestFactory().get("/x/", HTTP_USER_AGENT="Mozilla/5.0 (\u00e9)")) is None
    request = RequestFactory().get("/x/", HTTP_COOKIE='sessionid="abcdefgh\\000ijkl"; keep=1; dbstudy_s="\\000x"')
    request.session = SessionStore(request.COOKIES["sessionid"])
    assert drop_unusable_cookies(request) == ["sessionid", "dbstudy_s"]
    assert request.COOKIES == {"keep": "1"} and request.session.session_key is None
    assert request_problem(request) is None  # the cookie is dropped, not refused


def test_a_put_or_patch_form_is_read_as_drf_parses_it():
    for method in ("PUT", "PATCH", "POST"):
        body = encode_multipart(BOUNDARY, {"fine": "x", "note": "a\x00b"})
        problem = request_problem(_post(body, MULTIPART_CONTENT, method))
        assert problem is not None and problem.field == "note", method
        base64_part = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"note\"\r\n"
                       f"Content-Transfer-Encoding: base64\r\n\r\nYQBi\r\n--{BOUNDARY}--\r\n").encode()  # "a\0b"
        problem = request_problem(_post(base64_part, MULTIPART_CONTENT, method))
        assert problem is not None and problem.field == "note", method

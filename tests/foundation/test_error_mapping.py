"""JSON nested deeper than Python's decoder follows is the sender's doing: a 400 from both mappers (the API's
exception handler and the pages' middleware), wherever the decoder ran. Any other RecursionError stays a 500."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import RequestFactory
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from foundation.error_mapping import MAX_JSON_DEPTH, ServiceErrorMiddleware, api_exception_handler, json_too_deep


def _raised(call) -> BaseException:
    try:
        call()
    except RecursionError as exc:
        return exc
    raise AssertionError("no RecursionError")


def _recurse(n: int) -> int:
    return _recurse(n + 1) + 1


DEEP = "[" * 100_000 + "]" * 100_000


def _drf_reading_deep_json() -> RecursionError:
    """DRF's JSONParser reading a body too deep for the stack (a view's `request.data`)."""
    request = Request(RequestFactory().post("/api/x/", DEEP, content_type="application/json"), parsers=[JSONParser()])
    return _raised(lambda: request.data)


@pytest.mark.parametrize("raised", [lambda: _raised(lambda: json.loads(DEEP)), _drf_reading_deep_json,
                                    lambda: _raised(lambda: json.loads(DEEP.encode()))])
def test_the_json_decoder_out_of_stack_is_a_400_from_both_mappers(raised, db):
    exc = raised()
    assert json_too_deep(exc)
    response = api_exception_handler(exc, {})
    assert response.status_code == 400
    assert response.data["code"] == "nested_too_deeply" and str(MAX_JSON_DEPTH) in response.data["detail"]
    request = RequestFactory().post("/admin/x/")
    request.user = AnonymousUser()
    page = ServiceErrorMiddleware(lambda r: None).process_exception(request, exc)
    assert page.status_code == 400 and 'data-code="nested_too_deeply"' in page.content.decode()


def test_any_other_recursion_error_stays_a_server_error():
    exc = _raised(lambda: _recurse(0))
    assert not json_too_deep(exc) and json_too_deep(_raised(lambda: json.loads(DEEP)))  # told apart
    assert api_exception_handler(exc, {}) is None
    assert ServiceErrorMiddleware(lambda r: None).process_exception(RequestFactory().get("/"), exc) is None
    assert not json_too_deep(ValueError("not a recursion"))

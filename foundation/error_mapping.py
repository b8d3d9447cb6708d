"""The two mappers of the error contract: refused service calls to form errors / pages, and to DRF responses.

`ServiceError` (see `foundation.errors`) and Django's `ValidationError` are both
accepted, so model `full_clean()` inside a service refuses the same way. JSON nested deeper than Python's JSON
decoder can follow (it raises RecursionError) is refused too (`NestedTooDeeply`, 400): wherever it is read, a DRF
parser, the admin's JSON fields or a view's own `json.loads`.
"""
from __future__ import annotations

import traceback

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext
from rest_framework import status as drf_status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from foundation.errors import Invalid, ServiceError

REFUSED = (ServiceError, ValidationError)
#: How deep JSON sent to the site may be nested: `foundation.request_text` refuses a body nested deeper before any
#: view. Python's decoder gives up (RecursionError) at a depth that depends on how much stack its caller has left,
#: some 900 levels; this one is the same for every reader, and far below that.
MAX_JSON_DEPTH = 200
_JSON_DECODER_MODULES = frozenset({"json.decoder", "json.scanner"})


class NestedTooDeeply(Invalid):
    code = "nested_too_deeply"


def nested_too_deeply() -> NestedTooDeeply:
    return NestedTooDeeply(gettext("The JSON sent is nested too deeply: at most %(n)s levels.") % {"n": MAX_JSON_DEPTH})


def json_too_deep(exc: BaseException) -> bool:
    """Whether `exc` is the RecursionError of Python's JSON decoder: input nested deeper than the stack allows (the
    sender's doing, a 400). Any other RecursionError is a fault of the code, and stays a 500."""
    return isinstance(exc, RecursionError) and any(
        frame.f_globals.get("__name__") in _JSON_DECODER_MODULES for frame, _ in traceback.walk_tb(exc.__traceback__))


def as_service_error(exc: Exception) -> ServiceError:
    """Django's ValidationError as an `Invalid` with its field errors; a ServiceError unchanged."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, ValidationError):
        if hasattr(exc, "error_dict"):
            errors = {("" if k == NON_FIELD_ERRORS else k): [str(m) for m in v]
                      for k, v in exc.message_dict.items()}
            field = next(iter(errors)) if len(errors) == 1 and "" not in errors else None
            return Invalid(errors=errors, field=field)
        return Invalid("; ".join(exc.messages))
    raise TypeError(f"not a refused service call: {exc!r}")


def error_text(exc: Exception) -> str:
    """One line for a page."""
    return as_service_error(exc).message


def add_form_errors(form, exc: Exception) -> None:
    """A refused call on a form: each message beside the field it names, the rest at the top."""
    error = as_service_error(exc)
    errors = getattr(error, "errors", None)
    if errors:
        for field, messages in errors.items():
            form.add_error(field if field in form.fields else None, messages)
        return
    form.add_error(error.field if error.field in form.fields else None, error.message)


def error_page(request, exc: Exception, *, template: str = "error.html") -> HttpResponse:
    """A refused call as a page (or an htmx fragment) with the error's status."""
    error = as_service_error(exc)
    context = {"error": error, "status": error.http_status, "back_url": _same_site_referer(request)}
    if getattr(request, "htmx", False):
        return render(request, "error.html#message", context, status=error.http_status)
    return render(request, template, context, status=error.http_status)


def _same_site_referer(request) -> str:
    """The page the user came from, when it is on this site (never an open redirect)."""
    from django.utils.http import url_has_allowed_host_and_scheme

    referer = request.META.get("HTTP_REFERER", "")
    if referer and url_has_allowed_host_and_scheme(referer, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
        return referer
    return ""


class ServiceErrorMiddleware:
    """A refused call that no view caught becomes an error page, never a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exc):
        if isinstance(exc, REFUSED):
            return error_page(request, exc)
        if json_too_deep(exc):
            return error_page(request, nested_too_deeply())
        return None


def api_exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: ServiceError / ValidationError -> JSON with their status; JSON too deep for the
    parser -> 400."""
    if json_too_deep(exc):
        exc = nested_too_deeply()
    if isinstance(exc, REFUSED):
        error = as_service_error(exc)
        return Response(error.as_dict(), status=error.http_status)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    return response


__all__ = ["MAX_JSON_DEPTH", "REFUSED", "NestedTooDeeply", "ServiceErrorMiddleware", "add_form_errors",
           "api_exception_handler", "as_service_error", "error_page", "error_text", "drf_status", "json_too_deep",
           "nested_too_deeply"]

"""The cached policy's middleware sets exactly the headers django-csp's own sets, in every case django-csp tells
apart: the settings' policy, a view's own policy (each of the six decorator attributes), a nonce, an exempt
response, a header already set, an excluded path, Django's debug pages, a report-only policy, and settings changed
after the header was first built."""
from __future__ import annotations

import inspect
import itertools
import re

import pytest
from csp import decorators as csp_decorators
from csp.constants import HEADER, HEADER_REPORT_ONLY, NONCE
from csp.exceptions import CSPNonceError
from csp.middleware import CSPMiddleware
from csp.utils import build_policy as csp_build_policy
from django.core.signals import setting_changed
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from foundation import content_security
from foundation.content_security import PER_RESPONSE_POLICY, ContentSecurityPolicyMiddleware

NONCE_VALUE = re.compile(r"'nonce-[^']+'")
REPORT_ONLY = {"EXCLUDE_URL_PREFIXES": ["/excluded"], "DIRECTIVES": {"default-src": ["'self'", "https://r.example"]}}


def _headers(middleware_class, *, path="/page/", status=200, attribute=None, nonce=False, exempt=None,
             preset=None):
    request = RequestFactory().get(path)
    middleware = middleware_class(lambda request: response)
    response = HttpResponse("x", status=status)
    if attribute:
        setattr(response, attribute, {"img-src": ["https://images.example"]})
    if exempt:
        setattr(response, exempt, True)
    if preset:
        response[preset] = "preset"
    middleware.process_request(request)
    if nonce:
        str(request.csp_nonce)
    middleware.process_response(request, response)
    request.csp_header = response.get(HEADER)
    # A nonce is random: the same header with another nonce is the same header (the nonce's own test checks it).
    return {name: NONCE_VALUE.sub("'nonce-N'", response[name]) if name in response else None
            for name in (HEADER, HEADER_REPORT_ONLY)}, request


CASES = [dict(), dict(nonce=True), dict(status=404), dict(status=500), dict(path="/excluded/page/"),
         *({"attribute": name} for name in PER_RESPONSE_POLICY),
         *({"exempt": name} for name in ("_csp_exempt", "_csp_exempt_ro")),
         *({"preset": name} for name in (HEADER, HEADER_REPORT_ONLY))]
SETTINGS = [dict(), dict(DEBUG=True), dict(CONTENT_SECURITY_POLICY_REPORT_ONLY=REPORT_ONLY),
            dict(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"script-src": ["'self'", NONCE]}}),
            dict(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"default-src": ["'none'"]}})]


@pytest.mark.parametrize("case,changed", list(itertools.product(CASES, SETTINGS)))
def test_the_headers_are_django_csps_own(case, changed):
    _headers(ContentSecurityPolicyMiddleware)  # the settings' header built before any change
    with override_settings(**changed):
        ours, request = _headers(ContentSecurityPolicyMiddleware, **case)
        theirs, _ = _headers(CSPMiddleware, **case)
    assert ours == theirs
    if not (changed.get("DEBUG") and case.get("status") in (404, 500)):
        assert ours[HEADER] or case.get("exempt") == "_csp_exempt"  # the cases do set a header
        if not case.get("nonce"):  # as django-csp: a nonce asked for after the header is written is refused
            with pytest.raises(CSPNonceError):
                str(request.csp_nonce)


def test_a_nonce_reaches_the_header():
    with override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"script-src": ["'self'", NONCE]}}):
        headers, request = _headers(ContentSecurityPolicyMiddleware, nonce=True)
        without, _ = _headers(ContentSecurityPolicyMiddleware)
    assert f"'nonce-{request.csp_nonce}'" in request.csp_header and "nonce" not in without[HEADER]


def test_the_header_is_built_again_after_a_settings_change():
    before, _ = _headers(ContentSecurityPolicyMiddleware)
    with override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"default-src": ["'none'"]}}):
        during, _ = _headers(ContentSecurityPolicyMiddleware)
    after, _ = _headers(ContentSecurityPolicyMiddleware)
    assert during[HEADER] == "default-src 'none'" and before == after != during


def test_a_settings_change_during_a_build_is_not_kept(monkeypatch):
    """A test's override in another thread, entered while the header is being built: the header built from the old
    settings is not kept for the new ones."""
    built = []

    def build_during_a_change(**kwargs):
        built.append(kwargs)
        if len(built) == 1:  # the settings change while the first header is being built
            setting_changed.send(sender=None, setting="CONTENT_SECURITY_POLICY", value=None, enter=True)
        return csp_build_policy(**kwargs)

    setting_changed.send(sender=None, setting="CONTENT_SECURITY_POLICY", value=None, enter=False)
    monkeypatch.setattr(content_security, "build_policy", build_during_a_change)
    content_security.settings_policies()
    assert len(built) == 2  # the enforced and the report-only policy
    content_security.settings_policies()
    assert len(built) == 4  # built again: the first was built across a change
    content_security.settings_policies()
    assert len(built) == 4  # and then kept


def _decorated_views():
    """Every view decorator django-csp has (found in csp.decorators), enforced and report-only, on a plain view."""
    for name, decorator in inspect.getmembers(csp_decorators, inspect.isfunction):
        if name.startswith("csp") and decorator.__module__ == csp_decorators.__name__:
            for report_only in (False, True):
                arguments = {} if name == "csp_exempt" else {"config": {"img-src": ["https://images.example"]}}
                yield f"{name}(REPORT_ONLY={report_only})", decorator(REPORT_ONLY=report_only, **arguments)(
                    lambda request: HttpResponse("x"))


@pytest.mark.parametrize("changed", SETTINGS)
def test_every_decorator_of_django_csp_gives_django_csps_headers(changed):
    """Each decorator's attributes are ones this middleware hands to django-csp (or an exemption), and the headers of
    its response are django-csp's own."""
    found = set()
    with override_settings(**changed):
        for name, view in _decorated_views():
            headers = []
            for middleware_class in (ContentSecurityPolicyMiddleware, CSPMiddleware):
                request = RequestFactory().get("/page/")
                middleware = middleware_class(view)
                middleware.process_request(request)
                response = middleware.process_response(request, view(request))
                found |= {attribute for attribute in vars(response) if attribute.startswith("_csp")}
                headers.append({header: response.get(header) for header in (HEADER, HEADER_REPORT_ONLY)})
            assert headers[0] == headers[1], name
    assert found - {"_csp_exempt", "_csp_exempt_ro"} <= set(PER_RESPONSE_POLICY) and len(found) >= 8, found

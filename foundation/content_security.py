"""django-csp's middleware with the settings' policy built once per process instead of for every response.

django-csp 4 builds the Content-Security-Policy header from the settings for each response (`build_policy` over the
settings' directives, a dataclass turned into a dict on the way): about 0.1 ms, a few per cent of a participant
page's whole CPU. The header only changes with the settings, so here it is built once, and built again when a test
changes a CSP setting. A response that can differ still goes through django-csp's own code: one whose view used
`csp_update`, `csp_replace` or `csp_override` (or their report-only variants), or whose request asked for a nonce.
tests/foundation/test_content_security.py compares this middleware's headers with django-csp's for each such case.
"""
from __future__ import annotations

from http import HTTPStatus

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

#: What a view's decorators set on its response when its policy is not the settings'.
PER_RESPONSE_POLICY = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro",
                       "_csp_replace_ro")
SETTINGS = ("CONTENT_SECURITY_POLICY", "CONTENT_SECURITY_POLICY_REPORT_ONLY")


#: Moved on when a CSP setting changes; the policies built are kept with the generation they were built in.
_generation = [0]
_built: list = [None]  # (generation, policies)


def settings_policies() -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """(header, value, exemption attribute, excluded path prefixes) of the enforced and the report-only policy, as
    django-csp builds them from the settings alone. Built once per settings generation: a change during a build
    (a test's override in another thread) leaves the result under the old generation, so it is built again."""
    generation = _generation[0]
    built = _built[0]
    if built is not None and built[0] == generation:
        return built[1]
    policies = []
    for header, setting, exempt, report_only in ((HEADER, SETTINGS[0], "_csp_exempt", False),
                                                 (HEADER_REPORT_ONLY, SETTINGS[1], "_csp_exempt_ro", True)):
        prefixes = tuple((getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ())
        policies.append((header, build_policy(report_only=report_only), exempt, prefixes))
    built = (generation, tuple(policies))
    _built[0] = built
    return built[1]


@receiver(setting_changed)
def _forget_policies(*, setting, **kwargs) -> None:
    if setting in SETTINGS:
        _generation[0] += 1


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(
                hasattr(response, name) for name in PER_RESPONSE_POLICY):
            return super().process_response(request, response)  # a nonce or a view's own policy: built for it
        if response.status_code in (HTTPStatus.INTERNAL_SERVER_ERROR, HTTPStatus.NOT_FOUND) and settings.DEBUG:
            return response  # Django's debug pages, as django-csp leaves them
        path = request.path_info
        for header, value, exempt, prefixes in settings_policies():
            if value and header not in response and getattr(response, exempt, False) is False \
                    and not path.startswith(prefixes):
                response[header] = value
        # As django-csp: a nonce asked for after the header was written is an error, not a silent gap in the policy.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response

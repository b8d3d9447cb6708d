"""Check an endpoint before a run starts, and refuse with a clear message (no Django inside).

``check_endpoint`` asks ``GET {base_url}/models`` (OpenAI, vLLM, llama.cpp, Ollama serve it) and
checks the model is among those served; where the server has no such route it sends one tiny
chat completion (``max_tokens`` 1) instead. A DNS failure, a timeout, 401/403, a 404 on the path
(with a hint about ``/v1``) and an unknown model are each named as such. A connection refused,
dropped or not made, and an address the destination policy refuses, are one and the same
message (``destinations.UNREACHABLE``): the check never tells an open port from a closed one. An API-key variable that is not set is a warning, and
an error for hosts that always need a key (api.openai.com and other hosted APIs).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from evaluation.model_calls.clients import _MODEL_MISSING, redact, transport_reason
from evaluation.model_calls.credentials import url_credentials
from evaluation.model_calls.destinations import UNREACHABLE, DestinationPolicy, DestinationRefused, check_url
from foundation.errors import ServiceError
from foundation.words import gettext

if TYPE_CHECKING:
    import httpx  # imported by the check itself: the launch pages import this module at URL loading

#: Hosted APIs that answer nothing without a key.
KEY_REQUIRED_HOSTS = ("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com", "api.groq.com",
                      "api.together.xyz", "api.mistral.ai", "openrouter.ai", "api.deepseek.com",
                      "api.fireworks.ai", "api.x.ai")
PREFLIGHT_TIMEOUT_S = 15.0


class PreflightRefused(ServiceError):
    """The endpoint cannot serve a run (``error_class`` names why: connection_refused, dns, http_401, ...)."""

    code = "endpoint_unusable"
    http_status = 400

    def __init__(self, message: str, *, error_class: str, field: str | None = None):
        super().__init__(message, field=field, details={"error_class": error_class})
        self.error_class = error_class


@dataclass
class Preflight:
    """What the check found: how it checked (``models`` or ``completion``), the models served, warnings."""

    checked: str = ""
    models: list[str] | None = None
    warnings: list[str] = field(default_factory=list)


def needs_key(base_url: str) -> bool:
    host = (urlparse(base_url).hostname or "").lower()
    return any(host == h or host.endswith("." + h) for h in KEY_REQUIRED_HOSTS)


def key_check(*, base_url: str, api_key_env: str, environ=None) -> tuple[str | None, list[str]]:
    """(the key or None, warnings); PreflightRefused when a host that needs a key has none."""
    environ = os.environ if environ is None else environ
    key = environ.get(api_key_env) if api_key_env else None
    host = urlparse(base_url).hostname or base_url
    if key:
        return key, []
    if needs_key(base_url):
        what = (gettext("the API-key variable %(name)s is not set", name=api_key_env) if api_key_env
                else gettext("no API-key variable is given"))
        raise PreflightRefused(gettext("%(host)s needs an API key and %(what)s (set it in the environment of the "
                                       "process and the workers, or give --api-key-env NAME)", host=host, what=what),
                               error_class="no_api_key")
    if api_key_env:
        return None, [gettext("the API-key variable %(name)s is not set: requests to %(host)s go without a key",
                              name=api_key_env, host=host)]
    return None, []


def _refusal_for_status(response: httpx.Response, url: str, base_url: str, model: str, secrets) -> PreflightRefused:
    status = response.status_code
    text = redact(response.text[:300], secrets)
    if status in (400, 404) and _MODEL_MISSING.search(text):
        return PreflightRefused(gettext("unknown model %(model)s at %(url)s (HTTP %(status)s): %(text)s",
                                        model=repr(model), url=base_url, status=status, text=text),
                                error_class="unknown_model")
    if status in (401, 403):
        return PreflightRefused(gettext("%(url)s refused the credentials (HTTP %(status)s): %(text)s - check the "
                                        "API-key variable", url=base_url, status=status, text=text),
                                error_class=f"http_{status}")
    if status == 404:
        hint = (gettext(" - the base URL probably lacks /v1 (e.g. http://host:port/v1)")
                if not base_url.rstrip("/").endswith("/v1") else gettext(" - check the base URL"))
        return PreflightRefused(gettext("HTTP 404 on %(url)s%(hint)s", url=url, hint=hint), error_class="http_404")
    return PreflightRefused(gettext("%(url)s answered HTTP %(status)s: %(text)s", url=url, status=status, text=text),
                            error_class=f"http_{status}" if status < 500 else "http_5xx")


class _Unauthenticated(Exception):
    """The endpoint answered 401/403 to a check made without the key that only the workers hold."""


#: Redirects the check follows (each one is another request, with a timeout of its own).
MAX_REDIRECTS = 3


#: A connection that could not be made or was dropped before an answer: one message for all of them and for an
#: address the policy refuses (destinations.UNREACHABLE), so that the check never tells an open port from a
#: closed one, nor a refused address from an unreachable one.
UNREACHABLE_CLASSES = frozenset({"connection_refused", "connection", "connect_timeout"})


def unreachable(base_url: str) -> PreflightRefused:
    return PreflightRefused(gettext("cannot reach %(url)s: %(reason)s", url=base_url, reason=gettext(UNREACHABLE)),
                            error_class="unreachable")


class _Refused(Exception):
    """A request (the first or a redirect) to an address the policy refuses."""


def check_endpoint(*, base_url: str, model: str, api_key_env: str = "", timeout_s: float = PREFLIGHT_TIMEOUT_S,
                   environ=None, key_elsewhere: bool = False, policy: DestinationPolicy | None = None) -> Preflight:
    """Refuse (PreflightRefused) unless the endpoint answers and serves ``model``; returns what it found.

    ``key_elsewhere``: the key may be set only where the requests will be sent from (the web server checks
    for the workers). Then a key missing here, and the 401/403 that follows without it, are warnings.
    ``policy``: where endpoints may point (every request of the check, redirects too); a refused address is
    answered as an unreachable one. A base URL with a credential in it is refused before any request."""
    if url_credentials(base_url):
        raise PreflightRefused(gettext("the base URL carries a credential (a user name, a password or a key): put "
                                       "the key in an environment variable and name it as the API key variable"),
                               error_class="credentials_in_url")
    import httpx

    key = None
    try:
        if key_elsewhere:
            environ = os.environ if environ is None else environ
            key = environ.get(api_key_env) if api_key_env else None
            warnings = [] if key or not api_key_env else [
                gettext("the API-key variable %(name)s is not set in this process: the check went without a key "
                        "(the workers need it, or requests go without one)", name=api_key_env)]
        else:
            key, warnings = key_check(base_url=base_url, api_key_env=api_key_env, environ=environ)
        result = Preflight(warnings=warnings)
        try:
            return _check(base_url=base_url, model=model, key=key, timeout_s=timeout_s, result=result,
                          unauthenticated_ok=key_elsewhere and not key, policy=policy)
        except _Unauthenticated:
            return result
    except PreflightRefused:
        raise
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:  # e.g. a host name IDNA refuses, a non-ASCII key
        raise PreflightRefused(gettext("cannot ask %(url)s: %(error)s", url=base_url,
                                       error=redact(f"{type(exc).__name__}: {exc}", (key,)))[:500],
                               error_class="invalid_url") from None


def _check(*, base_url: str, model: str, key: str | None, timeout_s: float, result: Preflight,
           unauthenticated_ok: bool, policy: DestinationPolicy | None = None) -> Preflight:
    import httpx

    base = base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    secrets = (key,)
    timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))

    def allowed(request: httpx.Request) -> None:
        if policy is not None:
            try:
                check_url(str(request.url), policy)
            except DestinationRefused:
                raise _Refused from None

    with httpx.Client(timeout=timeout, headers=headers, follow_redirects=True, max_redirects=MAX_REDIRECTS,
                      trust_env=False, event_hooks={"request": [allowed]}) as http:
        def send(method: str, url: str, **kwargs) -> httpx.Response:
            try:
                response = http.request(method, url, **kwargs)
            except _Refused:
                raise unreachable(base_url) from None
            except httpx.HTTPError as exc:
                error_class, reason = transport_reason(exc)
                if isinstance(exc, httpx.TooManyRedirects):
                    error_class, reason = "connection", gettext("more than %(n)s redirects", n=MAX_REDIRECTS)
                elif error_class in UNREACHABLE_CLASSES or (error_class == "dns" and policy is not None
                                                             and policy.restricted):
                    # restricted, a name that does not resolve reads as one that resolves to a refused address
                    raise unreachable(base_url) from None
                if error_class == "timeout":
                    reason = gettext("no answer within %(s)s s", s=f"{timeout_s:.0f}")
                raise PreflightRefused(gettext("cannot reach %(url)s: %(reason)s", url=base_url, reason=reason),
                                       error_class=error_class) from None
            if response.status_code in (401, 403) and unauthenticated_ok:
                result.checked = "unauthenticated"
                result.warnings.append(gettext("%(url)s answered HTTP %(status)s to a check without a key: it is "
                                               "reachable, the model and the key were not checked", url=base_url,
                                               status=response.status_code))
                raise _Unauthenticated
            return response

        models_url = f"{base}/models"
        response = send("GET", models_url)
        if response.status_code == 200:
            try:
                served = [str(m.get("id")) for m in response.json().get("data", []) if isinstance(m, dict)]
            except (ValueError, AttributeError):
                served = None
            if served:
                result.checked, result.models = "models", served
                if model not in served:
                    raise PreflightRefused(gettext("unknown model %(model)s: %(url)s serves %(served)s",
                                                   model=repr(model), url=base_url, served=", ".join(served[:20])),
                                           error_class="unknown_model")
                return result
        elif response.status_code in (401, 403):
            raise _refusal_for_status(response, models_url, base_url, model, secrets)
        # No usable /models: one tiny completion.
        chat_url = f"{base}/chat/completions"
        body = {"model": model, "messages": [{"role": "user", "content": "Reply with 1."}], "max_tokens": 1}
        response = send("POST", chat_url, content=json.dumps(body), headers={"Content-Type": "application/json"})
        if response.status_code != 200:
            raise _refusal_for_status(response, chat_url, base_url, model, secrets)
        try:
            response.json()["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise PreflightRefused(gettext("%(url)s answered 200 with no chat completion in it (is it an "
                                           "OpenAI-compatible API?)", url=chat_url), error_class="malformed") from None
        result.checked = "completion"
        return result

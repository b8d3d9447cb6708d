"""How one attempt of a model request failed (no Django inside): its class (connection refused, DNS, timeout,
HTTP status, unknown model, malformed answer), whether it is retried, and the server's Retry-After. Read off the
`openai` SDK's errors and their cause chains (evaluation.model_calls.clients sends the requests)."""
from __future__ import annotations

import email.utils
import errno
import json
import re
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

RETRYABLE_STATUS = {408, 409, 425, 429}


def _sdk_error(exc: BaseException, *names: str) -> bool:
    """Whether ``exc`` is one of the openai SDK's errors ``names`` (never, while the SDK is not imported: then
    nothing could have raised one)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(exc, tuple(getattr(openai, name) for name in names))


#: A request that timed out while the server may still be generating it (its tokens are spent, not counted).
ABANDONED = "timeout"


@dataclass(frozen=True)
class Failure:
    """How an attempt failed: its class (e.g. ``connection_refused``), whether to retry, Retry-After, a description."""
    error_class: str
    retry: bool
    retry_after: float | None
    description: str


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def transport_reason(exc: BaseException) -> tuple[str, str]:
    """(class, reason) of a transport failure from its cause chain: the SDK reports a refused connection
    as a connect *timeout* (its aiohttp transport maps every connector error so), the chain keeps the truth."""
    chain = list(_chain(exc))
    names, deepest = {type(e).__name__ for e in chain}, chain[-1]
    for e in chain:
        if isinstance(e, socket.gaierror) or type(e).__name__ == "ClientConnectorDNSError":
            return "dns", f"DNS failure, the host name does not resolve: {e}"[:300]
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return "connection_refused", f"connection refused: {e} (is the server running?)"[:300]
    if "ConnectTimeout" in names:  # below the SDK's and httpx2's wrappers: aiohttp's timeout (from a CancelledError)
        if any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in chain
               if not type(e).__module__.startswith(("openai", "httpx"))):
            return "connect_timeout", "connect timeout: the host did not accept the connection in time"
        return "connection", f"connection error: {_os_text(deepest)}"
    if names & {"ReadTimeout", "WriteTimeout", "PoolTimeout", "SocketTimeoutError", "ServerTimeoutError"} \
            or _sdk_error(exc, "APITimeoutError"):
        return ABANDONED, "timeout: no answer within the timeout (the server may still be generating it)"
    return "connection", f"connection error: {_os_text(deepest)}"


def _os_text(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)[:200]


_MODEL_MISSING = re.compile(r"model.{0,80}(not (be )?found|does not exist|not exist|unknown|not served|no such|"
                            r"not available|invalid model)|(unknown|invalid|unsupported) model|model_not_found", re.I | re.S)


def classify_failure(exc: BaseException, *, url: str = "") -> Failure:
    """How one attempt failed: named (connection refused, DNS, timeout, 401/403, 404 with a /v1 hint, unknown
    model, ...), retried or not, and the server's Retry-After."""
    if _sdk_error(exc, "APIStatusError"):
        status = exc.status_code
        message = str(exc.message)
        body = json.dumps(exc.body) if exc.body is not None else ""
        if status in (400, 404) and _MODEL_MISSING.search(message + " " + body):
            return Failure("unknown_model", False, None, f"unknown model (HTTP {status}): {message}"[:500])
        retry = status in RETRYABLE_STATUS or status >= 500
        if status in (401, 403):
            text = f"HTTP {status} ({'unauthorized' if status == 401 else 'forbidden'}): {message} (check the API key variable)"
        elif status == 404:
            hint = (" - the base URL probably lacks /v1 (e.g. http://host:port/v1)"
                    if url and not url.rstrip("/").endswith("/v1") else " - check the base URL")
            text = f"HTTP 404 on {url or 'the endpoint'}/chat/completions: {message}{hint}"
        else:
            text = f"HTTP {status}: {message}"
        error_class = f"http_{status}" if status < 500 else "http_5xx"
        return Failure(error_class, retry, retry_after_seconds(exc.response.headers) if retry else None, text[:500])
    if _sdk_error(exc, "APIConnectionError"):  # includes APITimeoutError
        error_class, reason = transport_reason(exc)
        return Failure(error_class, True, None, reason[:500])
    if isinstance(exc, (json.JSONDecodeError, MalformedResponse)) or _sdk_error(exc, "APIResponseValidationError"):
        return Failure("malformed", True, None, f"malformed response: {exc}"[:500])
    return Failure("other", False, None, f"{type(exc).__name__}: {exc}"[:500])


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    if (value := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


class MalformedResponse(ValueError):
    pass

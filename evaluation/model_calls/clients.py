"""Model clients (no Django inside): OpenAI-compatible endpoints and the built-in offline models.

:class:`OpenAIChatClient` sends one chat completion per call through the ``AsyncOpenAI`` SDK's aiohttp session
(``openai[aiohttp]``; the SDK's headers, authentication and error classes; its own retries off; straight to aiohttp
unless a proxy is mounted, then through the SDK's HTTP client) and retries here,
outside the concurrency slot, with
exponential backoff and full jitter on 429, 408/409/425, 5xx, timeouts, connection
errors and malformed responses, honouring ``Retry-After``; attempts and total time
are capped. The slot is held only while a request is on the wire.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import random
import re
import ssl
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.model_calls.builtin_models import builtin_reply, count_tokens
from evaluation.model_calls.direct_http import DirectSender
from evaluation.model_calls.failures import (  # noqa: F401 - also read from here (preflight, tests)
    _MODEL_MISSING,
    ABANDONED,
    RETRYABLE_STATUS,
    Failure,
    MalformedResponse,
    _sdk_error,
    classify_failure,
    retry_after_seconds,
    transport_reason,
)
from evaluation.model_calls.keepalive_http import KeepAliveSender
from evaluation.model_calls.limiter import Limiter, LocalLimiter
from evaluation.prompting.methods import Completion
from foundation import fast_json
from foundation.storable import storable_text


def import_sdk():
    """The openai SDK and httpx2 (the SDK's own HTTP layer), imported on first use rather than with this module:
    they cost about a second (up to 4 s on a loaded machine), which URL loading and every management command
    would otherwise pay. Celery workers call this at start (evaluation.tasks): no run pays it on its clock."""
    import httpcore2  # noqa: F401
    import httpx2
    import openai

    _ssl_context()  # and the TLS context (~30 ms of loading the CA bundle), once
    return openai, httpx2


#: Error classes that say the endpoint itself is unusable (not this one request): they feed the circuit breaker.
ENDPOINT_ERRORS = frozenset({"connection_refused", "dns", "connection", "connect_timeout", "http_401", "http_403",
                             "http_404", "unknown_model"})


class RequestFailed(Exception):
    """A call that failed for good (non-retryable, or attempts / time budget spent)."""

    def __init__(self, message: str, *, attempts: int, error_class: str = "", failed_attempts: tuple = ()):
        super().__init__(message)
        self.attempts = attempts
        self.error_class = error_class
        self.failed_attempts = failed_attempts


class EndpointDown(RequestFailed):
    """The circuit breaker is open: the endpoint kept failing, the run stops (``str()`` is the reason)."""


class CircuitBreaker:
    """Opens after ``threshold`` consecutive endpoint-level failures (connection refused, DNS, 401/403/404,
    unknown model), or after ``window_s`` seconds of nothing but such failures (at least ``min_failures``);
    any answer closes the streak. Shared by every request of a chunk (one event loop)."""

    def __init__(self, *, threshold: int = 20, window_s: float = 30.0, min_failures: int = 5):
        self.threshold, self.window_s, self.min_failures = threshold, window_s, min_failures
        self.consecutive = 0
        self.first_failure_at: float | None = None
        self.reason = ""
        self._opened: asyncio.Event | None = None

    @property
    def open(self) -> bool:
        return bool(self.reason)

    def event(self) -> asyncio.Event:
        if self._opened is None:
            self._opened = asyncio.Event()
            if self.reason:
                self._opened.set()
        return self._opened

    def success(self) -> None:
        self.consecutive, self.first_failure_at = 0, None

    def failure(self, error_class: str, description: str) -> None:
        if error_class not in ENDPOINT_ERRORS:
            return  # a slow or overloaded server answers eventually: the retries handle it
        now = time.monotonic()
        self.consecutive += 1
        if self.first_failure_at is None:
            self.first_failure_at = now
        span = now - self.first_failure_at
        if not self.reason and (self.consecutive >= self.threshold
                                or (self.consecutive >= self.min_failures and span >= self.window_s)):
            self.reason = (f"the endpoint kept failing: {self.consecutive} consecutive failed requests in "
                           f"{span:.0f} s, the last one {description}")
            self.event().set()


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    total_s: float = 600.0
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Wait before attempt ``attempt + 1``: Retry-After when given, else full-jitter backoff."""
        if retry_after is not None:
            return retry_after + random.uniform(0, min(1.0, 0.1 * retry_after + 0.01))
        return random.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))


REDACTED = "[redacted]"
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)[^\s\"',;]+")


def redact(text: str, secrets: Sequence[str | None] = ()) -> str:
    """``text`` without the given secrets' values nor any ``Bearer <token>`` (servers echo credentials in errors)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _BEARER.sub(rf"\1\2{REDACTED}", text)


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """One default TLS context per process (loading the CA bundle costs ~30 ms per client)."""
    return ssl.create_default_context()


def read_completion(body: bytes) -> tuple[str, int, int, str]:
    """(text, prompt tokens, completion tokens, finish reason) of a chat-completion JSON body; MalformedResponse
    if it is not one."""
    data = fast_json.loads(body)
    try:
        choice = data["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise MalformedResponse("no choices[0].message in the response") from None
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    # Kept for the record as they came, except what PostgreSQL cannot keep (a NUL, a lone surrogate: U+FFFD), and
    # counts outside what a row holds (a malformed or absurd count is 0, a huge one the largest a row holds).
    return (storable_text(str(text)), token_count(usage.get("prompt_tokens")),
            token_count(usage.get("completion_tokens")), storable_text(str(choice.get("finish_reason") or "")))


#: The largest token count a row keeps (PostgreSQL's integer; a run's sums are capped to it too).
MAX_TOKENS = 2**31 - 1


def token_count(value: Any) -> int:
    """A usage count as a row keeps it: a whole number in [0, MAX_TOKENS]; anything else (text, a negative or
    fractional number, NaN, a bool) is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not value.is_integer():
        return 0
    return min(int(value), MAX_TOKENS) if value >= 0 else 0


class ModelClient:
    async def complete(self, messages: Sequence[dict], *, sample_key: str) -> Completion:
        raise NotImplementedError

    async def close(self) -> None:
        return None


class BuiltinClient(ModelClient):
    def __init__(self, *, name: str, seed: int):
        self.name, self.seed = name, seed

    async def complete(self, messages, *, sample_key):
        text = builtin_reply(self.name, messages, seed=self.seed, sample_key=sample_key)
        tokens_in = sum(count_tokens(m.get("content", "")) for m in messages)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=count_tokens(text), latency_s=0.0,
                          finish_reason="stop")


class OpenAIChatClient(ModelClient):
    def __init__(self, *, base_url: str, model: str, api_key: str | None, params: dict[str, Any],
                 timeout_s: float, limiter: Limiter | None = None, retry: RetryPolicy = RetryPolicy(),
                 max_connections: int = 64, breaker: CircuitBreaker | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._secrets = (api_key,)
        self.params = {k: v for k, v in params.items() if v is not None}
        self.limiter = limiter or LocalLimiter(limit=max_connections)
        self.retry = retry
        self.breaker = breaker
        # The SDK's aiohttp transport (DefaultAioHttpClient): half the CPU per request of its default httpx2 one,
        # and one pool of any size (httpcore's scans every connection per request: ~15 ms with 64 connections).
        openai, httpx2 = import_sdk()
        timeout = httpx2.Timeout(timeout_s, connect=min(10.0, timeout_s))
        pool = httpx2.Limits(max_connections=max_connections + 2, max_keepalive_connections=max_connections + 2)
        self._http = openai.DefaultAioHttpClient(limits=pool, timeout=timeout, verify=_ssl_context())
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=0,
                                          timeout=timeout, http_client=self._http)
        # The request's URL and headers, built once by the SDK's rules (its base URL, default and auth headers);
        # each request is then sent by the SDK's HTTP client without the SDK's per-request pipeline (options model,
        # URL and header merging, idempotency key: ~0.5 ms of CPU, half the client's, per request).
        base = self._client.base_url
        self._url = base.copy_with(raw_path=base.raw_path + b"chat/completions")
        self._headers = httpx2.Headers({**{k: v for k, v in self._client.default_headers.items() if isinstance(v, str)},
                                        **self._client.auth_headers, "X-Stainless-Retry-Count": "0",
                                        "X-Stainless-Read-Timeout": str(timeout.read)})
        # Straight to the SDK's aiohttp session where its client would send there (evaluation.model_calls.direct_http),
        # and there over our own kept-alive connections (evaluation.model_calls.keepalive_http; redirects: aiohttp).
        direct = DirectSender.for_client(self._http, self._url, self._headers, timeout)
        self._direct = KeepAliveSender.for_client(direct, self._url, self._headers, timeout, _ssl_context()) or direct
        # The transport errors the SDK wraps, as it does (openai._httpx2.timeout_exceptions / request_exceptions).
        self._httpx = httpx2
        self._timeouts, self._transport_errors = (httpx2.TimeoutException,), (httpx2.RequestError, ssl.SSLError,
                                                                              sys.modules["anyio"].EndOfStream)

    def _request(self, messages) -> bytes:
        """The JSON body, encoded here once (the SDK would deep-copy the messages twice and encode them slower)."""
        params = dict(self.params)
        extra_body = params.pop("extra_body", None) or {}
        body = {**extra_body, "model": self.model, "messages": list(messages), **params}
        return fast_json.dumps(body)

    def read(self, body: bytes, *, latency_s: float, attempts: int) -> Completion:
        """The Completion of a response body (a subclass may read more of it, e.g. the log-probabilities);
        MalformedResponse when it is not a chat completion (retried like a bad response)."""
        text, tokens_in, tokens_out, finish_reason = read_completion(body)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out, latency_s=latency_s,
                          attempts=attempts, finish_reason=finish_reason)

    def _down(self, attempt: int, failed: list[dict]) -> EndpointDown:
        return EndpointDown(self.breaker.reason, attempts=attempt, error_class="endpoint_down",
                            failed_attempts=tuple(failed))

    async def _post(self, content: bytes) -> bytes:
        """The body of a 2xx answer, else the SDK's errors as ``chat.completions.create`` raises them (its
        APIStatusError for the status, with the server's message and body; APITimeoutError; APIConnectionError).
        Straight through the SDK's aiohttp session where its client would send there, else through the client."""
        response = None
        try:
            if self._direct is not None:
                status, raw_headers, body = await self._direct.post(content)
            else:
                response = await self._http.post(self._url, content=content, headers=self._headers)
                status, body = response.status_code, response.content
        except self._timeouts as exc:
            raise sys.modules["openai"].APITimeoutError(request=self._http.build_request("POST", self._url)) from exc
        except self._transport_errors as exc:
            raise sys.modules["openai"].APIConnectionError(request=self._http.build_request("POST", self._url)) from exc
        if not 200 <= status < 300:  # the SDK's error for the status, from the response as httpx2 holds it
            if response is None:
                response = self._httpx.Response(status, headers=raw_headers, content=body,
                                                request=self._http.build_request("POST", self._url))
            raise self._client._make_status_error_from_response(response)
        return body

    async def _wait(self, seconds: float) -> None:
        """Sleep before a retry; woken at once when the circuit breaker opens meanwhile."""
        if self.breaker is None:
            await asyncio.sleep(seconds)
            return
        try:
            await asyncio.wait_for(self.breaker.event().wait(), seconds)
        except TimeoutError:
            pass

    async def complete(self, messages, *, sample_key):
        started = time.monotonic()
        content = self._request(messages)
        attempt = 0
        failed: list[dict] = []  # every failed attempt: its class, description and the wait after it
        breaker = self.breaker
        while True:
            attempt += 1
            if breaker is not None and breaker.open:
                raise self._down(attempt - 1, failed)
            error = None
            # Errors of the limiter itself (its Redis unreachable) are not the model's: they propagate as they are.
            async with self.limiter.slot():
                sent = time.monotonic()
                try:
                    body = await self._post(content)
                    latency = time.monotonic() - sent
                    completion = self.read(body, latency_s=latency, attempts=attempt)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - classified below; non-retryable ones end the call
                    error = exc
            if error is None:
                if breaker is not None:
                    breaker.success()
                if failed:
                    completion = dataclasses.replace(completion, failed_attempts=tuple(failed))
                return completion
            failure = classify_failure(error, url=self.base_url)
            # The server's text as PostgreSQL can keep it (it reaches the row, the trace and the run's reason).
            description = storable_text(redact(failure.description, self._secrets))
            del error
            entry = {"attempt": attempt, "error_class": failure.error_class, "error": description[:300],
                     "after_s": round(time.monotonic() - started, 3)}
            failed.append(entry)
            if breaker is not None:
                breaker.failure(failure.error_class, description)
                if breaker.open:
                    raise self._down(attempt, failed)
            if not failure.retry or attempt >= self.retry.max_attempts:
                # from None: the SDK's exception carries the server's unredacted text
                raise RequestFailed(f"{description} (attempt {attempt})", attempts=attempt,
                                    error_class=failure.error_class, failed_attempts=tuple(failed)) from None
            wait = self.retry.delay(attempt, failure.retry_after)
            if time.monotonic() - started + wait > self.retry.total_s:
                raise RequestFailed(f"{description} (gave up after {attempt} attempts: time budget spent)",
                                    attempts=attempt, error_class=failure.error_class,
                                    failed_attempts=tuple(failed)) from None
            entry["wait_s"] = round(wait, 3)
            await self._wait(wait)

    async def close(self) -> None:
        if isinstance(self._direct, KeepAliveSender):
            await self._direct.close()
        await self._client.close()
        await self.limiter.close()

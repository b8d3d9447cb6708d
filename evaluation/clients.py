"""Model clients (no Django inside): OpenAI-compatible endpoints and the built-in offline models.

:class:`OpenAIChatClient` sends one chat completion per call with ``AsyncOpenAI`` on the
SDK's aiohttp transport (``openai[aiohttp]``; the SDK's own retries off) and retries here,
outside the concurrency slot, with
exponential backoff and full jitter on 429, 408/409/425, 5xx, timeouts, connection
errors and malformed responses, honouring ``Retry-After``; attempts and total time
are capped. The slot is held only while a request is on the wire.
"""
from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import random
import re
import ssl
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

# httpx2 (and its httpcore2) is the openai SDK's own HTTP layer, a dependency of openai itself: its Timeout and
# Limits configure the SDK's transport. httpcore2 is imported here, at worker start, rather than by the first
# client of a run (~60 ms later, on the run's clock).
import httpcore2  # noqa: F401
import httpx2
import openai

from .baselines import builtin_reply, count_tokens
from .limiter import Limiter, LocalLimiter
from .methods import Completion

RETRYABLE_STATUS = {408, 409, 425, 429}


class RequestFailed(Exception):
    """A call that failed for good (non-retryable, or attempts / time budget spent)."""

    def __init__(self, message: str, *, attempts: int):
        super().__init__(message)
        self.attempts = attempts


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


def classify(exc: BaseException) -> tuple[bool, float | None, str]:
    """(retry?, Retry-After seconds, short description) for an exception raised by a call."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry = status in RETRYABLE_STATUS or status >= 500
        return retry, retry_after_seconds(exc.response.headers) if retry else None, f"HTTP {status}: {exc.message}"[:500]
    if isinstance(exc, openai.APITimeoutError):
        return True, None, "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return True, None, f"connection error: {exc.__cause__ or exc}"[:500]
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError, MalformedResponse)):
        return True, None, f"malformed response: {exc}"[:500]
    return False, None, f"{type(exc).__name__}: {exc}"[:500]


class MalformedResponse(ValueError):
    pass


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


def read_completion(body: bytes) -> tuple[str, int, int]:
    """(text, prompt tokens, completion tokens) of a chat-completion JSON body; MalformedResponse if it is not one."""
    data = json.loads(body)
    try:
        choice = data["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise MalformedResponse("no choices[0].message in the response") from None
    usage = data.get("usage") or {}
    return str(text), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


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
        return Completion(text=text, tokens_in=tokens_in, tokens_out=count_tokens(text), latency_s=0.0)


class OpenAIChatClient(ModelClient):
    def __init__(self, *, base_url: str, model: str, api_key: str | None, params: dict[str, Any],
                 timeout_s: float, limiter: Limiter | None = None, retry: RetryPolicy = RetryPolicy(),
                 max_connections: int = 64):
        self.model = model
        self._secrets = (api_key,)
        self.params = {k: v for k, v in params.items() if v is not None}
        self.limiter = limiter or LocalLimiter(limit=max_connections)
        self.retry = retry
        # The SDK's aiohttp transport (DefaultAioHttpClient): about half the client CPU per request of
        # its default httpx2 transport, and one connection pool of any size (httpcore's pool scans every
        # connection for every request, which made a pool of 64 cost ~15 ms of CPU per request).
        timeout = httpx2.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout,
            http_client=openai.DefaultAioHttpClient(
                limits=httpx2.Limits(max_connections=max_connections + 2, max_keepalive_connections=max_connections + 2),
                timeout=timeout, verify=_ssl_context(),
            ),
        )

    def _request(self, messages) -> bytes:
        """The JSON body, encoded here once (given to the SDK as ``content``: it would otherwise deep-copy
        the messages twice and encode them with its own, slower, encoder)."""
        params = dict(self.params)
        extra_body = params.pop("extra_body", None) or {}
        body = {**extra_body, "model": self.model, "messages": list(messages), **params}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    def read(self, body: bytes, *, latency_s: float, attempts: int) -> Completion:
        """The Completion of a response body (a subclass may read more of it, e.g. the log-probabilities);
        MalformedResponse when it is not a chat completion (retried like a bad response)."""
        text, tokens_in, tokens_out = read_completion(body)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out, latency_s=latency_s,
                          attempts=attempts)

    async def complete(self, messages, *, sample_key):
        started = time.monotonic()
        content = self._request(messages)
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self.limiter.slot():
                    sent = time.monotonic()
                    # The SDK's low-level post: same client, headers and errors as chat.completions.create,
                    # without re-walking the typed parameters nor building pydantic models; the raw body
                    # is read by read_completion.
                    body = await self._client.post("/chat/completions", content=content, cast_to=bytes)
                    latency = time.monotonic() - sent
                return self.read(body, latency_s=latency, attempts=attempt)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; non-retryable ones end the call
                retry, retry_after, description = classify(exc)
                description = redact(description, self._secrets)
                if not retry or attempt >= self.retry.max_attempts:
                    # from None: the SDK's exception carries the server's unredacted text
                    raise RequestFailed(f"{description} (attempt {attempt})", attempts=attempt) from None
                wait = self.retry.delay(attempt, retry_after)
                if time.monotonic() - started + wait > self.retry.total_s:
                    raise RequestFailed(f"{description} (gave up after {attempt} attempts: time budget spent)",
                                        attempts=attempt) from None
                await asyncio.sleep(wait)

    async def close(self) -> None:
        await self._client.close()
        await self.limiter.close()

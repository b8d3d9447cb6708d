"""The model client against real servers on 127.0.0.1 (the stand-in model server, bare sockets): retries of 429
and 500, Retry-After, timeouts and the time budget; failures named as such: a refused connection (not "timeout"),
a DNS failure, a connect timeout, 401, a 404 on a path without /v1, an unknown model; timed-out attempts are
recorded with their waits, never silently replaced; the circuit breaker opens on a dead endpoint; the API key
never reaches an error text; a request carries the SDK's headers, the key and the body."""
import asyncio
import json
import socket
import time

import httpx
import pytest

from evaluation.model_calls.clients import (
    CircuitBreaker,
    EndpointDown,
    OpenAIChatClient,
    RequestFailed,
    RetryPolicy,
    redact,
    retry_after_seconds,
)
from tests.evaluation.stand_in import StandIn
from tests.support.model_server import ModelServer

MESSAGES = [{"role": "user", "content": "### Options:\n1. a\n2. b"}]


def free_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base_url, *, model="stand-in", attempts=1, timeout_s=5.0, api_key=None, breaker=None, params=None):
    client = OpenAIChatClient(base_url=base_url, model=model, api_key=api_key, params=params or {}, timeout_s=timeout_s,
                              retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.01, max_delay_s=0.02),
                              breaker=breaker)

    async def go():
        try:
            return await client.complete(MESSAGES, sample_key="0:main")
        except RequestFailed as exc:
            return exc
        finally:
            await client.close()

    return asyncio.run(go())


def test_a_refused_connection_is_named_and_keeps_the_transports_reason():
    port = free_port()
    result = call(f"http://127.0.0.1:{port}/v1", attempts=2)
    assert isinstance(result, RequestFailed)
    assert result.error_class == "connection_refused" and result.attempts == 2
    assert str(result).startswith("connection refused") and f"127.0.0.1:{port}" in str(result)
    assert "timeout" not in str(result).lower()  # the SDK calls it a connect timeout; the cause chain says otherwise
    assert [a["error_class"] for a in result.failed_attempts] == ["connection_refused"] * 2
    assert "wait_s" in result.failed_attempts[0] and "wait_s" not in result.failed_attempts[1]


def test_a_dns_failure_is_named():
    result = call("http://no-such-host.invalid/v1")
    assert isinstance(result, RequestFailed) and result.error_class == "dns"
    assert "DNS failure" in str(result)


def test_401_and_a_404_path_without_v1_and_an_unknown_model_are_named_and_not_retried():
    with StandIn(key="sk-right") as server:
        unauthorized = call(server.base_url, attempts=3, api_key="sk-wrong")
        root = server.base_url[: -len("/v1")]
        missing_path = call(root, attempts=3, api_key="sk-right")
        unknown = call(server.base_url, attempts=3, api_key="sk-right", model="gpt-9")
    assert unauthorized.error_class == "http_401" and unauthorized.attempts == 1
    assert "HTTP 401" in str(unauthorized) and "API key" in str(unauthorized) and "sk-wrong" not in str(unauthorized)
    assert missing_path.error_class == "http_404" and missing_path.attempts == 1
    assert "lacks /v1" in str(missing_path)
    assert unknown.error_class == "unknown_model" and unknown.attempts == 1 and "gpt-9" in str(unknown)


def test_a_timed_out_attempt_is_recorded_with_its_wait_and_the_answer_is_the_retrys():
    with StandIn(slow_first=1, slow_s=2.0) as server:
        completion = call(server.base_url, attempts=3, timeout_s=0.4)
    assert completion.text and completion.attempts == 2
    assert completion.finish_reason == "stop"
    (failed,) = completion.failed_attempts
    assert failed["error_class"] == "timeout" and failed["attempt"] == 1 and failed["wait_s"] >= 0
    assert "server may still be generating" in failed["error"]
    assert len(server.bodies) == 2


def test_finish_reason_length_when_cut_at_max_tokens():
    with StandIn(reply="### Answer:\n1 because the clue says so and more words follow") as server:
        cut = call(server.base_url, params={"max_tokens": 3})
        whole = call(server.base_url, params={"max_tokens": 100})
    assert cut.finish_reason == "length" and cut.tokens_out == 3
    assert whole.finish_reason == "stop"


def test_the_circuit_breaker_opens_after_consecutive_endpoint_failures_and_stops_retries_at_once():
    breaker = CircuitBreaker(threshold=3, window_s=60)
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    client = OpenAIChatClient(base_url=url, model="m", api_key=None, params={}, timeout_s=2,
                              retry=RetryPolicy(max_attempts=10, base_delay_s=5, max_delay_s=5), breaker=breaker)

    async def go():
        results = await asyncio.gather(*(client.complete(MESSAGES, sample_key=str(i)) for i in range(3)),
                                       return_exceptions=True)
        await client.close()
        return results

    results = asyncio.run(go())
    assert all(isinstance(r, EndpointDown) for r in results), results
    assert breaker.open and "3 consecutive" in breaker.reason and "connection refused" in breaker.reason
    assert time.monotonic() - started < 4  # the waiting retries were woken when it opened, not after their 5 s waits


def test_the_breaker_ignores_slow_answers_and_an_answer_closes_the_streak():
    breaker = CircuitBreaker(threshold=2, window_s=60)
    breaker.failure("timeout", "slow")
    breaker.failure("http_5xx", "overloaded")
    breaker.failure("connection_refused", "down")
    breaker.success()
    breaker.failure("connection_refused", "down")
    assert not breaker.open
    breaker.failure("dns", "no such host")
    assert breaker.open


@pytest.mark.parametrize("window_s, opens", [(0.0, True), (60.0, False)])
def test_the_breaker_also_opens_after_a_window_of_nothing_but_failures(window_s, opens):
    breaker = CircuitBreaker(threshold=100, window_s=window_s, min_failures=2)
    breaker.failure("connection_refused", "down")
    breaker.failure("connection_refused", "down")
    assert breaker.open is opens


def client(server, *, attempts=6, total_s=60.0, timeout_s=5.0, limiter=None):
    return OpenAIChatClient(base_url=server.base_url, model="stand-in", api_key="sk-test", params={"temperature": 0},
                            timeout_s=timeout_s, limiter=limiter, retry=RetryPolicy(max_attempts=attempts, total_s=total_s,
                                                                                   base_delay_s=0.01, max_delay_s=0.05))


async def complete_many(c, n):
    try:
        return await asyncio.gather(*(c.complete(MESSAGES, sample_key=str(i)) for i in range(n)), return_exceptions=True)
    finally:
        await c.close()


def test_retries_429_and_500_until_success():
    with ModelServer(rate_429=0.2, rate_500=0.05, rate_malformed=0.05, retry_after_s=0.01, seed=3) as server:
        results = asyncio.run(complete_many(client(server, attempts=12), 80))
    assert all(not isinstance(r, Exception) for r in results)
    assert sum(r.attempts for r in results) == server.stats.requests
    assert server.stats.by_status.get("429", 0) > 5 and server.stats.by_status.get("500", 0) > 0
    assert server.stats.answered_ok == 80
    assert results[0].tokens_in > 0 and "### Answer" in results[0].text


def test_retry_after_is_honoured_and_attempts_are_capped():
    with ModelServer(rate_429=1.0, retry_after_s=0.3) as server:
        started = time.monotonic()
        (result,) = asyncio.run(complete_many(client(server, attempts=3), 1))
        elapsed = time.monotonic() - started
    assert isinstance(result, RequestFailed) and result.attempts == 3
    assert "429" in str(result)
    assert elapsed >= 0.6  # two waits of Retry-After 0.3 s
    assert server.stats.requests == 3


def test_total_time_budget_caps_retries():
    with ModelServer(rate_429=1.0, retry_after_s=5) as server:
        started = time.monotonic()
        (result,) = asyncio.run(complete_many(client(server, attempts=10, total_s=1.0), 1))
    assert isinstance(result, RequestFailed) and "time budget" in str(result)
    assert time.monotonic() - started < 2


def test_timeouts_are_retried_then_recorded():
    with ModelServer(rate_timeout=1.0, timeout_sleep_s=3) as server:
        (result,) = asyncio.run(complete_many(client(server, attempts=2, timeout_s=0.3), 1))
    assert isinstance(result, RequestFailed) and "timeout" in str(result) and result.attempts == 2


def test_client_errors_are_not_retried():
    with ModelServer() as server:
        bad = OpenAIChatClient(base_url=server.base_url.replace("/v1", "/nowhere"), model="m", api_key=None,
                               params={}, timeout_s=2)
        (result,) = asyncio.run(complete_many(bad, 1))
    assert isinstance(result, RequestFailed) and "404" in str(result) and result.attempts == 1


def test_retry_after_header_forms():
    assert retry_after_seconds(httpx.Headers({"retry-after": "2"})) == 2
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(httpx.Headers({})) is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < retry_after_seconds(httpx.Headers({"retry-after": future})) <= 31


@pytest.mark.parametrize("status, attempts", [(401, 1), (500, 2)])
def test_server_error_text_is_stored_without_the_api_key(status, attempts):
    """A server that echoes the Authorization header in its error body: the key never reaches the error text."""
    secret = "sk-live-0123456789abcdef"
    with ModelServer(echo_auth_status=status) as server:
        c = OpenAIChatClient(base_url=server.base_url, model="stand-in", api_key=secret, params={}, timeout_s=5,
                             retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.01, max_delay_s=0.02))
        (result,) = asyncio.run(complete_many(c, 1))
    assert isinstance(result, RequestFailed) and result.attempts == attempts
    text = str(result)
    assert f"HTTP {status}" in text and "invalid credentials" in text  # the rest of the message is kept
    assert secret not in text and "0123456789abcdef" not in text
    assert "Bearer [redacted]" in text
    assert result.__cause__ is None  # the SDK's exception (unredacted) is not chained


def test_redact_removes_the_key_and_any_bearer_token():
    assert redact("bad key sk-abc123456 given", ["sk-abc123456"]) == "bad key [redacted] given"
    assert redact('{"auth": "Bearer eyJhbGciOi.x-y_z"}') == '{"auth": "Bearer [redacted]"}'
    assert redact("authorization: bearer tok123, retry") == "authorization: bearer [redacted], retry"
    assert redact("no secrets here", [None, ""]) == "no secrets here"


def test_a_connect_timeout_is_named_as_such_not_a_cancelled_connection():
    """A host that never accepts the connection (its listen queue full): aiohttp's connect timeout, raised from
    a CancelledError and wrapped by the SDK as a ConnectTimeout, is named a connect timeout (it was "connection
    error: CancelledError")."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        waiting = []
        for _ in range(3):  # fill the listen queue: the next SYNs are dropped, the client's connect hangs
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            waiting.append(s)
        try:
            c = OpenAIChatClient(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=None, params={},
                                 timeout_s=0.5, retry=RetryPolicy(max_attempts=1))
            started = time.monotonic()
            (result,) = asyncio.run(complete_many(c, 1))
        finally:
            for s in waiting:
                s.close()
    assert isinstance(result, RequestFailed) and result.error_class == "connect_timeout", result
    assert "connect timeout" in str(result) and "CancelledError" not in str(result)
    assert time.monotonic() - started < 5


class HeaderRecorder(ModelServer):
    """The stand-in, keeping the headers and body of each chat request."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.requests: list[tuple[dict, dict]] = []

    async def _route(self, method, path, body, headers=None):
        if path == "/v1/chat/completions":
            self.requests.append((dict(headers or {}), json.loads(body)))
        return await super()._route(method, path, body, headers)


def test_a_request_carries_the_sdks_headers_key_and_body():
    """Sent by the SDK's HTTP client with the headers the SDK builds: its key, JSON, its user agent."""
    with HeaderRecorder() as server:
        c = OpenAIChatClient(base_url=server.base_url, model="stand-in", api_key="sk-test-123456",
                             params={"temperature": 0, "max_tokens": 50, "extra_body": {"top_k": 5}}, timeout_s=7.5)
        (result,) = asyncio.run(complete_many(c, 1))
    assert result.text and result.tokens_in > 0 and result.finish_reason == "stop"
    ((headers, body),) = server.requests
    assert headers["authorization"] == "Bearer sk-test-123456"
    assert headers["content-type"] == "application/json" and headers["accept"] == "application/json"
    assert headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert headers["x-stainless-read-timeout"] == "7.5" and headers["x-stainless-retry-count"] == "0"
    assert body == {"top_k": 5, "model": "stand-in", "messages": MESSAGES, "temperature": 0, "max_tokens": 50}


def test_the_direct_aiohttp_way_sends_what_the_sdks_http_client_sends_and_reads_the_same_failures():
    """A plain URL goes straight to the SDK's aiohttp session (the fast way); with a proxy mounted, through the SDK's
    HTTP client. Both send the same headers and body, and meet 429/500 and a 404 the same way."""
    seen = {}
    for direct in (True, False):
        with HeaderRecorder(rate_429=0.2, rate_500=0.05, retry_after_s=0.01, seed=5) as server:
            c = OpenAIChatClient(base_url=server.base_url, model="stand-in", api_key="sk-test-123456",
                                 params={"temperature": 0}, timeout_s=7.5,
                                 retry=RetryPolicy(max_attempts=20, base_delay_s=0.001, max_delay_s=0.01, total_s=30))
            assert c._direct is not None  # a plain URL, no proxy: the direct way is taken
            if not direct:
                c._direct = None
            results = asyncio.run(complete_many(c, 30))
            missing = OpenAIChatClient(base_url=server.base_url.removesuffix("/v1") + "/nowhere", model="stand-in",
                                       api_key=None, params={}, timeout_s=5)
            if not direct:
                missing._direct = None
            (not_found,) = asyncio.run(complete_many(missing, 1))
        assert all(not isinstance(r, BaseException) and r.text for r in results), [r for r in results if isinstance(r, BaseException)]
        assert any(r.failed_attempts for r in results)  # the 429s and 500s were met and retried
        assert isinstance(not_found, RequestFailed) and not_found.error_class == "http_404"
        headers, body = server.requests[0]
        seen[direct] = ({k: v for k, v in headers.items() if k not in {"accept-encoding", "content-length", "host", "connection"}},  # HTTP/1.1 keeps it alive
                        body, sorted({e["error_class"] for r in results for e in r.failed_attempts}))
    assert seen[True] == seen[False]

"""Failures are named as such, against real servers on 127.0.0.1: a refused connection (not "timeout"), a DNS
failure, 401, a 404 on a path without /v1, an unknown model; timed-out attempts are recorded with their
waits, never silently replaced; the circuit breaker opens on a dead endpoint."""
import asyncio
import socket
import time

import pytest

from evaluation.model_calls.clients import CircuitBreaker, EndpointDown, OpenAIChatClient, RequestFailed, RetryPolicy
from tests.evaluation.stand_in import StandIn

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

"""Retries, Retry-After, timeouts and the shared limiters, against the real stand-in server and real Redis."""
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
import redis
from django.conf import settings

from evaluation.model_calls.clients import OpenAIChatClient, RequestFailed, RetryPolicy, redact, retry_after_seconds
from evaluation.model_calls.limiter import FileLimiter, RedisLimiter
from tests.support.model_server import ModelServer

MESSAGES = [{"role": "user", "content": "### Options:\n1. a\n2. b"}]


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


async def _hold(limiter, gauge, hold_s):
    async with limiter.slot():
        gauge["now"] += 1
        gauge["peak"] = max(gauge["peak"], gauge["now"])
        await asyncio.sleep(hold_s)
        gauge["now"] -= 1


def test_redis_limiter_is_shared_between_limiter_instances():
    key = f"test-{os.getpid()}-{time.time_ns()}"

    async def go():
        # Two instances = two worker processes: each allows 3 locally, together still 3.
        a = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=3)
        b = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=3)
        gauge = {"now": 0, "peak": 0}
        await asyncio.gather(*(_hold(a if i % 2 else b, gauge, 0.03) for i in range(24)))
        await a.close(), await b.close()  # gives back the slots kept for reuse
        with redis.Redis.from_url(settings.REDIS_URL) as store:
            assert store.zcard(a.slots_key) == 0
        return gauge["peak"]

    assert asyncio.run(go()) == 3


def test_redis_limiter_lease_of_a_dead_worker_expires():
    key = f"test-expire-{time.time_ns()}"

    async def go():
        dead = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.5)
        await dead._acquire()  # taken and never released ...
        dead._renewer.cancel()  # ... nor renewed: the worker "died"
        alive = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.5)
        started = time.monotonic()
        async with alive.slot():
            waited = time.monotonic() - started
        await dead.close(), await alive.close()
        return waited

    assert 0.3 < asyncio.run(go()) < 2.0


def test_redis_limiter_requests_per_minute():
    key = f"test-rpm-{time.time_ns()}"

    async def go():
        limiter = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=10, requests_per_minute=5)
        for _ in range(5):
            async with limiter.slot():
                pass
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(limiter._acquire(), 0.5)
        await limiter.close()

    asyncio.run(go())


def test_file_limiter_for_the_embedded_mode(tmp_path):
    async def go():
        a = FileLimiter(directory=tmp_path, limit=2)
        b = FileLimiter(directory=tmp_path, limit=2)
        gauge = {"now": 0, "peak": 0}
        await asyncio.gather(*(_hold(a if i % 2 else b, gauge, 0.02) for i in range(12)))
        await a.close(), await b.close()  # gives back the slots kept for reuse
        return gauge["peak"]

    assert asyncio.run(go()) == 2
    # A process killed while holding every slot gives them back at once (the kernel drops flock locks).
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fds = [os.open('{tmp_path}/slot-%d.lock' % i, os.O_RDWR | os.O_CREAT) for i in range(2)]\n"
        "[fcntl.flock(fd, fcntl.LOCK_EX) for fd in fds]\nprint('held', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
    except BaseException:
        holder.kill()
        raise
    assert FileLimiter(directory=tmp_path, limit=2)._try_lock() is None
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert FileLimiter(directory=tmp_path, limit=2)._try_lock() is not None


def test_redis_lease_is_renewed_while_a_long_request_holds_it():
    key = f"test-renew-{time.time_ns()}"

    async def go():
        holder = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.3)
        other = RedisLimiter(redis_url=settings.REDIS_URL, key=key, limit=1, lease_s=0.3)
        async with holder.slot():
            with pytest.raises(asyncio.TimeoutError):  # 1 s > 3 leases: renewal keeps the slot taken
                await asyncio.wait_for(other._acquire(), 1.0)
        async with other.slot():
            pass
        await holder.close(), await other.close()

    asyncio.run(go())


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

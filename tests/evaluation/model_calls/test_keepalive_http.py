"""The kept-alive sender (evaluation.model_calls.keepalive_http) against real servers on 127.0.0.1: the stand-in
model server, and a raw TCP server that answers with scripted bytes, split into pieces as a network splits them.
It sends what the aiohttp path sends, reads every framing an HTTP/1.1 server may use (hypothesis), keeps its
connections alive, and fails as the aiohttp path fails: the same httpx2 errors with the cause below them."""
from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import subprocess
import threading
import zlib

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.model_calls.clients import OpenAIChatClient
from evaluation.model_calls.direct_http import DirectSender
from evaluation.model_calls.failures import ABANDONED, classify_failure
from evaluation.model_calls.keepalive_http import KeepAliveSender
from tests.support.model_server import ModelServer

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Who? 1. A 2. B"}]}).encode()


class RawServer:
    """A TCP server on 127.0.0.1 in a thread of its own: `script(request_number, head)` gives, for each request
    read, the pieces to write (bytes; a float is a pause in seconds) and whether to close afterwards."""

    def __init__(self, script, ssl_context=None):
        self.script, self.ssl_context = script, ssl_context
        self.heads: list[bytes] = []
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0,
                                                                            ssl=ssl_context))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}/v1/chat/completions"

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                await reader.readexactly(length)
                number = len(self.heads)
                self.heads.append(head)
                pieces, close = self.script(number, head)
                for piece in pieces:
                    if isinstance(piece, float):
                        await asyncio.sleep(piece)
                    else:
                        writer.write(piece)
                        await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def close(self):
        async def shut():
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def _sender(url: str, *, read_timeout: float = 5.0, ssl_context=None, fallback=None) -> KeepAliveSender:
    return KeepAliveSender(url, [("Content-Type", "application/json"), ("Authorization", "Bearer k")],
                           connect_timeout=5.0, read_timeout=read_timeout, ssl_context=ssl_context, errors=httpx2,
                           fallback=fallback)


def _answer(body: bytes, *, framing: str = "length", chunks: tuple[int, ...] = (), extra: bytes = b"") -> bytes:
    if framing == "length":
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra + \
            f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    if framing == "chunked":
        out, at = [], 0
        for size in (*chunks, len(body)):
            part = body[at:at + max(1, size)]
            if part:
                out.append(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            at += len(part)
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + extra + b"\r\n" + b"".join(out) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\nConnection: close\r\n" + extra + b"\r\n" + body  # until the close


def _split(data: bytes, cuts: list[int]) -> list:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for point in (*points, len(data)):
        if point > last:
            pieces += [data[last:point], 0.0]
            last = point
    return pieces


def test_the_request_on_the_wire_is_the_aiohttp_paths(tmp_path):
    """Same method, path and headers as the SDK's aiohttp path, byte for byte but for Connection."""
    server = RawServer(lambda n, head: ([_answer(b'{"choices":[]}')], False))
    try:
        client = OpenAIChatClient(base_url=server.url.rsplit("/chat/completions", 1)[0], model="m", api_key="sk-1",
                                  params={}, timeout_s=5)
        assert isinstance(client._direct, KeepAliveSender) and isinstance(client._direct.fallback, DirectSender)

        async def both():
            await client._direct.post(BODY)
            await client._direct.fallback.post(BODY)
            await client.close()

        asyncio.run(both())
        ours, aiohttp_head = ([line for line in head.split(b"\r\n") if line] for head in server.heads)
        assert ours[0] == aiohttp_head[0] == b"POST /v1/chat/completions HTTP/1.1"

        def headers(lines):
            return {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])}

        mine, theirs = headers(ours), headers(aiohttp_head)
        assert mine.pop(b"connection") == b"keep-alive" and theirs.pop(b"connection", b"keep-alive") == b"keep-alive"
        assert mine == theirs and mine[b"authorization"] == b"Bearer sk-1"
    finally:
        server.close()


def test_connections_are_kept_alive_against_the_stand_in():
    with ModelServer(latency_s=0.01) as model:
        sender = _sender(model.base_url + "/chat/completions")

        async def many():
            results = await asyncio.gather(*(sender.post(BODY) for _ in range(16)))  # 16 connections, then reused
            for _ in range(5):
                results += await asyncio.gather(*(sender.post(BODY) for _ in range(16)))
            await sender.close()
            return results

        results = asyncio.run(many())
    assert len(results) == 96 and all(status == 200 for status, _, _ in results)
    assert all(json.loads(body)["choices"][0]["message"]["content"] for _, _, body in results)
    assert model.stats.connections == 16 and model.stats.requests == 96


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(min_size=0, max_size=3000), framing=st.sampled_from(["length", "chunked", "close"]),
       chunks=st.lists(st.integers(1, 700), max_size=6), cuts=st.lists(st.integers(0, 5000), max_size=8),
       encoding=st.sampled_from(["", "gzip", "deflate", "raw-deflate"]), interim=st.booleans())
def test_every_framing_split_anywhere_gives_the_exact_body(body, framing, chunks, cuts, encoding, interim):
    encoded = {"": body, "gzip": gzip.compress(body), "deflate": zlib.compress(body),
               "raw-deflate": zlib.compress(body)[2:-4]}[encoding]
    extra = f"Content-Encoding: {encoding.replace('raw-', '')}\r\n".encode() if encoding else b""
    wire = (b"HTTP/1.1 100 Continue\r\n\r\n" if interim else b"") + \
        _answer(encoded, framing=framing, chunks=tuple(chunks), extra=extra)
    server = RawServer(lambda n, head: (_split(wire, cuts), framing == "close"))
    try:
        sender = _sender(server.url)

        async def twice():
            got = [await sender.post(BODY), await sender.post(BODY)]
            await sender.close()
            return got

        got = asyncio.run(twice())
    finally:
        server.close()
    assert [(status, answer) for status, _, answer in got] == [(200, body), (200, body)]
    assert server.connections == (2 if framing == "close" else 1)  # kept alive unless the framing is the close


def test_a_connection_the_server_dropped_while_idle_is_replaced_without_an_error():
    dropped = RawServer(lambda n, head: ([_answer(b"{}")], True))  # closes after each answer, with no word of it
    try:
        sender = _sender(dropped.url)

        async def run():
            got = []
            for _ in range(5):
                got.append(await sender.post(BODY))
                await asyncio.sleep(0.01 if len(got) % 2 else 0)  # the close has arrived, or may not have
            await sender.close()
            return got

        assert [status for status, _, _ in asyncio.run(run())] == [200] * 5
    finally:
        dropped.close()
    # The race: the server closes a kept connection just as the next request goes out on it (its idle timeout),
    # without a byte of answer. The request is sent once more on a new connection, once.
    racing = RawServer(lambda n, head: ([_answer(b"{}")], False) if n % 2 == 0 else ([], True))
    try:
        sender = _sender(racing.url)

        async def run_racing():
            got = [await sender.post(BODY) for _ in range(3)]
            await sender.close()
            return got

        assert [status for status, _, _ in asyncio.run(run_racing())] == [200] * 3
        assert len(racing.heads) == 5 and racing.connections == 3
    finally:
        racing.close()


@pytest.mark.parametrize("case", ["no answer at all", "half an answer", "not HTTP", "read timeout"])
def test_failures_are_httpx2s_errors_that_the_failure_classes_name(case):
    half = _answer(b'{"choices": []}')[:-5]
    script = {"no answer at all": lambda n, h: ([], True), "half an answer": lambda n, h: ([half], True),
              "not HTTP": lambda n, h: ([b"SSH-2.0-OpenSSH\r\n\r\n"], True),
              "read timeout": lambda n, h: ([2.0, _answer(b"{}")], False)}[case]
    server = RawServer(script)
    try:
        sender = _sender(server.url, read_timeout=0.5)

        async def run():
            try:
                return await sender.post(BODY)
            finally:
                assert not sender._idle  # a failed exchange never goes back to the pool
                await sender.close()

        with pytest.raises(httpx2.RequestError) as raised:
            asyncio.run(run())
    finally:
        server.close()
    expected = {"no answer at all": httpx2.RemoteProtocolError, "half an answer": httpx2.ReadError,
                "not HTTP": httpx2.RemoteProtocolError, "read timeout": httpx2.ReadTimeout}[case]
    assert type(raised.value) is expected
    import openai

    wrapped = (openai.APITimeoutError if case == "read timeout" else openai.APIConnectionError)(
        request=httpx2.Request("POST", server.url))
    wrapped.__cause__ = raised.value
    failure = classify_failure(wrapped)
    assert failure.retry and failure.error_class == (ABANDONED if case == "read timeout" else "connection")


def test_refused_and_unresolvable_hosts_keep_their_cause():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for url, cause in [(f"http://127.0.0.1:{port}/v1/chat/completions", ConnectionRefusedError),
                       ("http://no-such-host.invalid/v1/chat/completions", socket.gaierror)]:
        with pytest.raises(httpx2.ConnectError) as raised:
            asyncio.run(_sender(url).post(BODY))
        assert isinstance(raised.value.__cause__, cause) and url.split("/")[2].split(":")[0] in str(raised.value)


def test_a_cancelled_request_leaves_no_connection_behind():
    server = RawServer(lambda n, head: ([0.3 if n == 0 else 0.0, _answer(b'{"n": %d}' % n)], False))
    try:
        sender = _sender(server.url)

        async def run():
            task = asyncio.ensure_future(sender.post(BODY))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not sender._idle
            status, _, body = await sender.post(BODY)
            await sender.close()
            return status, body

        assert asyncio.run(run()) == (200, b'{"n": 1}')
        assert server.connections == 2
    finally:
        server.close()


def test_a_redirect_is_followed_by_the_aiohttp_path():
    with ModelServer(latency_s=0.0) as model:
        target = model.base_url + "/chat/completions"
        server = RawServer(lambda n, head: ([f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\n"
                                             f"Content-Length: 0\r\n\r\n".encode()], False))
        try:
            client = OpenAIChatClient(base_url=server.url.rsplit("/chat/completions", 1)[0], model="m",
                                      api_key=None, params={}, timeout_s=5)

            async def run():
                got = await client._direct.post(BODY)
                await client.close()
                return got

            status, _, body = asyncio.run(run())
        finally:
            server.close()
    assert status == 200 and json.loads(body)["choices"] and model.stats.requests == 1


def test_headers_that_would_split_the_request_leave_it_to_aiohttp():
    with pytest.raises(ValueError):
        _sender("http://127.0.0.1:1/v1").__class__(
            "http://127.0.0.1:1/v1", [("Authorization", "Bearer k\r\nX-Injected: 1")], connect_timeout=1,
            read_timeout=1, ssl_context=None, errors=httpx2)
    client = OpenAIChatClient(base_url="http://127.0.0.1:1/v1", model="m", api_key="k\r\nX-Injected: 1", params={},
                              timeout_s=5)
    assert not isinstance(client._direct, KeepAliveSender)
    asyncio.run(client.close())


def test_https_with_the_given_tls_context(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    server = RawServer(lambda n, head: ([_answer(b'{"tls": true}')], False), ssl_context=served)
    try:
        trusting = ssl.create_default_context(cafile=str(cert))

        async def run(context):
            sender = _sender(server.url, ssl_context=context)
            try:
                return [await sender.post(BODY), await sender.post(BODY)]
            finally:
                await sender.close()

        assert [(s, b) for s, _, b in asyncio.run(run(trusting))] == [(200, b'{"tls": true}')] * 2
        assert server.connections == 1
        with pytest.raises(httpx2.ConnectError) as raised:  # a certificate nobody vouches for: refused
            asyncio.run(run(ssl.create_default_context()))
        assert isinstance(raised.value.__cause__, ssl.SSLCertVerificationError)
    finally:
        server.close()

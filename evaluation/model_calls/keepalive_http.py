"""A chat completion POSTed over kept-alive HTTP/1.1 connections of our own, parsed by httptools (no Django inside).

At 256 requests in flight a run is bound by the client's CPU, and aiohttp's request machinery (a ClientRequest and
ClientResponse, header multidicts, timers, tracing, cookie jar and the connector's bookkeeping, built for every
request) was about 130 us of the ~340 us the event loop spends per request. A run sends one fixed POST to one URL:
the request's head is encoded once, and each request is one write of it with the body, then httptools (the C
parser uvicorn uses) reads the answer: about 35 us (`tests/perf/test_evaluation_scale.py`; the sender's own tests
are tests/evaluation/model_calls/test_keepalive_http.py).

Same behaviour as the aiohttp path where a run can see it: the SDK's URL, headers and timeouts (connect; read, from
the request's send to its last byte), TLS with the SDK's context, gzip/deflate answers decoded, httpx2's errors
with the cause (a refused connection, a DNS failure, a timeout) below them for evaluation.model_calls.failures.
A connection the server closed while idle is noticed before reuse when its close has arrived, else the request is
sent once more on a new connection when that one closed without a byte of answer. A redirect is followed by the
aiohttp path (`fallback`). Where the SDK's client would not send straight (a proxy), `for_client` says None.
"""
from __future__ import annotations

import asyncio
import ssl
import zlib
from typing import Any
from urllib.parse import urlsplit

try:
    import httptools
except ImportError:  # pragma: no cover - a dependency; without it the aiohttp path serves
    httptools = None

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_FORBIDDEN_IN_HEADERS = ("\r", "\n", "\0")


class _Connection(asyncio.Protocol):
    """One kept-alive connection: at most one request at a time; `waiter` gets (status, headers, body, keep)."""

    def __init__(self, errors):
        self.errors = errors
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.received = False  # a byte of the current answer arrived
        self.headers_done = False  # the current answer's head is read
        self.closed = False
        self.timer: asyncio.TimerHandle | None = None

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(self.errors.RemoteProtocolError(f"malformed HTTP answer: {exc}"), exc)

    def eof_received(self) -> None:
        self.closed = True  # never taken again; connection_lost follows (the transport closes itself)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.headers_done and self._until_close():  # a body delimited by the close: complete now
            self.on_message_complete(keep=False)
            return
        error = self.errors.ReadError if self.received else self.errors.RemoteProtocolError
        self._fail(error("the server closed the connection before the whole answer" if self.received else
                         "the server closed the connection without answering"), exc)

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self, keep: bool | None = None) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue, 103 Early Hints): the real one follows
            self.headers, self.body, self.headers_done = [], [], False
            return
        waiter, headers, body = self.waiter, self.headers, b"".join(self.body)
        keep = self.parser.should_keep_alive() if keep is None else keep
        self.waiter, self.headers, self.body, self.headers_done = None, [], [], False
        if waiter is not None and not waiter.done():
            waiter.set_result((status, headers, body, keep))

    # ours
    def _until_close(self) -> bool:
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _fail(self, error: Exception, cause: BaseException | None) -> None:
        error.__cause__ = cause
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        self.abort()

    def timed_out(self, seconds: float) -> None:
        self._fail(self.errors.ReadTimeout(f"no whole answer within {seconds:g} s"), TimeoutError())

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class KeepAliveSender:
    """`post(content)` -> (status, raw headers, body), as `DirectSender.post`; httpx2's errors when no answer came."""

    def __init__(self, url: str, headers: list[tuple[str, str]], *, connect_timeout: float | None,
                 read_timeout: float | None, ssl_context, errors, max_idle: int = 512, fallback=None):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            raise ValueError(f"not an http(s) URL without credentials: {url}")
        if any(c in text for pair in headers for text in pair for c in _FORBIDDEN_IN_HEADERS):
            raise ValueError("a header name or value holds a line break or NUL")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl_context if parts.scheme == "https" else None
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.errors, self.max_idle, self.fallback = errors, max_idle, fallback
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"POST {path} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
        skip = {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
        lines += [f"{name}: {value}" for name, value in headers if name.lower() not in skip]
        lines += ["Accept-Encoding: gzip, deflate", "Connection: keep-alive", "Content-Length: "]
        self._head = "\r\n".join(lines).encode("latin-1")
        self._idle: list[_Connection] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_client(cls, direct, url, headers, timeout, ssl_context) -> KeepAliveSender | None:
        """For the SDK client's request, where it would send straight through aiohttp (`direct`, a DirectSender:
        not None), else None; `direct` then follows redirects."""
        if direct is None or httptools is None:
            return None
        import httpx2

        try:
            return cls(str(url), [(k, v) for k, v in headers.multi_items()], connect_timeout=timeout.connect,
                       read_timeout=timeout.read, ssl_context=ssl_context, errors=httpx2, fallback=direct)
        except (ValueError, UnicodeEncodeError):
            return None

    async def post(self, content: bytes) -> tuple[int, Any, bytes]:
        request = b"".join((self._head, str(len(content)).encode(), b"\r\n\r\n", content))
        conn = self._take_idle()
        if conn is not None:
            try:
                answer = await self._exchange(conn, request)
            except self.errors.RemoteProtocolError:  # closed while idle, before a byte of answer: once more, anew
                if conn.received:
                    raise
                answer = await self._exchange(await self._connect(), request)
        else:
            answer = await self._exchange(await self._connect(), request)
        status, headers, body = answer
        if status in _REDIRECTS and self.fallback is not None:
            return await self.fallback.post(content)
        return status, headers, body

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.abort()

    def _take_idle(self) -> _Connection | None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connections belong to the loop that made them
            self._idle, self._loop = [], loop
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        errors = self.errors
        try:
            _, conn = await asyncio.wait_for(loop.create_connection(
                lambda: _Connection(errors), self.host, self.port, ssl=self.ssl,
                server_hostname=self.host if self.ssl is not None else None), self.connect_timeout)
        except TimeoutError as exc:
            raise errors.ConnectTimeout(f"no connection to {self.host}:{self.port} within "
                                        f"{self.connect_timeout:g} s") from exc
        except OSError as exc:
            named = self._named(exc)
            raise errors.ConnectError(str(named)) from named
        return conn

    def _named(self, exc: OSError) -> OSError:
        """The error with the host and port in its words (a refused connection, a DNS failure), of the same type
        (evaluation.model_calls.failures names the failure by it) and caused by the original."""
        if exc.errno is None or isinstance(exc, ssl.SSLError):
            return exc
        try:
            named = type(exc)(exc.errno, f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}")
        except TypeError:  # pragma: no cover - an OSError subclass with its own signature
            return exc
        named.__cause__ = exc
        return named

    async def _exchange(self, conn: _Connection, request: bytes) -> tuple[int, Any, bytes]:
        loop = asyncio.get_running_loop()
        conn.received = False
        conn.waiter = waiter = loop.create_future()
        timer = loop.call_later(self.read_timeout, conn.timed_out, self.read_timeout) if self.read_timeout else None
        try:
            conn.transport.write(request)
            status, headers, body, keep = await waiter
        except BaseException:  # a cancelled or failed exchange leaves the connection in an unknown state
            conn.abort()
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if keep and not conn.closed and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            conn.abort()
        for name, value in headers:
            if name.lower() == b"content-encoding" and value.strip().lower() in (b"gzip", b"deflate", b"x-gzip"):
                body = self._decoded(body, value)
        return status, headers, body

    def _decoded(self, body: bytes, encoding: bytes) -> bytes:
        """A gzip or deflate (zlib-wrapped or raw) body, decoded; httpx2's DecodingError when it is not one."""
        for wbits in (47, -15):  # 32 + 15: a gzip or a zlib header, whichever it is; then raw deflate
            try:
                return zlib.decompress(body, wbits)
            except zlib.error as exc:
                error = exc
        raise self.errors.DecodingError(f"the answer's {encoding.decode('latin-1')} body: {error}") from error


__all__ = ["KeepAliveSender"]

"""A chat completion sent straight through the `openai` SDK's aiohttp session (no Django inside).

The SDK's HTTP client (httpx2 on its aiohttp transport) wraps every aiohttp request in httpx2's request, header and
response objects, built, merged, copied and converted again: most of a request's client CPU, for a fixed POST
that needs none of its auth, redirect or cookie handling. `DirectSender` sends it on the same aiohttp session with
the same headers, timeouts and redirects, and maps aiohttp's errors with the SDK transport's own map, so the
caller meets the same httpx2 errors as through the client. Only where the SDK's client would use that transport
for the URL (no proxy mounted); `for_client` says None otherwise and the caller sends through the client.
"""
from __future__ import annotations

from typing import Any


class DirectSender:
    def __init__(self, transport, url: str, headers, map_errors, timeout):
        self.transport, self.url, self.headers, self.map_errors, self.timeout = (transport, url, headers, map_errors,
                                                                                  timeout)

    @classmethod
    def for_client(cls, http, url, headers, timeout) -> DirectSender | None:
        """For the SDK's HTTP client `http` (its httpx2 `url`, `headers` and `timeout`), or None when the client
        would not send to `url` through its aiohttp transport (a proxy mounted, another transport)."""
        transport = http._transport_for_url(url)
        if type(transport).__name__ != "AiohttpTransport" or transport.proxy is not None:
            return None
        from aiohttp import ClientTimeout
        from multidict import CIMultiDict
        from openai._vendor.httpx_aiohttp.transport import map_aiohttp_exceptions

        direct_headers = CIMultiDict(headers.multi_items())
        direct_headers["Accept-Encoding"] = "gzip, deflate"  # what aiohttp decodes here whatever else is installed
        return cls(transport, str(url), direct_headers, map_aiohttp_exceptions,
                   ClientTimeout(sock_connect=timeout.connect, sock_read=timeout.read, connect=timeout.pool))

    async def post(self, content: bytes) -> tuple[int, Any, bytes]:
        """(status, raw headers, body) of the answer; httpx2's errors (the transport's map) when none came."""
        transport = self.transport
        if transport.client is None or not hasattr(transport.client, "request"):
            transport.client = transport.get_client()  # the session the transport would open: one per client
        with self.map_errors():
            async with transport.client.request("POST", self.url, data=content, headers=self.headers,
                                                timeout=self.timeout, allow_redirects=True, compress=False) as response:
                return response.status, response.raw_headers, await response.read()
